// Package portico holds the domain types shared by Portico's pieces: the rows
// of a chain family's method table, what a params rule learns from a call,
// the limits clients are held to (Limits, which the config file decodes
// into and the gateway runs with), and the gateway's own errors and their
// codes. Subpackages implement the pieces (API key identities live in
// apikey); cmd/portico wires them together.
package portico

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// Family names a chain family, such as "evm". Each family has one method
// table, is served on hosts of its own, and is registered with its
// embedded devnet in package families.
type Family string

// Method is one row of a family's method table: everything the gateway needs
// to know about a method lives here, so adding a method is adding a row.
type Method struct {
	// Name is the method's name on real nodes; it is what is sent upstream.
	Name string
	// Aliases are other names clients may use, such as the seed's neutral
	// stand-ins (evm_getProof for eth_getProof).
	Aliases []string
	// Params checks the params of a call, scanning them once, and returns
	// what later steps need: the params to send upstream (which may
	// differ where the gateway applies its own rule, a default the seed
	// fixes, say) and whether the answer may be cached. Errors are
	// *ParamsError. A nil Params forwards any array or object, or no
	// params, unchanged, and its answers are never cached.
	Params func(params jsontext.Value) (Params, error)
	// Cost is the method's default credit cost.
	Cost int
	// Write marks a method that changes state (sends a transaction): it
	// is never hedged, never answered from cache, and sent to another
	// node only when the first surely did not get it.
	Write bool
	// FromHeads, when not nil, answers the call from the network's
	// tracked heads (eth_blockNumber, getSlot), so that the head a client
	// is told and the block its next call is pinned to agree and never go
	// back. ok false leaves the call to a node.
	FromHeads func(p Params, h Heads) (result jsontext.Value, ok bool)
	// Contracts says where the params name the contracts a call reads or
	// runs, for a key's contract-address allowlist; left zero, the
	// table's Contracts entry for the method's name says it.
	Contracts Contracts
	// Data says what the call reads at its block, for routing to nodes
	// that keep it.
	Data Data
}

// Params is what a method's params rule learned from a call's params.
type Params struct {
	// Send is the params to send upstream.
	Send jsontext.Value
	// Cache says whether a non-null answer may be served from cache.
	Cache Cacheability
	// Block is the block the call is about.
	Block Block
	// Pin, when not nil, returns the params with the block tag replaced by
	// block number n, so that a call about "latest" is sent as a call
	// about the block the gateway resolved the tag to.
	Pin func(n uint64) jsontext.Value
	// ResultBlock reads the block an answer is about, for FinalResult.
	ResultBlock func(result jsontext.Value) (uint64, bool)
	// Logs, when not nil, describes a log query (eth_getLogs,
	// starknet_getEvents), which the network bounds and may split.
	Logs *LogQuery
	// Filter, when not nil, is a call about a log filter the gateway keeps
	// itself rather than a node (eth_newFilter and the calls naming its
	// id).
	Filter *LogFilter
	// TxHash, for a call that sends a signed transaction, is that
	// transaction's hash as the family computes it from its bytes: the
	// send is broadcast to the network's nodes, and a node that answers
	// another hash is at fault.
	TxHash string
	// Wait, when not nil, is a call that sends a signed transaction
	// (TxHash) and answers once it landed.
	Wait *TxWait
	// TxHashOn, when TxHash is empty and this is not nil, computes the
	// hash on the network's chain (chain is its identity, as
	// Chain.Identity reads it): a family whose hashes commit to the
	// chain (the rollup's).
	TxHashOn func(chain string) (string, bool)
	// TxAnswer, when not nil, reads the hash a node's answer to the send
	// names (the rollup's {"transaction_hash": …}); nil reads the answer
	// as the hash, a JSON string. TxResult is then the answer of a send
	// whose nodes all already had the transaction.
	TxAnswer func(res jsontext.Value) string
	TxResult func(hash string) jsontext.Value
}

// Cacheability says whether and for how long an answer may be served from
// cache. Only a family's params rule decides it, from what the call
// addresses; the gateway applies it against the tracked heads. A null
// answer (a transaction or block that may still appear) is never cached,
// and neither is anything about pending state.
type Cacheability uint8

