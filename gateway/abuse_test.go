package gateway_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/jsonrpc"
)

// held is the memory the Go runtime holds for this process: what it has
// mapped from the OS less what it has returned. It is what a client or a
// node can make the gateway hold (every byte of it is Go memory), read
// from runtime/metrics rather than from RSS so that the bounds below mean
// the same under -race, whose shadow memory grows RSS several times over
// what the program itself holds.
func held() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// peakHeld samples held until stop is called, which returns the largest
// growth over what was held at the start (taken after a collection, so
// that earlier tests' garbage does not count).
func peakHeld(t *testing.T) (stop func() int64) {
	t.Helper()
	// Collect often, so that what is held follows what is live rather
	// than the garbage a default heap goal lets pile up between
	// collections (up to as much again as is live): the peak then says
	// what the gateway kept, not when the collector last ran.
	gcPercent := debug.SetGCPercent(20)
	runtime.GC()
	debug.FreeOSMemory()
	base := held()
	var peak atomic.Int64
	peak.Store(base)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if r := held(); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	})
	return func() int64 {
		close(done)
		wg.Wait()
		debug.SetGCPercent(gcPercent)
		if r := held(); r > peak.Load() {
			peak.Store(r)
		}
		return peak.Load() - base
	}
}

// TestNonReadingCallerBounded: a WebSocket client that sends calls with
// 128 KB answers as fast as it can for 5 s and never reads them does not
// grow the gateway: reading its socket stops once 4 MiB of answers wait
// for it, and at most 64 more are in flight. Before, every answer was
// queued (3.7 GB in 4.9 s in the security review).
func TestNonReadingCallerBounded(t *testing.T) {
	e := newEnv(t, options{limits: func(l *gateway.Limits) { l.MaxWSMessageBytes = 1 << 20 }})
	block := []byte(`"` + strings.Repeat("f", 128<<10) + `"`)
	e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":`))
		w.Write(block)
		w.Write([]byte(`}`))
	})
	c, _, err := dialWS(t, e, testKey)
	if err != nil {
		t.Fatal(err)
	}
	stop := peakHeld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sent := 0
	for ctx.Err() == nil {
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":`+strconv.Itoa(sent)+`,"method":"real_echo"}`)); err != nil {
			break
		}
		sent++
	}
	growth := stop()
	calls := e.node.calls.Load()
	// 64 answers in flight and 4 MiB queued are 12 MiB; the node's
	// connections, the runtime's headroom and the socket buffers the rest.
	const bound = 128 << 20
	if growth > bound {
		t.Errorf("memory held grew %d MB for a client that does not read (bound %d MB)", growth>>20, bound>>20)
	}
	if calls > 1000 {
		t.Errorf("the node was asked %d times for a client that read none of the answers", calls)
	}
	t.Logf("client sent %d calls in 5 s, the node answered %d, memory held grew %d MB", sent, calls, growth>>20)
}

