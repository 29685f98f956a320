package gateway_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/starknet"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/network/upstream"
)

// rollupChain is a rollup node's chain that the test grows and
// reorganises; the embedded rollup devnet never reorganises, so this
// injects the event a real sequencer's reorg is.
type rollupChain struct {
	mu   sync.Mutex
	head uint64
	gen  map[uint64]int // a block's branch: a reorg gives it a new hash
	subs []*jsonrpc.Sub
}

func (c *rollupChain) hash(n uint64) string {
	if n == 0 {
		return "0x100"
	}
	return fmt.Sprintf("0x%x%03d", n, c.gen[n]+1)
}

func (c *rollupChain) header(n uint64) string {
	return fmt.Sprintf(`{"block_hash":%q,"parent_hash":%q,"block_number":%d,"new_root":"0x1","timestamp":%d,"sequencer_address":"0x1"}`,
		c.hash(n), c.hash(n-1), n, 1700000000+n)
}

// mine adds a block and sends it to the node's subscribers.
func (c *rollupChain) mine() {
	c.mu.Lock()
	c.head++
	c.notify(c.head)
	c.mu.Unlock()
}

// reorg gives the newest depth blocks new hashes and sends them, after
// the spec's reorg notice, as a node would.
func (c *rollupChain) reorg(depth uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	from := c.head - depth + 1
	notice := fmt.Sprintf(`{"starting_block_hash":%q,"starting_block_number":%d,"ending_block_hash":%q,"ending_block_number":%d}`,
		c.hash(from), from, c.hash(c.head), c.head)
	for _, s := range c.subs {
		s.Notify([]byte(`{"jsonrpc":"2.0","method":"starknet_subscriptionReorg","params":{"subscription_id":` + string(s.ID()) + `,"result":` + notice + `}}`))
	}
	for n := from; n <= c.head; n++ {
		c.gen[n]++
		c.notify(n)
	}
}

func (c *rollupChain) notify(n uint64) {
	for _, s := range c.subs {
		s.Notify([]byte(`{"jsonrpc":"2.0","method":"starknet_subscriptionNewHeads","params":{"subscription_id":` + string(s.ID()) + `,"result":` + c.header(n) + `}}`))
	}
}

func (c *rollupChain) serve(ctx context.Context, method string, params jsontext.Value) (any, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch method {
	case "starknet_chainId":
		return jsontext.Value(`"0x534e5f5345504f4c4941"`), nil
	case "starknet_getBlockWithTxHashes":
		n := c.head
		p := string(params)
		switch {
		case strings.Contains(p, "l1_accepted"):
			n = 0
		case strings.Contains(p, "block_hash"):
			found := false
			for m := uint64(0); m <= c.head; m++ {
				if strings.Contains(p, `"`+c.hash(m)+`"`) {
					n, found = m, true
				}
			}
			if !found {
				return nil, &jsonrpc.Error{Code: 24, Message: "Block not found"}
			}
		case strings.Contains(p, "block_number"):
			fmt.Sscanf(p[strings.Index(p, `"block_number":`)+len(`"block_number":`):], "%d", &n)
		}
		return jsontext.Value(strings.TrimSuffix(c.header(n), "}") + `,"status":"ACCEPTED_ON_L2","transactions":[]}`), nil
	case "starknet_subscribeNewHeads":
		s, err := jsonrpc.Subscribe(ctx, jsontext.Value(fmt.Sprintf(`"%d"`, len(c.subs)+1)))
		if err != nil {
			return nil, err
		}
		c.subs = append(c.subs, s)
		return s.ID(), nil
	case "starknet_unsubscribe":
		return true, nil
	}
	return nil, &jsonrpc.Error{Code: -32601, Message: "method " + method + " not found"}
}