// How answers may be cached.
const (
	// NotCacheable answers are always asked of a node.
	NotCacheable Cacheability = iota
	// Immutable answers can never change for these params: the call names
	// its block by hash, or asks for finalized data only.
	Immutable
	// ByBlock answers are about Params.Block, a number (a tag is pinned to
	// one first): final once the block is at or below the finalized head;
	// until then true until a reorg replaces the block.
	ByBlock
	// PerHead answers are about the chain's current state (a gas price, a
	// balance at a commitment): true for the current head only, dropped
	// when a new head arrives.
	PerHead
	// FinalResult answers name their own block (a receipt, a transaction
	// by hash): cached once that block, read by Params.ResultBlock, is
	// final.
	FinalResult
)

// Table is a family's method table.
type Table struct {
	// Family is the family the table serves.
	Family Family
	// Methods are the methods with their own rules; the seed's methods have
	// full params validation.
	Methods []Method
	// DefaultCost is the credit cost of allowlisted methods with neither a
	// row of their own nor an entry in Costs.
	DefaultCost int
	// Costs are the credit costs of methods without a row of their own
	// (or whose row leaves Cost at 0): those of DefaultAllow, Optional and
	// Known, and names a network's config lists.
	Costs map[string]int
	// DefaultAllow is the default allowlist: methods with no row of their
	// own that are forwarded as they came. A network's config may replace
	// it (methods) or add to it (enable).
	DefaultAllow []string
	// Optional are groups of methods that are off by default because they
	// are expensive or reveal the node's internals (the EVM's debug, trace
	// and txpool namespaces); a network turns a group on by its name
	// (config enable). Methods in no group and not in DefaultAllow pass
	// only where a network's config names them.
	Optional map[string][]string
	// Known are rules for methods that are served only when allowlisted:
	// what block a call is about and how its answer may be cached. An
	// allowlisted method without one is forwarded as it is and never
	// cached. Their Cost, when 0, comes from Costs or DefaultCost.
	Known []Method
	// KeyForm says which spellings of the same params share a cache key.
	KeyForm KeyForm
	// NamePattern is a regular expression that every method name of the
	// family matches (an allowlist in config is checked against it).
	NamePattern string
	// AliasPrefixes maps a stand-in prefix to the real one, so that every
	// method of the family answers under both names: evm_chainId is
	// eth_chainId when AliasPrefixes is {"evm_": "eth_"}.
	AliasPrefixes map[string]string
	// Writes are the methods without a row of their own that change state
	// (see Method.Write).
	Writes []string
	// Contracts are the statements of where each method's params name
	// contracts (see Method.Contracts), by real name, for methods without
	// a row of their own or whose row states none. Every method the table
	// serves states one; a method a network's config names that the
	// table does not know states none, and is refused to a key with an
	// address allowlist.
	Contracts map[string]Contracts
	// Chain is how the family's nodes are tracked.
	Chain Chain
	// Subscriptions are the family's subscribe methods.
	Subscriptions Subscriptions
	// Txs are how the family's sent transactions are followed until
	// they land.
	Txs TxRules
}

// KeyForm says which spellings of a call's params are one value for the
// cache (and for coalescing). Every form compares params as JSON values:
// whitespace, the order of object members and the escapes of strings do
// not matter, and numbers keep their spelling.
type KeyForm uint8

// The key forms of the families.
const (
	// KeyJSON compares strings byte for byte once unescaped (the slot
	// chain's base58 and base64 strings are case-sensitive).
	KeyJSON KeyForm = iota
	// KeyHexFold also takes the hex digits of a "0x" string (0x and hex
	// digits only) in either case: EVM and rollup nodes read "0xAB" and
	// "0xab" (a checksummed address and its lower-case form) as one value.
	KeyHexFold
)

// Block says which block a call is about, as its params rule found it, so
// that the gateway can route it to a node that has the block, pin a tag to
// a number, and decide how long the answer stays true.
type Block struct {
	// Kind says how the block was named; BlockNone for calls about no
	// block in particular (eth_chainId, eth_gasPrice).
	Kind BlockKind
	// Number is the block (slot) number, for BlockNumber.
	Number uint64
	// Tag is the tag as the family writes it, for BlockTag: latest, safe,
	// finalized, pending or earliest (EVM); processed, confirmed or
	// finalized (slot chain commitments); latest, pending, pre_confirmed
	// or l1_accepted (rollup).
	Tag string
}

// BlockKind says how a call names its block.
type BlockKind uint8

// How a call names its block.
const (
	BlockNone BlockKind = iota
	BlockNumber
	BlockTag
	BlockHash
)