// TestNonReadingSubscribersBounded: 100 subscribers that never read, all
// under one key, cannot make the gateway hold more than the key's memory
// budget: the ones with a backlog are cut off with 1008 once it is spent.
// Before, each could hold 16 MiB (1.6 GB for 100; 2 GB of RSS in the
// security review).
func TestNonReadingSubscribersBounded(t *testing.T) {
	chain := newFakeChain(t, 5*time.Millisecond, 32<<10)
	n := newFakeWSNode(t, chain)
	const keyBudget = 32 << 20
	gw, url := subsEnv(t, func(l *gateway.Limits) {
		l.KeyMemoryBytes = keyBudget
		l.MaxNotificationQueue = 1 << 20
	}, n)
	const clients = 100
	conns := make([]*websocket.Conn, clients)
	for i := range conns {
		conns[i] = subscribeHeads(t, url)
	}
	stop := peakHeld(t)
	// Heads, up to 6 MB/s for each client, until the key's budget is
	// nearly spent: first the clients' socket buffers fill (as much as the
	// kernel gives them, which a loaded machine takes long to reach), then
	// the gateway's queues. Then 20 heads more, 13 MB, which do not fit:
	// the budget refuses, and the clients with a backlog are cut off.
	var most int64
	sample := func() { most = max(most, gw.Memory().Used()) }
	for deadline := time.Now().Add(2 * time.Minute); most < keyBudget-keyBudget/8; {
		if time.Now().After(deadline) {
			t.Fatalf("the key's budget never filled: %d bytes held at most", most)
		}
		time.Sleep(10 * time.Millisecond) // sampling, until the budget has filled
		sample()
	}
	for range 20 {
		<-chain.next()
		sample()
	}
	if slack := int64(clients * (64<<10 + 40<<10)); most > keyBudget+slack {
		t.Errorf("the process held %d bytes at most, key budget %d", most, keyBudget)
	}
	// Then the chain stops and the gateway shuts down: a client that was
	// cut off reads 1008 at the end of what reached it, the others 1001.
	chain.halt()
	closed := make(chan struct{})
	go func() { gw.Close(); close(closed) }()
	var wg sync.WaitGroup
	var cut atomic.Int64
	for _, c := range conns {
		wg.Go(func() {
			var err error
			for err == nil {
				_, _, err = c.Read(context.Background())
			}
			if websocket.CloseStatus(err) == websocket.StatusPolicyViolation {
				cut.Add(1)
			}
		})
	}
	wg.Wait()
	<-closed
	if cut.Load() == 0 {
		t.Error("no subscriber was cut off")
	}
	growth := stop()
	const bound = 256 << 20
	if growth > bound {
		t.Errorf("memory held grew %d MB for %d subscribers that do not read (key budget %d MB, bound %d MB)", growth>>20, clients, keyBudget>>20, bound>>20)
	}
	t.Logf("memory held grew %d MB; the process's budget held %d bytes at most; %d of %d subscribers cut off", growth>>20, most, cut.Load(), clients)
}

// TestCutOffSubscriberGetsItsReason: subscribers that never read (their
// sockets take little: a 64 KiB receive buffer) are cut off (1008) while a
// write to each is blocked on its full socket: by the key's memory budget,
// or, those the budget spared, by the write timeout (10 s). Each reads
// again 11 s after the budget filled, when the blocked write's own
// deadline has passed, and
// finds the close frame with its reason behind what reached it: the close
// has a deadline of its own, counted from the cut-off. Before, the blocked
// write failed at its deadline and the socket was dropped without a close
// frame (docs/subscriptions.md promised one). A client no write ever
// blocked on gets 1001 when the gateway shuts down at the end.
func TestCutOffSubscriberGetsItsReason(t *testing.T) {
	chain := newFakeChain(t, 5*time.Millisecond, 32<<10)
	n := newFakeWSNode(t, chain)
	gw, url := subsEnv(t, func(l *gateway.Limits) {
		l.KeyMemoryBytes = 16 << 20
		l.MaxNotificationQueue = 1 << 20
	}, n)
	smallBuffer := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			err = c.(*net.TCPConn).SetReadBuffer(64 << 10)
		}
		return c, err
	}}}
	const clients = 10
	conns := make([]*websocket.Conn, clients)
	for i := range conns {
		c, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPClient: smallBuffer})
		if err != nil {
			t.Fatal(err)
		}
		c.SetReadLimit(1 << 22)
		t.Cleanup(func() { c.CloseNow() })
		if err := c.Write(context.Background(), websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`)); err != nil {
			t.Fatal(err)
		}
		if _, b, err := c.Read(context.Background()); err != nil || !strings.Contains(string(b), `"result":"0x`) {
			t.Fatalf("subscribe: %s %v", b, err)
		}
		conns[i] = c
	}
	// Heads until the key's budget has filled once (the notifications
	// queued behind blocked writes count against it), so some clients
	// were cut off by it; then the clients stay away past the write
	// timeout of the writes blocked on them (the scenario, not a
	// synchronisation), and read.
	for deadline := time.Now().Add(time.Minute); gw.Memory().Used() < 12<<20; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the key's budget never filled: %d bytes held", gw.Memory().Used())
		}
	}
	for range 20 { // and past it, 6 MB more: the budget cuts
		<-chain.next()
	}
	chain.halt()
	time.Sleep(11 * time.Second)
	reasons := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var err error
			for err == nil {
				_, _, err = c.Read(ctx)
			}
			var ce websocket.CloseError
			switch {
			case errors.As(err, &ce) && ce.Code == websocket.StatusPolicyViolation && (ce.Reason == jsonrpc.ReasonSlowReader || ce.Reason == jsonrpc.ReasonWriteTimeout):
			case errors.As(err, &ce) && ce.Code == websocket.StatusGoingAway:
			default:
				t.Errorf("client %d ended with %v, want close 1008 with its reason", i, err)
				return
			}
			mu.Lock()
			reasons[ce.Code.String()+" "+ce.Reason]++
			mu.Unlock()
		})
	}
	gw.Close() // ends the sockets no write blocked on; the others have ended
	wg.Wait()
	if reasons["StatusPolicyViolation "+jsonrpc.ReasonSlowReader] == 0 {
		t.Errorf("no subscriber was cut off by the budget: %v", reasons)
	}
	t.Logf("closes: %v", reasons)
}

