// Package portico holds the domain types shared by Portico's pieces: the rows
// of a chain family's method table, what a params rule learns from a call,
// the limits clients are held to (Limits, which the config file decodes
// into and the gateway runs with), and the gateway's own errors and their
// codes. Subpackages implement the pieces (API key identities live in
// apikey); cmd/portico wires them together.
package portico

import (
	"context"
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
}