// WithData returns the table with each row's Data (Methods and Known)
// set from readsAt, by name, where the row leaves it zero: a family's
// list of what its methods read at their block.
func (t Table) WithData(readsAt map[string]Data) Table {
	for _, rows := range [][]Method{t.Methods, t.Known} {
		for i := range rows {
			if d, ok := readsAt[rows[i].Name]; ok && rows[i].Data == DataAny {
				rows[i].Data = d
			}
		}
	}
	return t
}

// Knows reports whether name is a method of the table (a row, a rule, a
// default or optional method, a costed or write method), or a namespace
// ("debug_") some of its methods are in: what a node's config may say it
// serves or lacks.
func (t Table) Knows(name string) bool {
	match := func(m string) bool {
		if strings.HasSuffix(name, "_") {
			return strings.HasPrefix(m, name)
		}
		return m == name
	}
	for _, rows := range [][]Method{t.Methods, t.Known} {
		for _, r := range rows {
			if match(r.Name) {
				return true
			}
		}
	}
	lists := [][]string{t.DefaultAllow, t.Writes}
	for _, group := range t.Optional {
		lists = append(lists, group)
	}
	for _, list := range lists {
		for _, m := range list {
			if match(m) {
				return true
			}
		}
	}
	for m := range t.Costs {
		if match(m) {
			return true
		}
	}
	return false
}

// Heads are a node's view of its chain: the numbers (slots) of its newest
// block and of its newest safe and finalized ones (0 when the node does not
// say), and the header of the block the chain view follows, which links it
// by hash: the newest block, or on the slot chain the newest confirmed one
// (processed blocks there may yet be skipped). A family whose blocks have
// no hash to follow leaves Head zero.
type Heads struct {
	Latest, Safe, Finalized uint64
	Head                    Header
}

// Header is a block's place in its chain: what the chain view links by
// hash. ParentNumber is Number-1 except on the slot chain, whose skipped
// slots leave gaps.
type Header struct {
	Number       uint64
	Hash         string
	Parent       string
	ParentNumber uint64
}

// Head names one of a chain's heads.
type Head uint8

// The heads a tag can resolve to.
const (
	HeadLatest Head = iota + 1
	HeadSafe
	HeadFinalized
)

// Of returns head k of h, and whether h knows it (a node that knows no
// safe block leaves Safe at 0).
func (h Heads) Of(k Head) (uint64, bool) {
	switch k {
	case HeadLatest:
		return h.Latest, h.Latest > 0
	case HeadSafe:
		return h.Safe, h.Safe > 0
	case HeadFinalized:
		return h.Finalized, h.Finalized > 0
	}
	return 0, false
}

// Caller sends one call to one node and appends its result to dst (see
// upstream.Node); a family's Chain hooks ask nodes through it.
type Caller interface {
	Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error)
}

// Chain is how a family's nodes tell which chain they are on and how far
// they are: the hooks of head tracking, part of the family's table.
type Chain struct {
	// Identity returns what names the node's chain (an EVM chain id, the
	// slot chain's genesis hash, the rollup's chain id); nodes of one
	// network must agree on it.
	Identity func(ctx context.Context, node Caller) (string, error)
	// Heads returns the node's heads.
	Heads func(ctx context.Context, node Caller) (Heads, error)
	// Header returns the header of the block with hash (whose number is
	// number) from a node, for the chain view to link a new head to the
	// chain it follows; nil when the family's blocks have no hashes to
	// follow. A family that can ask by hash does (a node may have another
	// block at that number).
	Header func(ctx context.Context, node Caller, number uint64, hash string) (Header, error)
	// Tags maps each block tag a call may name to the head it resolves to
	// (EVM latest, safe, finalized; the slot chain's commitments; the
	// rollup's latest and l1_accepted). Tags not listed (pending,
	// earliest) are sent as they are.
	Tags map[string]Head
	// PollInterval is how often heads are asked for by default.
	PollInterval time.Duration
	// MaxLag is how far behind the best head a node may be (in blocks or
	// slots) and still get calls about the newest blocks, by default (a
	// network's max_lag of 0 takes it). 0 declares no bound: no node
	// counts as lagging.
	MaxLag uint64
	// Answers are the family's node words: how the error answers of the
	// node software people run are classified (docs/nodes.md). The first
	// matching rule wins.
	Answers []AnswerRule
}