// bigNode makes the test node answer every call with a string result of
// size bytes, streamed (chunked) so that the node holds none of it.
func bigNode(e *env, size int) {
	chunk := []byte(strings.Repeat("a", 64<<10))
	e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":"`))
		for n := 0; n < size; n += len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), size-n)]); err != nil {
				return
			}
		}
		w.Write([]byte(`"}`))
	})
}

// TestLargeResultsBounded: a 200 MB result is refused with -32056 while it
// is read (at limits.max_result_bytes, 64 MiB by default in the nodes'
// options), and a batch of ten 20 MB results under a 21 MB batch bound is
// answered with the one that fits; neither makes the gateway hold much
// more than its bounds. Before, the 200 MB result was returned whole (+495
// MB RSS) and the batch peaked at 0.86 to 1.29 GB.
func TestLargeResultsBounded(t *testing.T) {
	e := newEnv(t, options{limits: func(l *gateway.Limits) {
		l.MaxBatchResponseBytes = 21 << 20
		l.MaxBatch = 10
		l.MaxBodyBytes = 1 << 20
	}})
	t.Run("one 200 MB result", func(t *testing.T) {
		bigNode(e, 200<<20)
		stop := peakHeld(t)
		status, body := e.post(t, testKey, `{"jsonrpc":"2.0","id":1,"method":"real_echo"}`)
		growth := stop()
		if status != 502 || !strings.Contains(body, `"code":-32056`) {
			t.Fatalf("%d %.300s", status, body)
		}
		const bound = 200 << 20
		if growth > bound {
			t.Errorf("memory held grew %d MB refusing a 200 MB result (bound %d MB)", growth>>20, bound>>20)
		}
		t.Logf("memory held grew %d MB", growth>>20)
	})
	t.Run("ten 20 MB results in a batch", func(t *testing.T) {
		bigNode(e, 20<<20)
		var calls []string
		for i := range 10 {
			calls = append(calls, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"method":"real_echo"}`)
		}
		stop := peakHeld(t)
		status, body := e.post(t, testKey, "["+strings.Join(calls, ",")+"]")
		growth := stop()
		refused := strings.Count(body, `"code":-32054`)
		if status != 200 || refused < 9 || len(body) > 21<<20+4096 {
			t.Fatalf("status %d, %d refused, %d bytes", status, refused, len(body))
		}
		const bound = 200 << 20
		if growth > bound {
			t.Errorf("memory held grew %d MB for a batch bounded at 21 MB (bound %d MB)", growth>>20, bound>>20)
		}
		t.Logf("%d of 10 refused, memory held grew %d MB", refused, growth>>20)
	})
}
