package solanadevnet

import (
	"context"
	"slices"
	"sync"

	"github.com/gagliardetto/solana-go"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/rpcparams"
	"github.com/porticohq/portico/jsonrpc"
)

// The devnet serves agave's PubSub methods on the WebSocket of its HTTP
// port (jsonrpc.Server upgrades any path). A subscription is kept in a
// subHub, indexed by what it watches; the producer hands the hub what each
// slot changed (subscriptions_notify.go), the hub decides under the ledger
// lock who is notified of what, and the notifications are rendered and
// queued after the lock is released. No goroutine runs per subscription:
// the slot producer delivers, and jsonrpc.Conn's bounded queue keeps a
// client that does not read from holding memory (the core disconnects it).
//
// As in agave (rpc_subscription_tracker.rs), subscriptions with identical
// params share one id: ids count up from 0 per devnet for each distinct
// params, and a connection that subscribes twice with the same params gets
// the same id back and one stream of notifications.

// subKind is what a subscription watches.
type subKind uint8

const (
	subSlot subKind = iota
	subRoot
	subAccount
	subProgram
	subLogs
	subSignature
	subBlock
)

// notificationMethods name each kind's notifications.
var notificationMethods = [...]string{
	subSlot:      "slotNotification",
	subRoot:      "rootNotification",
	subAccount:   "accountNotification",
	subProgram:   "programNotification",
	subLogs:      "logsNotification",
	subSignature: "signatureNotification",
	subBlock:     "blockNotification",
}

// subSpec is a subscription's decoded params.
type subSpec struct {
	kind  subKind
	level commitment // all kinds but slot and root
	// key is the account (account), the program (program) or the address
	// a logs or block subscription mentions (when mentions is set).
	key      solana.PublicKey
	mentions bool
	votes    bool // logs: allWithVotes
	sig      solana.Signature
	received bool // signature: enableReceivedNotification
	encoding string
	// slice is accepted and part of the params, but notifications carry
	// the whole data, as agave's do (it encodes them without the slice).
	slice   *dataSlice
	filters []accountFilter
	block   encodeOpts
	// canon is the params in canonical form: equal params, equal canon.
	canon string
}

// subGroup is the subscription of one set of params: one id, shared by
// every connection that subscribed with those params.
type subGroup struct {
	id      uint64
	idJSON  jsontext.Value
	spec    subSpec
	members map[*jsonrpc.Conn]*subMember
	// done is set once a signature subscription has had its notification.
	done bool
	// indexed says whether the group is in the hub's indexes.
	indexed bool
}

// subMember is one connection's hold on a group. sub is nil until the
// answer carrying the id has been queued (join).
type subMember struct {
	conn *jsonrpc.Conn
	sub  *jsonrpc.Sub
}

// levelIndex holds the groups that watch one commitment level.
type levelIndex struct {
	accounts map[solana.PublicKey][]*subGroup
	programs map[solana.PublicKey][]*subGroup
	mentions map[solana.PublicKey][]*subGroup // logs that mention an address
	logs     []*subGroup                      // logs: all and allWithVotes
	sigs     map[solana.Signature][]*subGroup
	blocks   []*subGroup
}

// subHub holds a devnet's subscriptions. Lock order: Devnet.mu, then mu.
type subHub struct {
	mu       sync.Mutex
	nextID   uint64
	groups   map[string]*subGroup // by spec canon
	slot     *subGroup
	root     *subGroup
	levels   [finalized + 1]levelIndex
	received map[solana.Signature][]*subGroup // enableReceivedNotification
	// revert holds the accounts an abandoned block had changed: processed
	// account subscriptions hear of them with the next block.
	revert  map[solana.PublicKey]struct{}
	indexed int           // groups in the indexes
	joined  int           // members that have joined
	changed chan struct{} // closed and replaced when joined changes
}

func newSubHub() *subHub {
	h := &subHub{groups: map[string]*subGroup{}, received: map[solana.Signature][]*subGroup{},
		revert: map[solana.PublicKey]struct{}{}, changed: make(chan struct{})}
	for i := range h.levels {
		h.levels[i] = levelIndex{
			accounts: map[solana.PublicKey][]*subGroup{}, programs: map[solana.PublicKey][]*subGroup{},
			mentions: map[solana.PublicKey][]*subGroup{}, sigs: map[solana.Signature][]*subGroup{},
		}
	}
	return h
}

// subscribe starts a subscription with spec on the connection of ctx and
// returns its id. The subscription joins the hub once the answer with its
// id is queued, so that its first notification follows the id.
func (d *Devnet) subscribe(ctx context.Context, spec subSpec) (any, error) {
	conn := jsonrpc.ConnFrom(ctx)
	if conn == nil {
		return nil, jsonrpc.ErrNoConnection
	}
	h := d.subs
	g, m, fresh, dup := h.open(conn, spec)
	if dup {
		return g.idJSON, nil
	}
	sub, err := jsonrpc.Subscribe(ctx, g.idJSON)
	if err != nil {
		h.abandon(g, m, fresh)
		e, _, _ := jsonrpc.ErrorFor(err) // the core's limit: -32055
		return nil, e
	}
	if !jsonrpc.AfterAnswer(ctx, func() { d.join(g, m, sub) }) {
		d.join(g, m, sub)
	}
	return g.idJSON, nil
}

