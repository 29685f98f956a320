package solanadevnet

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/gagliardetto/solana-go"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// stepEvents is what one slot changed, as step reports it to the hub.
type stepEvents struct {
	root      uint64   // the root when the slot began
	produced  *block   // the slot's block, or nil when the leader skipped
	dropped   *block   // the processed block abandoned at this slot, or nil
	confirmed []*block // blocks that became confirmed, oldest first
	rooted    []*block // blocks that became finalized (rooted), oldest first
}

// delivery is one notification for the joined subscriptions of a group.
// msg renders it; it runs after the ledger lock is released.
type delivery struct {
	subs  []*jsonrpc.Sub
	final bool // the subscription ends after it (signature)
	msg   func() []byte
}

// batch is the notifications of one slot, in order.
type batch []*delivery

// send queues each notification on its connections.
func (b batch) send() {
	for _, dl := range b {
		dl.send()
	}
}

func (dl *delivery) send() {
	msg := dl.msg()
	for _, s := range dl.subs {
		if dl.final {
			s.NotifyLast(msg)
		} else {
			s.Notify(msg)
		}
	}
}

// collect decides, under the ledger lock, which subscriptions hear of ev,
// in the order a node would tell them: the slot, received signatures, then
// each commitment level from processed up (roots before finalized). l is
// the ledger after the slot; the blocks' deltas are still set.
func (h *subHub) collect(l *ledger, ev *stepEvents) batch {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.indexed == 0 {
		return nil
	}
	c := &collector{h: h, l: l, blocks: map[string][]byte{}}
	if ev.dropped != nil && len(h.levels[processed].accounts) > 0 {
		for k := range ev.dropped.delta {
			h.revert[k] = struct{}{}
		}
	}
	if b := ev.produced; b != nil {
		if h.slot != nil {
			info := fmt.Appendf(nil, `{"slot":%d,"parent":%d,"root":%d}`, b.Slot, b.ParentSlot, ev.root)
			c.add(h.slot, false, func() []byte { return info })
		}
		for _, r := range b.Txs {
			for _, g := range h.received[r.sig()] {
				c.add(g, false, func() []byte { return withCtx(b.Slot, []byte(`"receivedSignature"`)) })
			}
		}
		c.level(processed, []*block{b}, h.revert)
		clear(h.revert)
	}
	if len(ev.confirmed) > 0 {
		c.level(confirmed, ev.confirmed, nil)
	}
	if h.root != nil {
		for _, b := range ev.rooted {
			c.add(h.root, false, func() []byte { return []byte(itoa(b.Slot)) })
		}
	}
	if len(ev.rooted) > 0 {
		c.level(finalized, ev.rooted, nil)
	}
	return c.out
}

// collector gathers one slot's deliveries.
type collector struct {
	h      *subHub
	l      *ledger
	out    batch
	blocks map[string][]byte // rendered block values, shared by equal subscriptions
}

func (c *collector) add(g *subGroup, final bool, result func() []byte) {
	subs := g.subs()
	if len(subs) == 0 {
		return
	}
	c.out = append(c.out, &delivery{subs: subs, final: final, msg: func() []byte { return notification(g, result()) }})
}

// level notifies the subscriptions at commitment lv of blocks that reached
// it, and the account subscriptions of the accounts those blocks (and
// extra) changed, with their state as of the level's newest block.
func (c *collector) level(lv commitment, blocks []*block, extra map[solana.PublicKey]struct{}) {
	lx := &c.h.levels[lv]
	top := c.l.at(lv).Slot
	for _, b := range blocks {
		for _, g := range lx.blocks {
			c.block(g, b, lv, top)
		}
		if len(lx.logs) > 0 || len(lx.mentions) > 0 {
			for _, r := range b.Txs {
				c.logs(lx, b.Slot, r)
			}
		}
		if len(lx.programs) > 0 {
			for _, k := range sortedKeys(b.delta) {
				a := b.delta[k]
				for _, g := range lx.programs[a.Owner] {
					if allowed(g.spec.filters, a) {
						c.add(g, false, func() []byte { return withCtx(b.Slot, programValue(k, a, g.spec.encoding)) })
					}
				}
			}
		}
		if len(lx.sigs) > 0 {
			for _, r := range b.Txs {
				for _, g := range slices.Clone(lx.sigs[r.sig()]) {
					errV, _ := errStatus(&r.Meta)
					c.add(g, true, func() []byte { return withCtx(b.Slot, signatureValue(errV)) })
					c.h.finish(g)
				}
			}
		}
	}
	if len(lx.accounts) == 0 {
		return
	}
	changed := map[solana.PublicKey]*account{}
	for _, b := range blocks {
		for k := range b.delta {
			changed[k] = nil
		}
	}
	for k := range extra {
		changed[k] = nil
	}
	for _, k := range sortedKeys(changed) {
		gs := lx.accounts[k]
		if len(gs) == 0 {
			continue
		}
		a := c.l.accountAt(k, lv)
		for _, g := range gs {
			c.add(g, false, func() []byte { return withCtx(top, accountValue(a, g.spec.encoding)) })
		}
	}
}

