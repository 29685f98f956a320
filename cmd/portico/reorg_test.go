package main

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/go-json-experiment/json"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/evm/evmtx"
	"github.com/porticohq/portico/internal/anvil"
)

// headStream is what one client received of newHeads: in order, with
// the check that each head links by parentHash to one it had.
type headStream struct {
	name string
	mu   sync.Mutex
	seen map[common.Hash]uint64 // hash -> number
	list []streamHead
	err  error
}

type streamHead struct {
	Number uint64
	Hash   common.Hash
	Parent common.Hash
}

// newHeadOf reads a newHeads notification: the block's number, hash and
// parent; false for any other message.
func newHeadOf(msg []byte) (streamHead, bool) {
	var n struct {
		Params struct {
			Result struct {
				Number     string      `json:"number"`
				Hash       common.Hash `json:"hash"`
				ParentHash common.Hash `json:"parentHash"`
			} `json:"result"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &n, json.RejectUnknownMembers(false)) != nil || n.Params.Result.Number == "" {
		return streamHead{}, false
	}
	num, ok := new(big.Int).SetString(strings.TrimPrefix(n.Params.Result.Number, "0x"), 16)
	if !ok {
		return streamHead{}, false
	}
	return streamHead{num.Uint64(), n.Params.Result.Hash, n.Params.Result.ParentHash}, true
}

// startAnvil starts anvil with args for a test, skipping when it is not
// installed (failing under PORTICO_TEST_STRICT=1).
func startAnvil(t testing.TB, ctx context.Context, args ...string) *anvil.Node {
	t.Helper()
	node, err := anvil.Start(ctx, anvil.Options{Args: args})
	if errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Close() })
	return node
}

func newHeadStream(name string) *headStream {
	return &headStream{name: name, seen: map[common.Hash]uint64{}}
}

// add records a head; a head whose parent the client never had (once it
// had any) breaks the stream.
func (s *headStream) add(h streamHead) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) > 0 && s.err == nil {
		if _, ok := s.seen[h.Parent]; !ok {
			s.err = fmt.Errorf("%s: head %d %s has parent %s, which the client never got", s.name, h.Number, h.Hash, h.Parent)
		}
	}
	s.seen[h.Hash] = h.Number
	s.list = append(s.list, h)
}

// has reports whether the client got the block with hash.
func (s *headStream) has(hash common.Hash) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.seen[hash]
	return ok
}

func (s *headStream) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// TestReorgAnvil: anvil reorganises its chain 1 to 5 blocks deep
// (anvil_reorg) behind Portico while clients are subscribed through it
// (go-ethereum's ethclient and a raw WebSocket client): after each reorg
// every client's newHeads stream links by parentHash and holds every
// block of the new branch; the logs subscription gets the dropped blocks'
// logs again with "removed": true; and the blocks, receipts and logs
// about the reorged heights, asked (and cached) before the reorg, are
// answered from the new branch after it, as anvil answers them.
func TestReorgAnvil(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	node := startAnvil(t, ctx)
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "reorg", Key: "reorg0123456789abcdef0123456789a", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{{Name: "anvil", Family: "evm", PollInterval: 100 * time.Millisecond,
		Upstreams: []config.Upstream{{URL: node.URL(), WSURL: node.WSURL()}}}}
	s := start(t, cfg)

	direct, err := ethclient.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	raw, err := rpc.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	chainID, err := direct.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys := node.DevKeys()
	sender := &evmtx.Sender{Client: direct, ChainID: chainID, Keys: keys[:1]}
	deploy, emitter, err := sender.Deploy(ctx, keys[1], evmtx.EmitterInit)
	if err != nil {
		t.Fatal(err)
	}
	waitMined(t, ctx, direct, deploy)

	via, err := ethclient.DialContext(ctx, s.url(t, "anvil"))
	if err != nil {
		t.Fatal(err)
	}
	defer via.Close()
	// Client 1: ethclient's newHeads and logs.
	sub, err := ethclient.DialContext(ctx, s.wsURL(t, "anvil"))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ethHeads := newHeadStream("ethclient")
	headsCh := make(chan *types.Header, 4096)
	hs, err := sub.SubscribeNewHead(ctx, headsCh)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Unsubscribe()
	logsCh := make(chan types.Log, 4096)
	ls, err := sub.SubscribeFilterLogs(ctx, ethereum.FilterQuery{Addresses: []common.Address{emitter}}, logsCh)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Unsubscribe()
	var logsMu sync.Mutex
	var gotLogs []types.Log
	go func() {
		for {
			select {
			case h := <-headsCh:
				ethHeads.add(streamHead{h.Number.Uint64(), h.Hash(), h.ParentHash})
			case l := <-logsCh:
				logsMu.Lock()
				gotLogs = append(gotLogs, l)
				logsMu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	}()
	// Client 2: a raw WebSocket client.
	rawHeads := newHeadStream("raw client")
	wsc, _, err := websocket.Dial(ctx, s.wsURL(t, "anvil"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer wsc.CloseNow()
	wsc.SetReadLimit(1 << 20)
	if err := wsc.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`)); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			_, b, err := wsc.Read(ctx)
			if err != nil {
				return
			}
			if h, ok := newHeadOf(b); ok {
				rawHeads.add(h)
			}
		}
	}()
	streams := []*headStream{ethHeads, rawHeads}
	// waitAll waits until every stream has the block with hash.
	waitAll := func(hash common.Hash, what string) {
		t.Helper()
		for _, st := range streams {
			for !st.has(hash) {
				if err := st.failure(); err != nil {
					t.Fatal(err)
				}
				select {
				case <-ctx.Done():
					t.Fatalf("%s never got %s (%s)", st.name, hash, what)
				case <-time.After(10 * time.Millisecond):
				}
			}
		}
	}

	for depth := 1; depth <= 5; depth++ {
		// depth+2 blocks, each with one log of the emitter.
		var mined []common.Hash
		for range depth + 2 {
			tx, err := sender.Call(ctx, keys[0], emitter)
			if err != nil {
				t.Fatal(err)
			}
			waitMined(t, ctx, direct, tx)
			mined = append(mined, tx)
		}
		top, err := direct.HeaderByNumber(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		waitAll(top.Hash(), "the head before the reorg")
		head := top.Number.Uint64()
		from := head - uint64(depth) + 1
		// Ask, and so cache, what the reorg will change.
		filter := ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(from), ToBlock: new(big.Int).SetUint64(head), Addresses: []common.Address{emitter}}
		for range 2 {
			for n := from; n <= head; n++ {
				if _, err := via.BlockByNumber(ctx, new(big.Int).SetUint64(n)); err != nil {
					t.Fatal(err)
				}
			}
			for _, tx := range mined[len(mined)-depth:] {
				if _, err := via.TransactionReceipt(ctx, tx); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := via.FilterLogs(ctx, filter); err != nil {
				t.Fatal(err)
			}
		}
		logsMu.Lock()
		logsBefore := len(gotLogs)
		logsMu.Unlock()

		if err := raw.CallContext(ctx, nil, "anvil_reorg", depth, []any{}); err != nil {
			t.Fatalf("anvil_reorg: %v", err)
		}
		newTop, err := direct.HeaderByNumber(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if newTop.Hash() == top.Hash() {
			t.Fatalf("depth %d: anvil's head did not change", depth)
		}
		waitAll(newTop.Hash(), fmt.Sprintf("the new head after a reorg %d deep", depth))
		// Every block of the new branch reached every client, linked.
		for n := from; n <= newTop.Number.Uint64(); n++ {
			h, err := direct.HeaderByNumber(ctx, new(big.Int).SetUint64(n))
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range streams {
				if !st.has(h.Hash()) {
					t.Errorf("depth %d: %s never got block %d of the new branch", depth, st.name, n)
				}
				if err := st.failure(); err != nil {
					t.Error(err)
				}
			}
		}
		// The dropped blocks' logs came again, removed, in their order.
		deadline := time.Now().Add(10 * time.Second)
		var removed []types.Log
		for len(removed) < depth && time.Now().Before(deadline) {
			logsMu.Lock()
			removed = removed[:0]
			for _, l := range gotLogs[logsBefore:] {
				if l.Removed {
					removed = append(removed, l)
				}
			}
			logsMu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
		if len(removed) != depth {
			t.Errorf("depth %d: %d removed logs, want %d", depth, len(removed), depth)
		}
		for i, l := range removed {
			if want := mined[len(mined)-depth+i]; l.TxHash != want {
				t.Errorf("depth %d: removed log %d is of tx %s, want %s", depth, i, l.TxHash, want)
			}
		}
		// What was cached about the reorged heights is the new branch's.
		for n := from; n <= head; n++ {
			want, err := direct.BlockByNumber(ctx, new(big.Int).SetUint64(n))
			if err != nil {
				t.Fatal(err)
			}
			got, err := via.BlockByNumber(ctx, new(big.Int).SetUint64(n))
			if err != nil {
				t.Fatal(err)
			}
			if got.Hash() != want.Hash() {
				t.Errorf("depth %d: block %d through Portico is %s, anvil has %s", depth, n, got.Hash(), want.Hash())
			}
		}
		for _, tx := range mined[len(mined)-depth:] {
			want, werr := direct.TransactionReceipt(ctx, tx)
			got, gerr := via.TransactionReceipt(ctx, tx)
			switch {
			case (werr == nil) != (gerr == nil):
				t.Errorf("depth %d: receipt of %s: anvil %v, Portico %v", depth, tx, werr, gerr)
			case werr == nil && got.BlockHash != want.BlockHash:
				t.Errorf("depth %d: receipt of %s in block %s through Portico, %s on anvil", depth, tx, got.BlockHash, want.BlockHash)
			}
		}
		want, err := direct.FilterLogs(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		got, err := via.FilterLogs(ctx, filter)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, func(a, b types.Log) bool { return a.TxHash == b.TxHash && a.BlockHash == b.BlockHash }) {
			t.Errorf("depth %d: eth_getLogs through Portico %d logs, anvil %d", depth, len(got), len(want))
		}
	}
}
