package jsonrpc_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/membudget"
)

// connServer serves each WebSocket with a jsonrpc.Conn of the given limits
// and answer function; setup sees each connection before it is served.
func connServer(t *testing.T, limits jsonrpc.ConnLimits, setup func(*jsonrpc.Conn), answer func(context.Context, []byte) []byte) string {
	t.Helper()
	return connServerWith(t, func() jsonrpc.ConnLimits { return limits }, setup, answer)
}

// connServerWith is connServer with limits made per connection.
func connServerWith(t *testing.T, limits func() jsonrpc.ConnLimits, setup func(*jsonrpc.Conn), answer func(context.Context, []byte) []byte) string {
	t.Helper()
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := jsonrpc.Accept(w, r, nil, limits())
		if err != nil {
			return
		}
		if setup != nil {
			setup(c)
		}
		wg.Add(1)
		defer wg.Done()
		c.Serve(ctx, answer)
	}))
	t.Cleanup(func() {
		cancel()
		hs.Close()
		wg.Wait()
	})
	return "ws" + strings.TrimPrefix(hs.URL, "http")
}

// TestConnPausesForUnreadAnswers: a client that sends calls and does not
// read the answers is no longer read once PauseQueueBytes of answers wait
// for it (or, when the answers are slower than the reads, once every
// in-flight slot is taken: a message's slot is held until its answer is
// written), so what the connection holds stays bounded however many calls
// the client sends; once it reads, every answer arrives.
func TestConnPausesForUnreadAnswers(t *testing.T) {
	const (
		calls    = 400
		size     = 128 << 10
		inFlight = 64
		pause    = 1 << 20
	)
	budget := membudget.New("connection", 0, nil) // counts, bounds nothing
	var answered atomic.Int64
	var mu sync.Mutex
	maxHeld := int64(0)
	paused := make(chan struct{})
	var pauseOnce sync.Once
	big := `"` + strings.Repeat("b", size) + `"`
	url := connServer(t, jsonrpc.ConnLimits{MaxInFlight: inFlight, PauseQueueBytes: pause, Memory: budget},
		func(c *jsonrpc.Conn) { jsonrpc.OnPause(c, func() { pauseOnce.Do(func() { close(paused) }) }) },
		func(_ context.Context, body []byte) []byte {
			answered.Add(1)
			mu.Lock()
			maxHeld = max(maxHeld, budget.Used())
			mu.Unlock()
			id := strings.TrimSuffix(strings.TrimPrefix(string(body), `{"jsonrpc":"2.0","id":`), `,"method":"x"}`)
			return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":` + big + `}`)
		})
	c := dial(t, url)
	c.SetReadLimit(2 * size)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sent := make(chan error, 1)
	go func() {
		for i := range calls {
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"method":"x"}`)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case <-paused:
	case <-ctx.Done():
		t.Fatalf("never paused; %d answers made", answered.Load())
	}
	// Now read everything: nothing is lost, and the client's writes go on.
	seen := map[string]bool{}
	for len(seen) < calls {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("after %d answers: %v", len(seen), err)
		}
		id := strings.TrimPrefix(string(b), `{"jsonrpc":"2.0","id":`)
		id = id[:strings.IndexByte(id, ',')]
		if seen[id] {
			t.Fatalf("answer %s twice", id)
		}
		seen[id] = true
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	// Held at any answer: the queue up to the pause mark, one more answer
	// that crossed it, the answers in flight and the messages being
	// served. Without the pause the queue held every answer (50 MiB).
	bound := int64(pause + (inFlight+2)*(size+64))
	if maxHeld > bound {
		t.Errorf("the connection held %d bytes at most, want at most %d", maxHeld, bound)
	}
	c.Close(websocket.StatusNormalClosure, "")
	t.Logf("%d answers, at most %d bytes held (bound %d)", answered.Load(), maxHeld, bound)
}

// TestConnCloseFrameAfterBlockedWrite: a subscriber cut off while a write
// to it is blocked (its socket is full) still gets the close frame with
// its reason when it reads again, even after longer than the WebSocket
// library waits for a close frame to get through (5 s): the close
// handshake starts once the blocked write is done, instead of waiting
// beside it and giving up.
func TestConnCloseFrameAfterBlockedWrite(t *testing.T) {
	h := &wsHandler{}
	_, url := startWS(t, h, jsonrpc.Limits{Conn: jsonrpc.ConnLimits{MaxQueue: 8, WriteTimeout: time.Minute}})
	c := dial(t, url)
	if got := roundTrip(t, c, `{"jsonrpc":"2.0","id":1,"method":"flood"}`); got != `{"jsonrpc":"2.0","id":1,"result":true}` {
		t.Fatal(got)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !h.refused.Load() {
		if time.Now().After(deadline) {
			t.Fatalf("still not disconnected after %d notifications", h.flooded.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The scenario, not a synchronisation: the client stays away for
	// longer than the library's close timeout.
	time.Sleep(6 * time.Second)
	var err error
	for err == nil {
		_, _, err = c.Read(context.Background())
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != jsonrpc.ReasonSlowReader {
		t.Fatalf("ended with %v, want close 1008 %q", err, jsonrpc.ReasonSlowReader)
	}
}

// TestConnBudgetCutsOnlyTheSlowReader: two connections share a key's
// budget; one does not read. When the key's budget is spent, the one with
// a backlog is cut off with 1008, and the one that reads keeps getting
// every notification.
func TestConnBudgetCutsOnlyTheSlowReader(t *testing.T) {
	key := membudget.New("key", 1<<20, nil)
	conns := make(chan *jsonrpc.Conn, 2)
	url := connServerWith(t, func() jsonrpc.ConnLimits {
		return jsonrpc.ConnLimits{MaxQueue: 1 << 20, MaxQueueBytes: 1 << 30, Memory: membudget.New("connection", 0, key)}
	}, func(c *jsonrpc.Conn) { conns <- c }, func(context.Context, []byte) []byte { return nil })
	// Which server connection is whose: each client dials only once the
	// one before has its server connection, since the handshake's answer
	// is written before the server side is set up, and two handlers race.
	slow := dial(t, url)
	slowConn := <-conns
	fast := dial(t, url)
	fastConn := <-conns
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got atomic.Int64
	go func() {
		for {
			if _, _, err := fast.Read(ctx); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	msg := []byte(`{"jsonrpc":"2.0","method":"note","params":"` + strings.Repeat("n", 8<<10) + `"}`)
	sent, cut := 0, false
	for i := 0; i < 10_000 && !cut; i++ {
		cut = !slowConn.Notify(msg)
		// The reading client gets each notification once the one before
		// is written: its backlog stays below the floor of a reader.
		for fastConn.Queued() > 0 {
			time.Sleep(time.Millisecond)
		}
		if !fastConn.Notify(msg) {
			t.Fatalf("the reading connection was cut off after %d notifications", sent)
		}
		sent++
	}
	if !cut {
		t.Fatal("the slow reader was never cut off")
	}
	if key.Used() > key.Limit()+int64(len(msg)) {
		t.Errorf("the key holds %d bytes, limit %d", key.Used(), key.Limit())
	}
	var err error
	for err == nil {
		_, _, err = slow.Read(ctx)
	}
	if s := websocket.CloseStatus(err); s != websocket.StatusPolicyViolation {
		t.Errorf("the slow reader ended with %v, want 1008", err)
	}
	// Everything sent reaches the reading client (written, it may still
	// be on its way: the wait is bounded by the test's context).
	for got.Load() < int64(sent) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if n := got.Load(); n != int64(sent) {
		t.Errorf("the reading client got %d of %d notifications", n, sent)
	}
}

// TestConnBudgetRefusesMessage: a message that does not fit the
// connection's budget is answered with -32057 and the connection closes
// with 1013, try again later; nothing stays counted.
func TestConnBudgetRefusesMessage(t *testing.T) {
	budget := membudget.New("connection", 64<<10, nil)
	url := connServer(t, jsonrpc.ConnLimits{MaxMessageBytes: 1 << 20, Memory: budget}, nil,
		func(context.Context, []byte) []byte { return []byte(`{"jsonrpc":"2.0","id":1,"result":true}`) })
	c := dial(t, url)
	if got := roundTrip(t, c, `{"jsonrpc":"2.0","id":1,"method":"x"}`); got != `{"jsonrpc":"2.0","id":1,"result":true}` {
		t.Fatal(got)
	}
	got := roundTrip(t, c, `{"jsonrpc":"2.0","id":2,"method":"x","params":["`+strings.Repeat("x", 100<<10)+`"]}`)
	if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32057,"message":"server busy: this answer does not fit the memory budget of 65536 bytes; retry later"}}`; got != want {
		t.Errorf("got %s", got)
	}
	_, _, err := c.Read(context.Background())
	if s := websocket.CloseStatus(err); s != websocket.StatusTryAgainLater {
		t.Errorf("closed with %v, want 1013", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for budget.Used() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if budget.Used() != 0 {
		t.Errorf("%d bytes still counted", budget.Used())
	}
}