// finish retires a signature subscription after its notification: agave
// ends it, and the same params subscribed again get a new id.
func (h *subHub) finish(g *subGroup) {
	g.done = true
	h.index(g, false)
	if h.groups[g.spec.canon] == g {
		delete(h.groups, g.spec.canon)
	}
}

// block notifies g of b unless g mentions an address no transaction of b
// holds. A transaction version the subscription does not accept is
// reported as agave reports it: no block, err UnsupportedTransactionVersion
// and the level's newest slot as value.slot.
func (c *collector) block(g *subGroup, b *block, lv commitment, top uint64) {
	s := &g.spec
	blk := b
	if s.mentions {
		txs := slices.DeleteFunc(slices.Clone(b.Txs), func(r *txRecord) bool { return !slices.Contains(txKeys(r), s.key) })
		if len(txs) == 0 {
			return
		}
		cp := *b
		cp.Txs = txs
		blk = &cp
	}
	key := fmt.Sprintf("%d/%d/%+v/%v/%s", b.Slot, lv, s.block, s.mentions, s.key)
	first := c.l.first
	cache := c.blocks
	c.add(g, false, func() []byte {
		if v, ok := cache[key]; ok {
			return v
		}
		v := withCtx(b.Slot, blockValue(blk, first, s.block, top))
		cache[key] = v
		return v
	})
}

// logs notifies the logs subscriptions r matches: all (votes excepted),
// allWithVotes, and those that mention one of its accounts.
func (c *collector) logs(lx *levelIndex, slot uint64, r *txRecord) {
	var value []byte
	result := func() []byte {
		if value == nil {
			value = withCtx(slot, logsValue(r))
		}
		return value
	}
	vote := isSimpleVote(r)
	for _, g := range lx.logs {
		if g.spec.votes || !vote {
			c.add(g, false, result)
		}
	}
	if len(lx.mentions) == 0 {
		return
	}
	var seen []*subGroup
	for _, k := range txKeys(r) {
		for _, g := range lx.mentions[k] {
			if !slices.Contains(seen, g) {
				seen = append(seen, g)
				c.add(g, false, result)
			}
		}
	}
}

// isSimpleVote is agave's is_simple_vote_transaction: a legacy
// transaction with fewer than three signatures and one instruction, to the
// vote program. The logs filter "all" leaves these out.
func isSimpleVote(r *txRecord) bool {
	m := &r.tx.Message
	return len(r.tx.Signatures) < 3 && !m.IsVersioned() && len(m.Instructions) == 1 &&
		int(m.Instructions[0].ProgramIDIndex) < len(m.AccountKeys) && m.AccountKeys[m.Instructions[0].ProgramIDIndex] == voteProgram
}

// signatureAt reports whether the transaction signed first by sig is at
// level c within the status cache's reach, with the level's newest slot
// and the transaction's err.
func (l *ledger) signatureAt(sig solana.Signature, c commitment) (slot uint64, errV jsontext.Value, ok bool) {
	loc, found := l.sigs[sig]
	if !found || loc.Slot+statusCacheSlots < l.tip().Slot {
		return 0, nil, false
	}
	b := l.blockAt(loc.Slot, c)
	if b == nil || b.Txs[loc.Index].sig() != sig {
		return 0, nil, false
	}
	errV, _ = errStatus(&b.Txs[loc.Index].Meta)
	return l.at(c).Slot, errV, true
}

func sortedKeys[V any](m map[solana.PublicKey]V) []solana.PublicKey {
	keys := make([]solana.PublicKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b solana.PublicKey) int { return bytes.Compare(a[:], b[:]) })
	return keys
}

// The values below follow agave's types field by field, in their
// declaration order, which is the order agave's notifier writes them in
// (it serializes the typed values, not a sorted map as its HTTP answers).