// TestRollupReorg: a rollup node reorganises its two newest blocks; a
// client subscribed to new heads through Portico gets the spec's
// starknet_subscriptionReorg for the dropped blocks (made from the chain
// view, once), then every block of the new branch, linked by
// parent_hash, and no other reorg notice.
func TestRollupReorg(t *testing.T) {
	chain := &rollupChain{gen: map[uint64]int{}}
	srv := jsonrpc.NewServer(jsonrpc.HandlerFunc(chain.serve), jsonrpc.ServerOptions{})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	for range 3 {
		chain.mine()
	}
	table := starknet.Table()
	pool := upstream.NewPool(upstream.PoolConfig{Network: "rollup", Members: []upstream.Member{{Name: "node", Node: upstream.NewWebSocket("ws"+strings.TrimPrefix(hs.URL, "http"), nil)}},
		Chain: table.Chain, PollInterval: 20 * time.Millisecond})
	if err := pool.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	methods, err := gateway.NewMethods(table, gateway.MethodsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Config{
		Keys:     apikey.NewSet(apikey.Entry{Name: "tester", Hash: apikey.Sum(testKey)}),
		Networks: []*gateway.Network{served("rollup", methods, pool, nil, false, nil, nil)},
		Limits: gateway.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 10, MaxBatchResponseBytes: 1 << 20, MaxWSMessageBytes: 1 << 20,
			MaxConnections: 100, MaxWSConnections: 100, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
			IdleTimeout: 5 * time.Second, WSIdleTimeout: time.Minute, MaxSubscriptionsPerConnection: 10},
	})
	s := startServer(t, gw, gw.NetworkHandler("rollup"))
	t.Cleanup(func() { gw.Close(); s.close() })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/ws/v3/"+testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"starknet_subscribeNewHeads","params":{}}`)); err != nil {
		t.Fatal(err)
	}
	type message struct {
		Method string `json:"method"`
		Params struct {
			Result struct {
				Hash      string `json:"block_hash"`
				Parent    string `json:"parent_hash"`
				Number    uint64 `json:"block_number"`
				StartHash string `json:"starting_block_hash"`
				StartNum  uint64 `json:"starting_block_number"`
				EndHash   string `json:"ending_block_hash"`
				EndNum    uint64 `json:"ending_block_number"`
			} `json:"result"`
		} `json:"params"`
	}
	read := func() message {
		t.Helper()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m message
		if err := json.Unmarshal(b, &m, json.RejectUnknownMembers(false)); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return m
	}
	if m := read(); m.Method != "" {
		t.Fatalf("first message %+v, want the answer", m)
	}
	seen := map[string]bool{}
	// next reads heads until block n, checking that each links to one the
	// client had.
	next := func(n uint64) {
		t.Helper()
		for {
			m := read()
			if m.Method != "starknet_subscriptionNewHeads" {
				t.Fatalf("got %s, want new heads", m.Method)
			}
			r := m.Params.Result
			if len(seen) == 0 {
				seen[r.Parent] = true // the block the stream starts on
			}
			if !seen[r.Parent] {
				t.Fatalf("head %d links to %s, which the client never got", r.Number, r.Parent)
			}
			seen[r.Hash] = true
			if r.Number == n {
				return
			}
		}
	}
	chain.mine() // 4
	next(4)
	chain.mine() // 5
	next(5)
	chain.mu.Lock()
	old4, old5 := chain.hash(4), chain.hash(5)
	chain.mu.Unlock()
	chain.reorg(2)
	m := read()
	if m.Method != "starknet_subscriptionReorg" {
		t.Fatalf("after the reorg: %s, want starknet_subscriptionReorg", m.Method)
	}
	if r := m.Params.Result; r.StartNum != 4 || r.StartHash != old4 || r.EndNum != 5 || r.EndHash != old5 {
		t.Fatalf("reorg notice %+v, want blocks 4 (%s) to 5 (%s)", r, old4, old5)
	}
	next(5) // 4' and 5'
	chain.mu.Lock()
	new5 := chain.hash(5)
	chain.mu.Unlock()
	if !seen[new5] {
		t.Fatal("the new branch's block 5 never came")
	}
	chain.mine() // 6 on the new branch
	next(6)
}