// unsubscribe ends the subscription with the id in params on the caller's
// connection, whatever its kind (agave's unsubscribe methods all do that).
// An id the connection does not hold is agave's -32602 "Invalid
// subscription id.".
func (d *Devnet) unsubscribe(ctx context.Context, params jsontext.Value) (any, error) {
	if jsonrpc.ConnFrom(ctx) == nil {
		return nil, jsonrpc.ErrNoConnection
	}
	p, err := positional(params, 1, "id")
	if err != nil {
		return nil, err
	}
	id, err := rpcparams.Uint(p[0], 1, "id", rpcparams.MaxUint64)
	if err != nil {
		return nil, err
	}
	if !jsonrpc.Unsubscribe(ctx, jsontext.Value(itoa(id))) {
		return nil, invalidParams("Invalid subscription id.")
	}
	return true, nil
}

// open finds or creates the group of spec and reserves conn's place in it.
// dup reports that conn already holds it (the same id is answered again).
func (h *subHub) open(conn *jsonrpc.Conn, spec subSpec) (g *subGroup, m *subMember, fresh, dup bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g = h.groups[spec.canon]
	if g == nil {
		fresh = true
		g = &subGroup{id: h.nextID, idJSON: jsontext.Value(itoa(h.nextID)), spec: spec, members: map[*jsonrpc.Conn]*subMember{}}
		h.nextID++
		h.groups[spec.canon] = g
		h.index(g, true)
	}
	if m := g.members[conn]; m != nil {
		return g, m, false, true
	}
	m = &subMember{conn: conn}
	g.members[conn] = m
	return g, m, fresh, false
}

// abandon undoes open when the connection refused the subscription; a
// group made for it gives its id back, as agave allocates none then.
func (h *subHub) abandon(g *subGroup, m *subMember, fresh bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.drop(g, m)
	if fresh && h.groups[g.spec.canon] == nil && h.nextID == g.id+1 {
		h.nextID--
	}
}

// join makes the member live once its id has been answered. A signature
// already at the subscription's commitment is notified at once and the
// subscription ends, as agave notifies it at its next check (its status
// cache reaches 300 slots back).
func (d *Devnet) join(g *subGroup, m *subMember, sub *jsonrpc.Sub) {
	var now *delivery
	d.mu.RLock()
	h := d.subs
	h.mu.Lock()
	if g.spec.kind == subSignature {
		if slot, errJSON, ok := d.led.signatureAt(g.spec.sig, g.spec.level); ok {
			now = &delivery{subs: []*jsonrpc.Sub{sub}, final: true, msg: func() []byte {
				return notification(g, withCtx(slot, signatureValue(errJSON)))
			}}
		} else if g.done {
			g.done = false // notified before this member joined, then abandoned
			h.index(g, true)
		}
	}
	if now == nil {
		m.sub = sub
		h.joined++
		h.signal()
	}
	h.mu.Unlock()
	d.mu.RUnlock()
	if now != nil {
		now.send()
		h.mu.Lock()
		h.drop(g, m)
		h.mu.Unlock()
		return
	}
	sub.OnEnd(func() { h.leave(g, m) })
}

// leave removes a member whose subscription ended.
func (h *subHub) leave(g *subGroup, m *subMember) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m.sub != nil && g.members[m.conn] == m {
		h.joined--
		h.signal()
	}
	h.drop(g, m)
}

// drop removes m from g, and g from the hub when it was the last.
func (h *subHub) drop(g *subGroup, m *subMember) {
	if g.members[m.conn] == m {
		delete(g.members, m.conn)
	}
	if len(g.members) > 0 {
		return
	}
	if h.groups[g.spec.canon] == g {
		delete(h.groups, g.spec.canon)
	}
	h.index(g, false)
}

func (h *subHub) signal() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// subs returns the joined subscriptions of g.
func (g *subGroup) subs() []*jsonrpc.Sub {
	var out []*jsonrpc.Sub
	for _, m := range g.members {
		if m.sub != nil {
			out = append(out, m.sub)
		}
	}
	return out
}

// index adds g to the indexes that dispatch its kind, or removes it; it
// does nothing when g is already so.
func (h *subHub) index(g *subGroup, add bool) {
	if g.indexed == add {
		return
	}
	g.indexed = add
	if add {
		h.indexed++
	} else {
		h.indexed--
	}
	s := &g.spec
	lx := &h.levels[s.level]
	switch s.kind {
	case subSlot:
		h.slot = pick(add, g, h.slot)
	case subRoot:
		h.root = pick(add, g, h.root)
	case subAccount:
		indexKey(lx.accounts, s.key, g, add)
	case subProgram:
		indexKey(lx.programs, s.key, g, add)
	case subLogs:
		if s.mentions {
			indexKey(lx.mentions, s.key, g, add)
		} else {
			lx.logs = indexList(lx.logs, g, add)
		}
	case subSignature:
		indexKey(lx.sigs, s.sig, g, add)
		if s.received {
			indexKey(h.received, s.sig, g, add)
		}
	case subBlock:
		lx.blocks = indexList(lx.blocks, g, add)
	}
}

func pick(add bool, g, cur *subGroup) *subGroup {
	if add {
		return g
	}
	if cur == g {
		return nil
	}
	return cur
}

func indexKey[K comparable](m map[K][]*subGroup, k K, g *subGroup, add bool) {
	if l := indexList(m[k], g, add); len(l) > 0 {
		m[k] = l
	} else {
		delete(m, k)
	}
}

func indexList(l []*subGroup, g *subGroup, add bool) []*subGroup {
	if add {
		return append(l, g)
	}
	return slices.DeleteFunc(l, func(x *subGroup) bool { return x == g })
}