// Subscription is a family's rule for one subscribe method: how its
// params are checked, what identifies the upstream subscription that
// clients asking the same thing share, what it costs, and how its
// notifications are written. It is part of the family's table, so that the
// gateway knows no family by name.
type Subscription struct {
	// Method is the subscribe method's real name ("eth_subscribe",
	// "slotSubscribe", "starknet_subscribeNewHeads"); Aliases are other
	// names clients may use.
	Method  string
	Aliases []string
	// Unsubscribe is the method that ends a subscription of this kind.
	Unsubscribe string
	// Notification is the method name of the notifications
	// ("eth_subscription", "slotNotification"); Also are other
	// notifications the subscription may carry (the rollup's reorg
	// notification), passed on as they come.
	Notification string
	Also         []string
	// Params checks the params of a subscribe call. Errors are
	// *ParamsError.
	Params func(raw jsontext.Value) (SubParams, error)
	// Cost is the credit cost of subscribing; NotificationCost, by kind,
	// the cost of each notification a client receives (the family's
	// DefaultNotificationCost where a kind has none).
	Cost             int
	NotificationCost map[string]int
	// Contracts says, by kind (SubParams.Kind), where a subscribe call's
	// params name the contracts whose events it follows, for a key's
	// contract-address allowlist; a kind without an entry is refused to
	// a key with such a list.
	Contracts map[string]Contracts
}

// SubParams is what a subscribe method's params rule learned.
type SubParams struct {
	// Kind names what is subscribed to, for costs and logs ("newHeads",
	// "logs", "slot").
	Kind string
	// Send is the params to send upstream; subscriptions with the same
	// method and Send share one upstream subscription.
	Send jsontext.Value
	// Heads marks a subscription to new heads (or slots): it is kept
	// without gap or duplicate when its upstream changes, by the number
	// Subscriptions.Seq reads from each notification, and can be served
	// from tracked heads for nodes that speak HTTP only.
	Heads bool
	// Ends marks a subscription that ends itself after its first
	// notification (a signature subscription).
	Ends bool
	// Private marks a subscription that cannot be shared between clients
	// (one that first replays blocks from a past block_id): each client
	// gets an upstream subscription of its own.
	Private bool
	// Resume, when set, has the subscription first send what the client
	// missed since a past block (docs/subscriptions.md), from the chain
	// view and the nodes, then continue live; Send then leaves the resume
	// point out, so that the live part is shared as any other.
	Resume *Resume
}

// DefaultMaxResumeBlocks is how far back a resumed subscription may start
// when limits.max_resume_blocks is not set.
const DefaultMaxResumeBlocks = 1024

// Resume is where a resumed subscription starts.
type Resume struct {
	// Hash names the block by hash; with no Hash, Number names it (the
	// served chain's block at that number, or a slot).
	Hash   string
	Number uint64
	// Inclusive sends the named block too (the rollup's block_id start,
	// the slot chain's from-slot); otherwise the stream starts after it
	// (resumeFrom: the last block the client saw).
	Inclusive bool
	// Position and Field name the param that held it, for errors.
	Position int
	Field    string
	// Max bounds how many blocks back it may be; 0 means
	// DefaultMaxResumeBlocks. The gateway sets it from
	// limits.max_resume_blocks.
	Max int
}

// Error is a ParamsError about the resume point: reason says what is
// wrong with it.
func (r *Resume) Error(reason string) *ParamsError {
	return &ParamsError{Position: r.Position, Field: r.Field, Reason: reason}
}

// Bound is r's Max, or the default.
func (r *Resume) Bound() int {
	if r.Max > 0 {
		return r.Max
	}
	return DefaultMaxResumeBlocks
}

// SubscriptionIDs says how a family writes the ids of client
// subscriptions.
type SubscriptionIDs uint8

// How families write subscription ids.
const (
	// IDHex is a 0x-prefixed hex string ("0x9ce59a13059e417087c02d3236a0b1cc"), as geth.
	IDHex SubscriptionIDs = iota
	// IDInteger is a JSON number, as agave.
	IDInteger
	// IDString is a decimal string ("42"), as rollup nodes of spec 0.8.
	IDString
)