// notification wraps a result in the notification message of g.
func notification(g *subGroup, result []byte) []byte {
	method := notificationMethods[g.spec.kind]
	buf := make([]byte, 0, len(result)+len(method)+80)
	buf = append(buf, `{"jsonrpc":"2.0","method":"`...)
	buf = append(buf, method...)
	buf = append(buf, `","params":{"result":`...)
	buf = append(buf, result...)
	buf = append(buf, `,"subscription":`...)
	buf = append(buf, g.idJSON...)
	return append(buf, "}}"...)
}

// withCtx is an RpcResponse as notifications carry it: the context holds
// the slot only (no apiVersion).
func withCtx(slot uint64, value []byte) []byte {
	buf := fmt.Appendf(make([]byte, 0, len(value)+40), `{"context":{"slot":%d},"value":`, slot)
	buf = append(buf, value...)
	return append(buf, '}')
}

func marshal(v any) []byte {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		panic("solanadevnet: encoding a notification: " + err.Error()) // the values are the devnet's own
	}
	return b
}

// uiAccount is agave's UiAccount.
type uiAccount struct {
	Lamports   uint64 `json:"lamports"`
	Data       any    `json:"data"`
	Owner      string `json:"owner"`
	Executable bool   `json:"executable"`
	RentEpoch  uint64 `json:"rentEpoch"`
	Space      uint64 `json:"space"`
}

// uiParsedAccount is agave's ParsedAccount (jsonParsed data).
type uiParsedAccount struct {
	Program string `json:"program"`
	Parsed  any    `json:"parsed"`
	Space   int    `json:"space"`
}

// accountValue encodes an account's state; nil (deleted) is agave's
// default account: no lamports, no data, owned by the system program,
// rent epoch 0.
func accountValue(a *account, enc string) []byte {
	if a == nil {
		return marshal(uiAccount{Data: accountData(enc, nil, nil), Owner: systemProgram.String()})
	}
	var parsed any
	if enc == "jsonParsed" {
		if program, p, ok := parseAccount(a); ok {
			parsed = uiParsedAccount{Program: program, Parsed: p, Space: len(a.Data)}
		}
	}
	return marshal(uiAccount{Lamports: a.Lamports, Data: accountData(enc, a.Data, parsed), Owner: a.Owner.String(),
		Executable: a.Executable, RentEpoch: 1<<64 - 1, Space: uint64(len(a.Data))})
}

// programValue is agave's RpcKeyedAccount. An account a block emptied
// (no lamports) is shown as the block left it, as agave shows the
// accounts a slot stored.
func programValue(k solana.PublicKey, a *account, enc string) []byte {
	return marshal(struct {
		Pubkey  string         `json:"pubkey"`
		Account jsontext.Value `json:"account"`
	}{k.String(), accountValue(a, enc)})
}

// logsValue is agave's RpcLogsResponse.
func logsValue(r *txRecord) []byte {
	errV, _ := errStatus(&r.Meta)
	logs := r.Meta.Logs
	if logs == nil {
		logs = []string{}
	}
	return marshal(struct {
		Signature string         `json:"signature"`
		Err       jsontext.Value `json:"err"`
		Logs      []string       `json:"logs"`
	}{r.sig().String(), errV, logs})
}

// signatureValue is agave's ProcessedSignatureResult.
func signatureValue(errV jsontext.Value) []byte {
	return append(append([]byte(`{"err":`), errV...), '}')
}

// blockValue is agave's RpcBlockUpdate, the block rendered as getBlock
// renders it.
func blockValue(b *block, first uint64, o encodeOpts, top uint64) []byte {
	if v, bad := unsupportedVersion(b, o); bad {
		return fmt.Appendf(nil, `{"slot":%d,"block":null,"err":{"UnsupportedTransactionVersion":%d}}`, top, v)
	}
	ui, err := renderBlock(b, first, o)
	if err != nil {
		panic("solanadevnet: rendering a block: " + err.Error()) // versions were checked above
	}
	return marshal(struct {
		Slot  uint64         `json:"slot"`
		Block *uiBlock       `json:"block"`
		Err   jsontext.Value `json:"err"`
	}{b.Slot, ui, null})
}

// unsupportedVersion finds the first transaction whose version o does not
// accept, as renderTxBody refuses it (only when transactions are shown).
func unsupportedVersion(b *block, o encodeOpts) (int, bool) {
	if o.details != "full" && o.details != "accounts" {
		return 0, false
	}
	for _, r := range b.Txs {
		if v := txVersion(r.tx); v >= 0 && (o.maxVersion < 0 || v > o.maxVersion) {
			return v, true
		}
	}
	return 0, false
}
