package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/evm/evmtx"
	"github.com/porticohq/portico/internal/anvil"
)

// resumeRig is anvil behind Portico, with clients to both.
type resumeRig struct {
	ctx    context.Context
	node   *anvil.Node
	s      *started
	direct *ethclient.Client
	raw    *rpc.Client
}

func newResumeRig(t *testing.T, ctx context.Context) *resumeRig {
	t.Helper()
	node := startAnvil(t, ctx)
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "resume", Key: "resume0123456789abcdef0123456789", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{{Name: "anvil", Family: "evm", PollInterval: 100 * time.Millisecond,
		Upstreams: []config.Upstream{{URL: node.URL(), WSURL: node.WSURL()}}}}
	r := &resumeRig{ctx: ctx, node: node, s: start(t, cfg)}
	var err error
	if r.direct, err = ethclient.DialContext(ctx, node.URL()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.direct.Close)
	if r.raw, err = rpc.DialContext(ctx, node.URL()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.raw.Close)
	return r
}

// mine has anvil seal n empty blocks, one at a time.
func (r *resumeRig) mine(t *testing.T, n int) {
	t.Helper()
	for range n {
		if err := r.raw.CallContext(r.ctx, nil, "evm_mine"); err != nil {
			t.Fatal(err)
		}
	}
}