// Subscriptions is a family's subscription rules.
type Subscriptions struct {
	// Methods are the subscribe methods.
	Methods []Subscription
	// IDs is how client subscription ids are written.
	IDs SubscriptionIDs
	// IDMember is the member of a notification's params that holds the
	// subscription id ("subscription", or "subscription_id"); ResultFirst
	// writes "result" before it, as agave does.
	IDMember    string
	ResultFirst bool
	// DefaultNotificationCost is the cost of a notification whose kind has
	// no cost of its own.
	DefaultNotificationCost int
	// UnknownID is the error an unsubscribe with an id the connection
	// does not hold gets, as the family's nodes answer it; nil answers
	// false.
	UnknownID error
	// Seq reads the number of a heads notification's block (or slot).
	Seq func(kind string, result jsontext.Value) (uint64, bool)
	// Head makes the result of a heads notification for block b (by its
	// hash where b has one, else by its number), asking node where it
	// must (a block header): for blocks no upstream subscription sent,
	// such as a reorg's new branch fetched by the chain view, and for
	// nodes that speak HTTP only. nil when the family cannot.
	Head func(ctx context.Context, node Caller, kind string, b Header, h Heads) (jsontext.Value, error)
	// HeadOf reads the block a heads notification is about, with its hash
	// and parent: a family that has it sends its clients' heads streams
	// from the chain view (every block of a new branch after a reorg, in
	// order, as nodes do), and the notifications feed the view. nil for a
	// family whose heads are kept in order by number alone (the slot
	// chain, whose slot and root notifications never go back).
	HeadOf func(kind string, result jsontext.Value) (Header, bool)
	// Reorg makes the notification that tells a heads subscription's
	// clients of a reorg, from the blocks it dropped (oldest first): the
	// rollup's starknet_subscriptionReorg. nil when clients learn of a
	// reorg from the new heads alone, as on the EVM.
	Reorg func(kind string, dropped []Header) (method string, result jsontext.Value)
	// LogOf reads the block a log notification is about and whether the
	// node marked it removed (EVM logs): such notifications are sent once
	// their block is on the served chain, and sent again as removed when
	// a reorg drops it (Removed writes that form). nil for a family whose
	// events carry no removal.
	LogOf   func(kind string, result jsontext.Value) (block Header, removed, ok bool)
	Removed func(result jsontext.Value) jsontext.Value
	// BlockOf reads the block (its hash, or its number or slot when the
	// family's blocks have no hash to follow) a notification of a kind
	// that is not heads is about, and whether it tells of a removal: a
	// resumed subscription uses it to drop the live notifications it has
	// already sent from its backfill. nil: LogOf, if any, is used.
	BlockOf func(kind string, result jsontext.Value) (block Header, removed, ok bool)
	// Backfill makes the notifications (their results) a subscription of
	// a kind that is not heads (send is its params as sent upstream)
	// would have carried about block b, in order, for a resumed
	// subscription; removed asks for them as a reorg takes them away
	// (nil, nil when the family tells a reorg otherwise, with Reorg). nil
	// when the family's subscriptions of such kinds cannot resume.
	Backfill func(ctx context.Context, node Caller, kind string, send jsontext.Value, b Header, removed bool) ([]jsontext.Value, error)
}

// Contracts says where a method's params name the contracts (accounts) a
// call executes or reads, so that a key's contract-address allowlist
// (docs/keys.md) checks exactly what the family's nodes will act on. Each
// method of a family states it in its table (Method.Contracts, or
// Table.Contracts for methods without a row); the zero value states
// nothing, and a key with an address allowlist is refused such a method.
//
// The description is read strictly: a call for such a key is served only
// when every node of the family reads its params alike. Objects are
// closed (a member the description does not name, in any other spelling,
// or named twice, is refused: nodes differ on case and on which of two
// members counts), and a param the description does not list is refused.
type Contracts struct {
	// Reads says whether and how the method reaches contracts.
	Reads Reads
	// Params are the method's params by position, as far as the check
	// needs them (with Reads == ReadsNamed). A call with more params than
	// are listed is refused; a Required one that is missing is refused.
	Params []Param
	// ByName says that the family's nodes also take the params as one
	// object, by each Param's Name; without it such params are refused.
	ByName bool
}

// Reads says whether a method reaches contracts.
type Reads uint8

// How methods reach contracts.
const (
	// ReadsUnstated is the zero value: the table says nothing. Refused
	// for a key with an address allowlist; a family's table test refuses
	// it for the methods the family serves.
	ReadsUnstated Reads = iota
	// ReadsNone marks a method that names and reads no contract's state
	// (a head, a gas price, the chain's blocks, transactions and
	// receipts, a signed transaction sent as it is).
	ReadsNone
	// ReadsNamed marks a method that reads or runs the contracts its
	// params name, where Params says: each must be on the list, and a
	// call that names none is refused (it would reach any contract).
	ReadsNamed
	// ReadsAny marks a method that may read contracts its params cannot
	// bound (a trace, whose tracer reads any state; a block's access
	// list): refused for a key with an address allowlist.
	ReadsAny
)

