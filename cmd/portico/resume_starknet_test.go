package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/internal/starknetspec"
)

// TestResumeStarknet: on the rollup (the embedded devnet), a new heads
// subscription with the spec's block_id starts at that past block,
// served from the chain view: every block from it, in order and linked,
// then live heads, none twice; an events subscription from a past block
// number first gets that block's events and those after it, as
// starknet_getEvents answers them, in order. Every notification is valid
// against spec 0.8.1.
func TestResumeStarknet(t *testing.T) {
	spec, err := starknetspec.Load("../../families/starknet/starknetdevnet/testdata")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "subs", Key: "subs00123456789abcdef0123456789ab", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{{Name: "starknet", Family: "starknet", Devnet: config.Devnet{BlockPeriod: 200 * time.Millisecond}}}
	s := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	call := func(method, params string, out any) {
		t.Helper()
		_, body := post(t, s.url(t, "starknet"), `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
		var r struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || r.Result == nil {
			t.Fatalf("%s: %s", method, body)
		}
		if err := json.Unmarshal(r.Result, out); err != nil {
			t.Fatalf("%s: %s: %v", method, r.Result, err)
		}
	}
	var head uint64
	for head < 6 {
		call("starknet_blockNumber", `[]`, &head)
		time.Sleep(100 * time.Millisecond)
	}
	from := head - 4
	var fromBlock struct {
		Hash string `json:"block_hash"`
	}
	call("starknet_getBlockWithTxHashes", fmt.Sprintf(`{"block_id":{"block_number":%d}}`, from), &fromBlock)
	var events struct {
		Events []json.RawMessage `json:"events"`
	}
	call("starknet_getEvents", fmt.Sprintf(`{"filter":{"from_block":{"block_number":%d},"to_block":{"block_number":%d},"chunk_size":1000}}`, from, head), &events)

	c, _, err := websocket.Dial(ctx, "ws://"+s.addr(t, "starknet")+"/ws/v3/"+cfg.Keys[0].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 22)
	type message struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
		Method string          `json:"method"`
		Params struct {
			SubscriptionID json.RawMessage `json:"subscription_id"`
			Result         json.RawMessage `json:"result"`
		} `json:"params"`
	}
	ws := &rawSession[message]{t: t, ctx: ctx, c: c}
	read := ws.read
	subscribe := func(id int, method, params string) json.RawMessage {
		t.Helper()
		m := ws.call(id, method, params, func(m message) bool { return m.Method == "" })
		if m.Error != nil {
			t.Fatalf("%s: %s", method, m.Error)
		}
		return m.Result
	}
	heads := subscribe(1, "starknet_subscribeNewHeads", fmt.Sprintf(`{"block_id":{"block_hash":"%s"}}`, fromBlock.Hash))
	evs := subscribe(2, "starknet_subscribeEvents", fmt.Sprintf(`{"block_id":{"block_number":%d}}`, from))
	var gotHeads []uint64
	var lastHash string
	var gotEvents []json.RawMessage
	for len(gotHeads) < 10 || len(gotEvents) < len(events.Events) {
		m := read()
		if err := spec.CheckNotification(m.Method, m.Params.SubscriptionID, m.Params.Result); err != nil {
			t.Fatalf("%s: %v", m.Method, err)
		}
		switch string(m.Params.SubscriptionID) {
		case string(heads):
			var h struct {
				Number uint64 `json:"block_number"`
				Hash   string `json:"block_hash"`
				Parent string `json:"parent_hash"`
			}
			json.Unmarshal(m.Params.Result, &h)
			if len(gotHeads) == 0 && h.Number != from {
				t.Fatalf("the first head is block %d, want %d (block_id's)", h.Number, from)
			}
			if len(gotHeads) > 0 && (h.Number != gotHeads[len(gotHeads)-1]+1 || h.Parent != lastHash) {
				t.Fatalf("head %d (parent %s) after %d (%s): a gap or a duplicate", h.Number, h.Parent, gotHeads[len(gotHeads)-1], lastHash)
			}
			gotHeads = append(gotHeads, h.Number)
			lastHash = h.Hash
		case string(evs):
			gotEvents = append(gotEvents, m.Params.Result)
		}
	}
	for i, want := range events.Events {
		if !jsonEqual(gotEvents[i], want) {
			t.Fatalf("event %d: %s, want %s", i, gotEvents[i], want)
		}
	}
}