// dial opens a go-ethereum RPC client on Portico's WebSocket.
func (r *resumeRig) dial(t *testing.T) *rpc.Client {
	t.Helper()
	c, err := rpc.DialContext(r.ctx, r.s.wsURL(t, "anvil"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// next reads one value from ch, failing the test when none comes in time.
func next[T any](t *testing.T, ctx context.Context, ch <-chan T, sub *rpc.ClientSubscription, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case err := <-sub.Err():
		t.Fatalf("%s: subscription ended: %v", what, err)
	case <-ctx.Done():
		t.Fatalf("%s: nothing came", what)
	}
	var zero T
	return zero
}

// chainFrom is anvil's chain from block from to its head.
func (r *resumeRig) chainFrom(t *testing.T, from uint64) []*types.Header {
	t.Helper()
	head, err := r.direct.HeaderByNumber(r.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []*types.Header
	for n := from; n <= head.Number.Uint64(); n++ {
		h, err := r.direct.HeaderByNumber(r.ctx, new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
	}
	return out
}

// resumeHeads reads heads of a newHeads subscription resumed from last
// until it has want's blocks, checking that each is the one want has
// there, in order; then three more blocks come live, each once, linked.
func resumeHeads(t *testing.T, r *resumeRig, last common.Hash, want []*types.Header) {
	t.Helper()
	c := r.dial(t)
	ch := make(chan *types.Header, 256)
	sub, err := c.EthSubscribe(r.ctx, ch, "newHeads", map[string]any{"resumeFrom": last})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for i, w := range want {
		got := next(t, r.ctx, ch, sub, fmt.Sprintf("backfilled head %d of %d", i+1, len(want)))
		if got.Hash() != w.Hash() {
			t.Fatalf("backfilled head %d: block %d %s, want block %d %s", i+1, got.Number, got.Hash(), w.Number, w.Hash())
		}
	}
	prev := want[len(want)-1]
	r.mine(t, 3)
	for i := range 3 {
		got := next(t, r.ctx, ch, sub, fmt.Sprintf("live head %d", i+1))
		if got.ParentHash != prev.Hash() || got.Number.Uint64() != prev.Number.Uint64()+1 {
			t.Fatalf("live head %d: block %d %s (parent %s) after block %d %s: a gap or a duplicate at the seam",
				i+1, got.Number, got.Hash(), got.ParentHash, prev.Number, prev.Hash())
		}
		prev = got
	}
	select {
	case extra := <-ch:
		t.Fatalf("an extra head after the live ones: block %d %s", extra.Number, extra.Hash())
	case <-time.After(300 * time.Millisecond):
	}
}

// TestResumeNewHeads: a newHeads client (go-ethereum's rpc client) reads
// 5 blocks, disconnects, 10 blocks pass, and it subscribes again with
// resumeFrom the last hash it saw: it gets the 10 in order, then live
// heads, none twice. Then the same across a reorg (anvil_reorg) of the
// block it resumes from: the new branch from the common ancestor on.
func TestResumeNewHeads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newResumeRig(t, ctx)

	read5 := func() *types.Header {
		c := r.dial(t)
		ch := make(chan *types.Header, 64)
		sub, err := c.EthSubscribe(ctx, ch, "newHeads")
		if err != nil {
			t.Fatal(err)
		}
		r.mine(t, 5)
		var last *types.Header
		for i := range 5 {
			last = next(t, ctx, ch, sub, fmt.Sprintf("head %d", i+1))
		}
		sub.Unsubscribe()
		c.Close()
		return last
	}

	last := read5()
	r.mine(t, 10)
	want := r.chainFrom(t, last.Number.Uint64()+1)
	if len(want) != 10 {
		t.Fatalf("anvil has %d blocks after the last seen, want 10", len(want))
	}
	resumeHeads(t, r, last.Hash(), want)

	// Across a reorg of the block it resumes from.
	last = read5()
	if err := r.raw.CallContext(ctx, nil, "anvil_reorg", 3, []any{}); err != nil {
		t.Fatalf("anvil_reorg: %v", err)
	}
	r.mine(t, 10)
	if h, _ := r.direct.HeaderByNumber(ctx, last.Number); h.Hash() == last.Hash() {
		t.Fatal("anvil_reorg left the block the client saw on the chain")
	}
	ancestor := last.Number.Uint64() - 3
	want = r.chainFrom(t, ancestor+1)
	resumeHeads(t, r, last.Hash(), want)
}

// TestResumeLogs: a logs client reads the emitter's logs of three
// blocks, disconnects; anvil reorganises the last two away and more logs
// come; resumed from the last block it saw, the client gets the two
// dropped blocks' logs with "removed": true, then every log of the chain
// after the common ancestor, then live logs, none twice.
func TestResumeLogs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := newResumeRig(t, ctx)
	chainID, err := r.direct.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys := r.node.DevKeys()
	sender := &evmtx.Sender{Client: r.direct, ChainID: chainID, Keys: keys[:1]}
	deploy, emitter, err := sender.Deploy(ctx, keys[1], evmtx.EmitterInit)
	if err != nil {
		t.Fatal(err)
	}
	waitMined(t, ctx, r.direct, deploy)
	emit := func(n int) []common.Hash {
		var txs []common.Hash
		for range n {
			tx, err := sender.Call(ctx, keys[0], emitter)
			if err != nil {
				t.Fatal(err)
			}
			waitMined(t, ctx, r.direct, tx)
			txs = append(txs, tx)
		}
		return txs
	}
	filter := map[string]any{"address": emitter}

	c := r.dial(t)
	ch := make(chan types.Log, 64)
	sub, err := c.EthSubscribe(ctx, ch, "logs", filter)
	if err != nil {
		t.Fatal(err)
	}
	first := emit(3)
	var seen []types.Log
	for i := range 3 {
		seen = append(seen, next(t, ctx, ch, sub, fmt.Sprintf("log %d", i+1)))
	}
	for i, l := range seen {
		if l.TxHash != first[i] {
			t.Fatalf("log %d is of tx %s, want %s", i, l.TxHash, first[i])
		}
	}
	sub.Unsubscribe()
	c.Close()
	last := seen[2]

	if err := r.raw.CallContext(ctx, nil, "anvil_reorg", 2, []any{}); err != nil {
		t.Fatalf("anvil_reorg: %v", err)
	}
	emit(2)
	ancestor := last.BlockNumber - 2
	want, err := r.direct.FilterLogs(ctx, ethereumQuery(emitter, ancestor+1))
	if err != nil {
		t.Fatal(err)
	}

	c = r.dial(t)
	ch = make(chan types.Log, 64)
	resumed := map[string]any{"address": emitter, "resumeFrom": last.BlockHash}
	sub, err = c.EthSubscribe(ctx, ch, "logs", resumed)
	if err != nil {
		t.Fatal(err)
	}
	for i, dropped := range seen[1:] {
		got := next(t, ctx, ch, sub, fmt.Sprintf("removed log %d", i+1))
		if !got.Removed || got.TxHash != dropped.TxHash || got.BlockHash != dropped.BlockHash {
			t.Fatalf("removed log %d: tx %s in block %s removed=%v, want tx %s in %s removed", i+1, got.TxHash, got.BlockHash, got.Removed, dropped.TxHash, dropped.BlockHash)
		}
	}
	for i, w := range want {
		got := next(t, ctx, ch, sub, fmt.Sprintf("backfilled log %d of %d", i+1, len(want)))
		if got.Removed || got.TxHash != w.TxHash || got.BlockHash != w.BlockHash || got.Index != w.Index {
			t.Fatalf("backfilled log %d: tx %s in block %s, want tx %s in %s", i+1, got.TxHash, got.BlockHash, w.TxHash, w.BlockHash)
		}
	}
	live := emit(2)
	for i, tx := range live {
		got := next(t, ctx, ch, sub, fmt.Sprintf("live log %d", i+1))
		if got.TxHash != tx || got.Removed {
			t.Fatalf("live log %d is of tx %s (removed %v), want %s: a gap or a duplicate at the seam", i+1, got.TxHash, got.Removed, tx)
		}
	}
	select {
	case extra := <-ch:
		t.Fatalf("an extra log: tx %s", extra.TxHash)
	case <-time.After(300 * time.Millisecond):
	}
}

// TestResumeRefused: a resume point that is no hash, unknown, or older
// than limits.max_resume_blocks is refused with an error naming the
// field (and the bound).
func TestResumeRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx)
	cfg := config.DefaultConfig()
	cfg.Limits.MaxResumeBlocks = 4
	cfg.Keys = []config.Key{{Name: "resume", Key: "resume0123456789abcdef0123456789", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{{Name: "anvil", Family: "evm", PollInterval: 100 * time.Millisecond,
		Upstreams: []config.Upstream{{URL: node.URL(), WSURL: node.WSURL()}}}}
	s := start(t, cfg)
	raw, err := rpc.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.CallContext(ctx, nil, "anvil_mine", "0x8"); err != nil {
		t.Fatal(err)
	}
	direct := ethclient.NewClient(raw)
	old, err := direct.HeaderByNumber(ctx, big.NewInt(1))
	if err != nil {
		t.Fatal(err)
	}
	c, err := rpc.DialContext(ctx, s.wsURL(t, "anvil"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The served chain must have reached the head for the bound to apply.
	for {
		var b struct {
			Number string `json:"number"`
		}
		if err := c.CallContext(ctx, &b, "eth_getBlockByNumber", "latest", false); err == nil && b.Number == "0x8" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, tc := range []struct {
		name   string
		params []any
		want   []string
	}{
		{"not a hash", []any{"newHeads", map[string]any{"resumeFrom": "0x12"}}, []string{"options.resumeFrom", "32-byte hash"}},
		{"other options", []any{"newHeads", map[string]any{"from": "0x12"}}, []string{"options", "resumeFrom"}},
		{"unknown", []any{"newHeads", map[string]any{"resumeFrom": "0x" + strings.Repeat("12", 32)}}, []string{"options.resumeFrom", "not known"}},
		{"too old", []any{"newHeads", map[string]any{"resumeFrom": old.Hash()}}, []string{"options.resumeFrom", "at most 4 blocks back", "limits.max_resume_blocks"}},
		{"logs too old", []any{"logs", map[string]any{"resumeFrom": old.Hash()}}, []string{"filter.resumeFrom", "at most 4 blocks back"}},
		{"logs not a hash", []any{"logs", map[string]any{"resumeFrom": 7}}, []string{"filter.resumeFrom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := make(chan any, 1)
			sub, err := c.EthSubscribe(ctx, ch, tc.params...)
			if err == nil {
				sub.Unsubscribe()
				t.Fatal("subscribed; want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if e, ok := err.(rpc.Error); !ok || e.ErrorCode() != -32602 {
				t.Errorf("error %v: want code -32602", err)
			}
		})
	}
}

// ethereumQuery asks for address's logs from block from on.
func ethereumQuery(address common.Address, from uint64) ethereum.FilterQuery {
	return ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(from), Addresses: []common.Address{address}}
}

// rawSession reads a WebSocket's JSON-RPC messages as M, the test's own
// shape of them; the notifications that come before an answer are read
// again after it.
type rawSession[M any] struct {
	t     *testing.T
	ctx   context.Context
	c     *websocket.Conn
	early []M
}

// read returns the next message.
func (s *rawSession[M]) read() M {
	s.t.Helper()
	if len(s.early) > 0 {
		m := s.early[0]
		s.early = s.early[1:]
		return m
	}
	_, b, err := s.c.Read(s.ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	var m M
	if err := json.Unmarshal(b, &m); err != nil {
		s.t.Fatalf("%s: %v", b, err)
	}
	return m
}

// call sends method with params (JSON) as call id and returns the message
// answer says is its answer; the messages before it are kept for read.
func (s *rawSession[M]) call(id int, method, params string, answer func(M) bool) M {
	s.t.Helper()
	msg := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + params + `}`
	if err := s.c.Write(s.ctx, websocket.MessageText, []byte(msg)); err != nil {
		s.t.Fatal(err)
	}
	var held []M
	for {
		m := s.read()
		if answer(m) {
			s.early = append(held, s.early...)
			return m
		}
		held = append(held, m)
	}
}
