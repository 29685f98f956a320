package starknetdevnet

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

type headerJSON struct {
	BlockHash   string `json:"block_hash"`
	ParentHash  string `json:"parent_hash"`
	BlockNumber uint64 `json:"block_number"`
	NewRoot     string `json:"new_root"`
}

// expectHeads reads headers from..to and checks each against
// getBlockWithTxHashes over HTTP.
func expectHeads(t *testing.T, w *wsClient, c *client, id json.RawMessage, from, to uint64) {
	t.Helper()
	for n := from; n <= to; n++ {
		h := decodeJSON[headerJSON](t, w.expect(notifyNewHeads, id).Params.Result)
		blk := decodeJSON[headerJSON](t, c.must("starknet_getBlockWithTxHashes", `{"block_id":{"block_number":`+strconv.FormatUint(n, 10)+`}}`))
		if h != blk {
			t.Fatalf("header %+v, want block %d %+v", h, n, blk)
		}
	}
}

// TestWSNewHeads replays headers from a past block, then follows new ones
// in order, with no gap and no duplicate.
func TestWSNewHeads(t *testing.T) {
	spec := loadWSSpec(t)
	d, c := startDevnet(t, Config{Clock: fixedClock})
	buildChain(t, d, 3, 1)
	w := dialWS(t, d, spec)

	past := w.subscribe("starknet_subscribeNewHeads", `{"block_id":{"block_number":1}}`)
	expectHeads(t, w, c, past, 1, 3)
	buildChain(t, d, 2, 1)
	expectHeads(t, w, c, past, 4, 5)

	// The default is latest: its header first. By hash and positional
	// "latest" work too, under the rollup_ name as well.
	latest := w.subscribe("rollup_subscribeNewHeads", "")
	expectHeads(t, w, c, latest, 5, 5)
	hash := decodeJSON[headerJSON](t, c.must("starknet_getBlockWithTxHashes", `{"block_id":{"block_number":4}}`)).BlockHash
	byHash := w.subscribe("starknet_subscribeNewHeads", `[{"block_hash":"`+hash+`"}]`)
	expectHeads(t, w, c, byHash, 4, 5)
	tag := w.subscribe("starknet_subscribeNewHeads", `["latest"]`)
	expectHeads(t, w, c, tag, 5, 5)

	// Each subscription gets block 6 exactly once, in its own order.
	seal(t, d)
	got := map[string]int{}
	for range 4 {
		m := w.next()
		h := decodeJSON[headerJSON](t, m.Params.Result)
		if m.Method != notifyNewHeads || h.BlockNumber != 6 {
			t.Fatalf("got %s, want header 6", m.Raw)
		}
		got[string(m.Params.SubscriptionID)]++
	}
	for _, id := range []json.RawMessage{past, latest, byHash, tag} {
		if got[string(id)] != 1 {
			t.Fatalf("subscription %s got block 6 %d times", id, got[string(id)])
		}
	}
	// No duplicate sneaks in before block 7 (the first subscription's
	// next notification is block 7's).
	for _, id := range []json.RawMessage{latest, byHash, tag} {
		if res := w.must("starknet_unsubscribe", `[`+string(id)+`]`); string(res) != "true" {
			t.Fatalf("unsubscribe %s: %s", id, res)
		}
	}
	seal(t, d)
	expectHeads(t, w, c, past, 7, 7)
}

// eventKey identifies an event for comparison.
func eventKey(e eventJSON) string {
	b, _ := json.Marshal(e)
	return string(b)
}

// expectEvents reads len(want) events and compares them with want.
func expectEvents(t *testing.T, w *wsClient, id json.RawMessage, want []eventJSON) {
	t.Helper()
	for i, e := range want {
		got := decodeJSON[eventJSON](t, w.expect(notifyEvents, id).Params.Result)
		if got.BlockHash == nil || got.BlockNumber == nil {
			t.Fatalf("event %d has no block: %+v", i, got)
		}
		if eventKey(got) != eventKey(e) {
			t.Fatalf("event %d of %d:\n%s\nwant\n%s", i, len(want), eventKey(got), eventKey(e))
		}
	}
}

