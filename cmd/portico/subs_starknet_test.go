package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/internal/starknetspec"
)

// TestSubscriptionsStarknet: new heads and events through the gateway,
// in front of the embedded rollup devnet, each notification valid against
// spec 0.8.1's WebSocket schemas; the rollup_ names work too.
func TestSubscriptionsStarknet(t *testing.T) {
	spec, err := starknetspec.Load("../../families/starknet/starknetdevnet/testdata")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "subs", Key: "subs00123456789abcdef0123456789ab", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{{Name: "starknet", Family: "starknet", Devnet: config.Devnet{BlockPeriod: 200 * time.Millisecond}}}
	s := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+s.addr(t, "starknet")+"/ws/v3/"+cfg.Keys[0].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 22)
	type message struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Method string          `json:"method"`
		Params struct {
			SubscriptionID json.RawMessage `json:"subscription_id"`
			Result         json.RawMessage `json:"result"`
		} `json:"params"`
	}
	read := func() message {
		t.Helper()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m message
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return m
	}
	subscribe := func(id int, method, params string) json.RawMessage {
		t.Helper()
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":`+string(rune('0'+id))+`,"method":"`+method+`","params":`+params+`}`)); err != nil {
			t.Fatal(err)
		}
		for {
			m := read()
			if m.Method == "" {
				if err := spec.CheckID(m.Result); err != nil {
					t.Fatalf("%s answered %s: %v", method, m.Result, err)
				}
				return m.Result
			}
		}
	}
	heads := subscribe(1, "starknet_subscribeNewHeads", `{}`)
	events := subscribe(2, "rollup_subscribeEvents", `{}`)
	var sawHead, sawEvent int
	var last uint64
	for sawHead < 3 || sawEvent < 1 {
		m := read()
		if err := spec.CheckNotification(m.Method, m.Params.SubscriptionID, m.Params.Result); err != nil {
			t.Fatalf("%s: %v", m.Method, err)
		}
		switch string(m.Params.SubscriptionID) {
		case string(heads):
			var h struct {
				BlockNumber uint64 `json:"block_number"`
			}
			json.Unmarshal(m.Params.Result, &h)
			if sawHead > 0 && h.BlockNumber != last+1 {
				t.Fatalf("head %d after %d", h.BlockNumber, last)
			}
			last = h.BlockNumber
			sawHead++
		case string(events):
			sawEvent++
		}
	}
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":9,"method":"starknet_unsubscribe","params":{"subscription_id":`+string(heads)+`}}`)); err != nil {
		t.Fatal(err)
	}
	for {
		m := read()
		if string(m.ID) == "9" {
			if string(m.Result) != "true" {
				t.Fatalf("unsubscribe: %s", m.Result)
			}
			break
		}
	}
}