// Param is one param of a call: its name (for params given by name, and
// for messages) and its shape.
type Param struct {
	Name  string
	Shape Shape
}

// Shape describes a JSON value as far as contract addresses go.
type Shape struct {
	// Kind is what the value is.
	Kind ShapeKind
	// Required marks a value that must be there and name at least one
	// address (ShapeAddress, ShapeAddresses, ShapeAddressKeys), or an
	// object member or param that must be given: without it the call
	// would reach any contract (a log filter without address, a call
	// without to, which creates a contract and runs its code).
	Required bool
	// Members are the members of a ShapeObject, by their exact names.
	Members []Member
	// Elem is the shape of each element of a ShapeList.
	Elem *Shape
}

// Member is one member of an object.
type Member struct {
	Name  string
	Shape Shape
}

// ShapeKind says what a value is.
type ShapeKind uint8

// The kinds of values.
const (
	// ShapeAny is a value that names no contract (a block, gas, data):
	// it is not read.
	ShapeAny ShapeKind = iota
	// ShapeAddress is one address, a string; null names none.
	ShapeAddress
	// ShapeAddresses is one address or a list of them (a log filter's
	// address); null or an empty list names none.
	ShapeAddresses
	// ShapeObject is an object of exactly Members: any other member, or
	// one given twice, is refused.
	ShapeObject
	// ShapeList is a list of Elem; null is an empty list.
	ShapeList
	// ShapeAddressKeys is an object whose member names are addresses and
	// whose values name no contract (eth_getStorageValues' requests).
	ShapeAddressKeys
	// ShapeAbsent is a value that must be left out, null or empty ({} or
	// []) for a key with an address allowlist: a state or block override,
	// an authorization list, which change the code or state the listed
	// contracts run with.
	ShapeAbsent
)

// LogQuery is what a log query's params rule learned (eth_getLogs, the
// rollup's starknet_getEvents): the ends of its block range, how many
// addresses and topics (keys) it names, and, where the family can, how to
// ask the same query about part of the range. The network checks it
// against its LogLimits (and the key's) and splits a range wider than a
// node takes into chunks.
type LogQuery struct {
	// From and To are the ends as the call named them: numbers or tags
	// (the network resolves latest, safe, finalized and earliest against
	// its heads). A call about a block hash has no LogQuery.
	From, To Block
	// Addresses is how many contract addresses the filter names; Topics
	// how many topic values (keys) over all positions (a null position
	// names none).
	Addresses, Topics int
	// Range, when not nil, returns the params of the same query about
	// blocks from to to (numbers); nil means the family's query cannot be
	// split (the rollup pages with a continuation token instead).
	Range func(from, to uint64) jsontext.Value
	// Wrong, when not nil, returns the family's refusal of a range that
	// the served chain shows to be wrong once its ends are resolved: it
	// starts after it ends, or it ends past head, the served chain's
	// head; nil when the range is right. The error is worded as the
	// family's nodes word it (go-ethereum's -32602 for the EVM). A family
	// that leaves such ranges to its nodes sets none.
	Wrong func(from, to, head uint64) error
}

// FilterOp is what a call does with a log filter the gateway keeps itself
// (the EVM's eth_newFilter and the calls that name its id), so that a
// filter's logs are read, bounded and priced as the family's log query
// reads them (docs/logs.md).
type FilterOp uint8

// The calls about a log filter.
const (
	// FilterNone: the call is not about a log filter.
	FilterNone FilterOp = iota
	// FilterNew makes a log filter of the call's query.
	FilterNew
	// FilterLogs answers every log the filter matches now.
	FilterLogs
	// FilterChanges answers the logs of the blocks the served chain added
	// since the filter was made or last polled.
	FilterChanges
	// FilterUninstall forgets the filter.
	FilterUninstall
)

// LogFilter is what a params rule learned of a call about a log filter.
type LogFilter struct {
	Op FilterOp
	// ID names the filter, for every op but FilterNew.
	ID string
	// Query and Params, for FilterNew, are the family's log query method
	// (eth_getLogs) and the params that ask it for the filter's logs; the
	// call's Params.Logs describes the same query, for its bounds.
	Query  *Method
	Params jsontext.Value
}