// TestWSEvents checks filters and a start in the past against getEvents:
// the replay, then live blocks, with no gap and no duplicate.
func TestWSEvents(t *testing.T) {
	spec := loadWSSpec(t)
	d, c := startDevnet(t, Config{Clock: fixedClock})
	buildChain(t, d, 4, 3)
	accts := d.world.accounts()
	acct := starknettx.Hex(&accts[0])
	token, transfer := starknettx.Hex(&tokenAddress), starknettx.Hex(&selTransfer)
	cases := []struct {
		name, params string // params with BLOCK for the block id
		filter       string // the same filter for getEvents
	}{
		{"everything", `{"block_id":BLOCK}`, ``},
		{"token transfers", `{"from_address":"` + token + `","keys":[["` + transfer + `"]],"block_id":BLOCK}`,
			`"address":"` + token + `","keys":[["` + transfer + `"]],`},
		{"from one account, positional", `[null,[[],["` + acct + `"]],BLOCK]`, `"keys":[[],["` + acct + `"]],`},
		{"trailing empty position", `{"keys":[["` + transfer + `"],[],[]],"block_id":BLOCK}`, `"keys":[["` + transfer + `"]],`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := dialWS(t, d, spec)
			id := w.subscribe("starknet_subscribeEvents", replaceBlock(tc.params, `{"block_number":2}`))
			head := decodeJSON[uint64](t, c.must("starknet_blockNumber", ""))
			replay := pageAll(t, c, nil, tc.filter+`"from_block":{"block_number":2},"to_block":{"block_number":`+strconv.FormatUint(head, 10)+`},`, 1024)
			if len(replay) == 0 {
				t.Fatal("the filter matches nothing; the test proves nothing")
			}
			expectEvents(t, w, id, replay)
			// Live: two more blocks, then a third whose first event must be
			// the next notification.
			for range 2 {
				traffic(t, d)
				n := seal(t, d)
				live := pageAll(t, c, nil, tc.filter+`"from_block":{"block_number":`+strconv.FormatUint(n, 10)+`},"to_block":"latest",`, 1024)
				expectEvents(t, w, id, live)
			}
			for {
				traffic(t, d)
				n := seal(t, d)
				live := pageAll(t, c, nil, tc.filter+`"from_block":{"block_number":`+strconv.FormatUint(n, 10)+`},"to_block":"latest",`, 1024)
				if len(live) > 0 {
					expectEvents(t, w, id, live[:1])
					break
				}
			}
		})
	}
	// Default (latest): the latest block's events first.
	w := dialWS(t, d, spec)
	id := w.subscribe("rollup_subscribeEvents", `{"from_address":"`+token+`"}`)
	expectEvents(t, w, id, pageAll(t, c, nil, `"address":"`+token+`","from_block":"latest","to_block":"latest",`, 1024))
}

func replaceBlock(params, block string) string {
	out := []byte(params)
	for i := 0; i+5 <= len(out); i++ {
		if string(out[i:i+5]) == "BLOCK" {
			return string(out[:i]) + block + string(out[i+5:])
		}
	}
	return params
}

