package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/config"
)

// TestResumeSolana: on the slot chain (the embedded devnet, with its
// traffic), blockSubscribe and logsSubscribe resumed from a past slot
// (config resumeFrom) first carry every block after it, skipped slots
// left out, as getBlock answers them, in order, then go on live, no slot
// twice; slotSubscribe refuses a resume and says why.
func TestResumeSolana(t *testing.T) {
	traffic := true
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "subs", Key: "subs00123456789abcdef0123456789ab", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{{Name: "solana", Family: "solana", Devnet: config.Devnet{BlockPeriod: 40 * time.Millisecond, Traffic: &traffic}}}
	s := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	call := func(method, params string, out any) {
		t.Helper()
		_, body := post(t, s.url(t, "solana"), `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
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
	var from, now uint64
	call("getSlot", `[{"commitment":"confirmed"}]`, &from)
	for now < from+30 {
		time.Sleep(50 * time.Millisecond)
		call("getSlot", `[{"commitment":"confirmed"}]`, &now)
	}
	var blocks []uint64
	call("getBlocks", fmt.Sprintf(`[%d,%d,{"commitment":"confirmed"}]`, from+1, now), &blocks)
	var sigs []string
	for _, b := range blocks {
		var blk struct {
			Signatures []string `json:"signatures"`
		}
		call("getBlock", fmt.Sprintf(`[%d,{"commitment":"confirmed","transactionDetails":"signatures","rewards":false,"maxSupportedTransactionVersion":0}]`, b), &blk)
		sigs = append(sigs, blk.Signatures...)
	}
	if len(sigs) == 0 {
		t.Fatal("the devnet's traffic made no transactions")
	}

	c, _, err := websocket.Dial(ctx, "ws://"+s.addr(t, "solana")+"/ws/v3/"+cfg.Keys[0].Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 24)
	type message struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Method string `json:"method"`
		Params struct {
			Subscription json.RawMessage `json:"subscription"`
			Result       struct {
				Context struct {
					Slot uint64 `json:"slot"`
				} `json:"context"`
				Value struct {
					Signature string `json:"signature"`
				} `json:"value"`
			} `json:"result"`
		} `json:"params"`
	}
	ws := &rawSession[message]{t: t, ctx: ctx, c: c}
	read := ws.read
	ask := func(id int, method, params string) message {
		t.Helper()
		return ws.call(id, method, params, func(m message) bool { return m.Method == "" && string(m.ID) == fmt.Sprint(id) })
	}
	if m := ask(1, "slotSubscribe", fmt.Sprintf(`[{"resumeFrom":%d}]`, from)); m.Error == nil || m.Error.Code != -32602 || !strings.Contains(m.Error.Message, "cannot resume") {
		t.Fatalf("slotSubscribe with resumeFrom: %+v, want -32602 saying it cannot resume", m.Error)
	}
	blockSub := ask(2, "blockSubscribe", fmt.Sprintf(`["all",{"commitment":"confirmed","transactionDetails":"none","resumeFrom":%d}]`, from))
	logsSub := ask(3, "logsSubscribe", fmt.Sprintf(`["allWithVotes",{"commitment":"confirmed","resumeFrom":%d}]`, from))
	for _, m := range []message{blockSub, logsSub} {
		if m.Error != nil {
			t.Fatalf("subscribe: %s", m.Error.Message)
		}
	}
	var gotBlocks []uint64
	var gotSigs []string
	var lastLogSlot uint64
	for len(gotBlocks) < len(blocks)+10 || len(gotSigs) < len(sigs) {
		m := read()
		slot := m.Params.Result.Context.Slot
		switch string(m.Params.Subscription) {
		case string(blockSub.Result):
			if len(gotBlocks) > 0 && slot <= gotBlocks[len(gotBlocks)-1] {
				t.Fatalf("block of slot %d after %d: out of order or twice", slot, gotBlocks[len(gotBlocks)-1])
			}
			gotBlocks = append(gotBlocks, slot)
		case string(logsSub.Result):
			if slot < lastLogSlot {
				t.Fatalf("logs of slot %d after slot %d", slot, lastLogSlot)
			}
			if slices.Contains(gotSigs, m.Params.Result.Value.Signature) {
				t.Fatalf("the logs of %s twice", m.Params.Result.Value.Signature)
			}
			lastLogSlot = slot
			gotSigs = append(gotSigs, m.Params.Result.Value.Signature)
		}
	}
	if !slices.Equal(gotBlocks[:len(blocks)], blocks) {
		t.Fatalf("resumed blocks %v, want %v", gotBlocks[:len(blocks)], blocks)
	}
	if !slices.Equal(gotSigs[:len(sigs)], sigs) {
		t.Fatalf("resumed logs of %d transactions, want %d, or another order", len(sigs), len(gotSigs))
	}
}