// Webhooks is a family's part of webhooks (issue 38, docs/webhooks.md):
// which events it serves, the subscribe call each is read through, and
// how a notification becomes the events a webhook delivers. Package
// webhook does the rest (the store, ordering, reorgs, retries) for every
// family alike.
type Webhooks interface {
	// Check checks an event's name and filter; its error names the field.
	Check(event string, filter json.RawMessage) error
	// Subscribe returns the JSON-RPC subscribe call of event with filter,
	// resuming after the block whose hash is resumeFrom ("" for live
	// only). PerBlock says that each notification is one block of the
	// served chain, whose reorgs package webhook finds by parent hash;
	// otherwise notifications carry their own removed flag (logs).
	Subscribe(event string, filter json.RawMessage, resumeFrom string) (body []byte, perBlock bool, err error)
	// Read turns one notification's result into the events to deliver
	// (none when it has nothing for the webhook); call serves a JSON-RPC
	// body on the webhook's network as its key, for events that need
	// more than the notification.
	Read(ctx context.Context, call WebhookCaller, event string, filter, result json.RawMessage) ([]WebhookEvent, error)
}

// WebhookCaller serves a JSON-RPC body and returns the answer.
type WebhookCaller func(ctx context.Context, body []byte) ([]byte, error)

// WebhookEvent is one event a webhook delivers: a block of the chain, or
// an item of it (a log), with its data.
type WebhookEvent struct {
	Number     int64
	Hash       string
	ParentHash string
	Removed    bool
	// Item tells apart the events of one block (a log's index); "" for a
	// block's one event.
	Item string
	Data json.RawMessage
	// Quiet marks a block event with nothing for the webhook (an address
	// without activity in it): it is followed, so that a reorg is seen,
	// but not delivered.
	Quiet bool
}

// TxWait is a call that sends a signed transaction and answers once it
// landed (eth_sendRawTransactionSync): the network sends it as Send would
// be sent, then follows it on its chain view with the family's TxRules
// until it is in a block of the served chain or Timeout passes.
type TxWait struct {
	// Send is the method that sends the transaction and SendParams its
	// params (eth_sendRawTransaction with the raw bytes).
	Send       *Method
	SendParams jsontext.Value
	// Timeout is the wait the client asked for; 0 takes the network's
	// default. The network holds it to its own bound.
	Timeout time.Duration
}

// TxRules are how a family follows the transactions sent through the
// gateway until they land: the calls that ask a node about one, and how
// their answers read. A family whose sends are not followed leaves Landed
// nil. A family with no Held (no node tells a pending transaction) has
// a transaction that has not landed sent again at every check.
type TxRules struct {
	// Landed returns the call that asks a node where the transaction
	// with hash landed (eth_getTransactionReceipt).
	Landed func(hash string) (method string, params jsontext.Value)
	// Where reads Landed's answer: the block the transaction is in; ok
	// false while it is in none (a null answer).
	Where func(res jsontext.Value) (block Header, ok bool)
	// Held returns the call that asks a node whether it holds the
	// transaction, pending or landed (eth_getTransactionByHash), and
	// Holds reads its answer.
	Held  func(hash string) (method string, params jsontext.Value)
	Holds func(res jsontext.Value) bool
	// Expiry, when not nil, returns the call that asks a node whether the
	// transaction sent with params can still land (the slot chain's
	// isBlockhashValid of its recent blockhash), and Expired reads its
	// answer: an expired transaction is let go, not sent again.
	Expiry  func(params jsontext.Value) (method string, call jsontext.Value, ok bool)
	Expired func(res jsontext.Value) bool
}

// TxTimeoutError answers a call that sent a transaction and waited for
// it to land (TxWait) when the wait ran out first: EIP-7966's timeout,
// code 4, with the transaction's hash as its data, in go-ethereum's
// words.
type TxTimeoutError struct {
	Hash   string
	Waited time.Duration
}

// Error returns go-ethereum's words for the timeout.
func (e *TxTimeoutError) Error() string {
	return fmt.Sprintf("The transaction was added to the transaction pool but wasn't processed in %v", e.Waited)
}

// ErrorCode returns 4, EIP-7966's timeout code.
func (e *TxTimeoutError) ErrorCode() int { return 4 }