// TestWSReplayPaced starts subscriptions 1024 blocks back over more
// headers and events than a connection may queue (1024): the replay is
// paced to what the client reads, so the connection stays up and nothing
// is lost. One block further back is TOO_MANY_BLOCKS_BACK.
func TestWSReplayPaced(t *testing.T) {
	spec := loadWSSpec(t)
	d, c := startDevnet(t, Config{Clock: fixedClock})
	const head, perBlock = 1100, 16
	if err := d.SeedEvents(context.Background(), head, perBlock, 7); err != nil {
		t.Fatal(err)
	}
	w := dialWSWith(t, d, spec, &net.Dialer{Control: smallReceiveBuffer})
	from := strconv.Itoa(head - MaxBlocksBack)
	if _, err := w.call("starknet_subscribeNewHeads", `{"block_id":{"block_number":`+strconv.Itoa(head-MaxBlocksBack-1)+`}}`); err == nil || err.Code != 68 || err.Message != "Cannot go back more than 1024 blocks" {
		t.Fatalf("1025 blocks back: %v", err)
	}
	if _, err := w.call("starknet_subscribeEvents", `{"block_id":{"block_number":0}}`); err == nil || err.Code != 68 {
		t.Fatalf("events from genesis: %v", err)
	}
	heads := w.subscribe("starknet_subscribeNewHeads", `{"block_id":{"block_number":`+from+`}}`)
	for n := head - MaxBlocksBack; n <= head; n++ {
		if h := decodeJSON[headerJSON](t, w.expect(notifyNewHeads, heads).Params.Result); h.BlockNumber != uint64(n) {
			t.Fatalf("header %d, want %d", h.BlockNumber, n)
		}
	}
	w.must("starknet_unsubscribe", `[`+string(heads)+`]`)
	evs := w.subscribe("starknet_subscribeEvents", `[null,null,{"block_number":`+from+`}]`)
	want := pageAll(t, c, nil, `"from_block":{"block_number":`+from+`},"to_block":"latest",`, 1024)
	if len(want) != (MaxBlocksBack+1)*perBlock {
		t.Fatalf("%d events in range", len(want))
	}
	// The client reads nothing until the server's queue for it has
	// reached the pacing mark (its small receive buffer lets little pile
	// up in the kernel); the connection stays up and every event arrives.
	waitFor(t, "the replay to reach the pacing mark", func() bool {
		d.subs.mu.Lock()
		defer d.subs.mu.Unlock()
		for f := range d.subs.followers {
			return f.sub.Conn().Queued() >= paceQueue
		}
		return false
	})
	expectEvents(t, w, evs, want)

	// Closing the connection stops the follower.
	w.c.CloseNow()
	waitFor(t, "the follower to stop", func() bool {
		d.subs.mu.Lock()
		defer d.subs.mu.Unlock()
		return len(d.subs.followers) == 0 && len(d.subs.conns) == 0
	})
}

// TestWSBackgroundClose runs subscriptions on a devnet that seals and
// trades on its own timer, then closes the devnet under them: the client
// sees the server go away, and no goroutine is left (goleak, in TestMain).
func TestWSBackgroundClose(t *testing.T) {
	spec := loadWSSpec(t)
	d, _ := startDevnet(t, Config{BlockPeriod: 40 * time.Millisecond, Traffic: true})
	w := dialWS(t, d, spec)
	heads := w.subscribe("starknet_subscribeNewHeads", "")
	events := w.subscribe("starknet_subscribeEvents", `{"keys":[["`+starknettx.Hex(&selTransfer)+`"]]}`)
	pending := w.subscribe("starknet_subscribePendingTransactions", `{"transaction_details":true}`)
	seen := map[string]int{}
	var last uint64
	for seen[string(heads)] < 4 || seen[string(events)] < 4 || seen[string(pending)] < 4 {
		m := w.next()
		if err := spec.CheckNotification(m.Method, m.Params.SubscriptionID, m.Params.Result); err != nil {
			t.Fatalf("%s: %v", m.Raw, err)
		}
		if string(m.Params.SubscriptionID) == string(heads) {
			n := decodeJSON[headerJSON](t, m.Params.Result).BlockNumber
			if seen[string(heads)] > 0 && n != last+1 {
				t.Fatalf("header %d after %d", n, last)
			}
			last = n
		}
		seen[string(m.Params.SubscriptionID)]++
	}
	// The client keeps reading, so it answers the close handshake.
	ended := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for {
			if _, _, err := w.c.Read(ctx); err != nil {
				ended <- err
				return
			}
		}
	}()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("connection ended with %v, want going away", err)
	}
}
