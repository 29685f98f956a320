package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The heads node answers head tracking over HTTP and newHeads over
// WebSocket with the same blocks, geth's header JSON, and logs the send
// time of every head it makes; pause stops the heads.
func TestHeadsNode(t *testing.T) {
	n := newHeadsNode(20 * time.Millisecond)
	srv := httptest.NewServer(n)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	call := func(method, params string) json.RawMessage {
		t.Helper()
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatal(err)
		}
		return out.Result
	}
	if got := string(call("eth_chainId", "[]")); got != `"0x1"` {
		t.Fatalf("eth_chainId: %s", got)
	}
	var safe struct{ Number string }
	json.Unmarshal(call("eth_getBlockByNumber", `["safe",false]`), &safe)
	if safe.Number != "0x14fb160" { // headsStart - 32
		t.Fatalf("safe block: %+v", safe)
	}

	ws, err := dialSub(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	go n.produce(ctx)
	_, msg, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var note struct {
		Method string `json:"method"`
		Params struct {
			Subscription string          `json:"subscription"`
			Result       json.RawMessage `json:"result"`
		} `json:"params"`
	}
	if err := json.Unmarshal(msg, &note); err != nil || note.Method != "eth_subscription" || len(note.Params.Subscription) != 34 {
		t.Fatalf("notification %.300s: %v", msg, err)
	}
	var head struct{ Number, Hash, ParentHash, LogsBloom, BaseFeePerGas string }
	json.Unmarshal(note.Params.Result, &head)
	num, ok := headNumber(msg)
	if !ok || num != headsStart+1 || head.Number != "0x14fb181" || len(head.LogsBloom) != 514 || head.BaseFeePerGas == "" {
		t.Fatalf("head %d %+v", num, head)
	}
	var byNumber struct{ Hash, ParentHash string }
	json.Unmarshal(call("eth_getBlockByNumber", `["0x14fb181",false]`), &byNumber)
	var parent struct{ Hash string }
	json.Unmarshal(call("eth_getBlockByNumber", `["0x14fb180",false]`), &parent)
	if byNumber.Hash != head.Hash || head.ParentHash != parent.Hash {
		t.Fatalf("over HTTP block %+v, parent %+v; notified %+v", byNumber, parent, head)
	}

	last, err := nodeControl(ctx, srv.URL, "pause")
	if err != nil {
		t.Fatal(err)
	}
	sent, err := sentTimes(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(sent) != int(last-headsStart) || sent[headsStart+1] == 0 {
		t.Fatalf("last head %d, sent %v", last, sent)
	}
	time.Sleep(100 * time.Millisecond)
	if again, _ := nodeControl(ctx, srv.URL, "pause"); again != last {
		t.Fatalf("paused at %d, then at %d", last, again)
	}
	ws.Close(websocket.StatusNormalClosure, "")
}

// The subs setup runs end to end at a tiny size (20 clients, 3 heads), so
// that it keeps working: every client gets every head, after the node sent
// it, and memory and CPU are read.
func TestSubsSetupTiny(t *testing.T) {
	if testing.Short() {
		t.Skip("builds portico and runs it")
	}
	bin := filepath.Join(t.TempDir(), "portico")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "github.com/porticohq/portico/cmd/portico")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := runSubs(ctx, &cli{Portico: bin}, subsRun{clients: 20, heads: 3, interval: 100 * time.Millisecond, dial: 8,
		settle: 100 * time.Millisecond, idle: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.missed != 0 || len(r.delays) != 60 || len(r.last) != 3 || len(r.direct) != 3 {
		t.Fatalf("missed %d; %d delays, %d last, %d direct", r.missed, len(r.delays), len(r.last), len(r.direct))
	}
	for _, d := range append(append(r.delays, r.last...), r.direct...) {
		if d <= 0 || d > 10*time.Second {
			t.Fatalf("delay %s", d)
		}
	}
	if r.rssBefore <= 0 || r.rssIdle <= 0 || r.rssAfter <= 0 || r.window <= 0 || r.cpu < 0 {
		t.Fatalf("%+v", r)
	}
}
