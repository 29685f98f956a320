package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/metrics"
)

// heldNode makes the test node hold every call until release is closed,
// counting the calls per params.
func heldNode(e *env) (release chan struct{}, arrived chan string, calls func(params string) int64) {
	release, arrived = make(chan struct{}), make(chan string, 100)
	var mu sync.Mutex
	counts := map[string]*atomic.Int64{}
	e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		params := string(req["params"])
		mu.Lock()
		if counts[params] == nil {
			counts[params] = &atomic.Int64{}
		}
		counts[params].Add(1)
		mu.Unlock()
		arrived <- params
		<-release
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":{"params":` + params + `}}`))
	})
	return release, arrived, func(params string) int64 {
		mu.Lock()
		defer mu.Unlock()
		if c := counts[params]; c != nil {
			return c.Load()
		}
		return 0
	}
}

// TestCoalesce: identical cacheable reads in flight share one node call,
// each caller gets the answer under its own id and is charged; reads that
// are not cacheable, and other params, go to the node on their own.
func TestCoalesce(t *testing.T) {
	m := metrics.New()
	e := newEnv(t, options{metrics: m})
	release, arrived, calls := heldNode(e)

	const n = 10
	var wg sync.WaitGroup
	answers := make([]string, n)
	// The first call reaches the node; the others arrive while it is held.
	wg.Go(func() {
		_, answers[0] = e.post(t, testKey, `{"jsonrpc":"2.0","id":0,"method":"real_checked","params":["ok"]}`)
	})
	<-arrived
	for i := 1; i < n; i++ {
		wg.Go(func() {
			_, answers[i] = e.post(t, testKey, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"seed_checked","params":["ok"]}`, i))
		})
	}
	// Two reads the rules do not call cacheable, same params: both reach
	// the node.
	var echoes [2]string
	for i := range echoes {
		wg.Go(func() {
			_, echoes[i] = e.post(t, testKey, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"real_echo","params":["same"]}`, 100+i))
		})
	}
	<-arrived
	<-arrived
	// Every other checked call waits for the first.
	waitCoalesced(t, m, n-1)
	close(release)
	wg.Wait()

	for i, a := range answers {
		if want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"params":["ok","added"]}}`, i); a != want {
			t.Errorf("call %d: %s, want %s", i, a, want)
		}
	}
	if got := calls(`["ok","added"]`); got != 1 {
		t.Errorf("the node got %d calls for %d identical reads in flight, want 1", got, n)
	}
	if got := calls(`["same"]`); got != 2 {
		t.Errorf("the node got %d calls for two reads that are not cacheable, want 2", got)
	}
	for i, a := range echoes {
		if !strings.Contains(a, `"result":{"params":["same"]}`) {
			t.Errorf("echo %d: %s", i, a)
		}
	}
}

// TestCoalesceLeaderLeaves: the caller whose call reached the node goes
// away (its WebSocket closes); the callers waiting for the same answer
// still get it.
func TestCoalesceLeaderLeaves(t *testing.T) {
	m := metrics.New()
	e := newEnv(t, options{metrics: m})
	release, arrived, calls := heldNode(e)
	ctx := ctxT(t)
	ws, _, err := websocket.Dial(ctx, strings.Replace(e.srv.URL, "http", "ws", 1)+"/ws/v3/"+testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"real_checked","params":["ok"]}`)); err != nil {
		t.Fatal(err)
	}
	<-arrived
	var answer string
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, answer = e.post(t, testKey, `{"jsonrpc":"2.0","id":2,"method":"real_checked","params":["ok"]}`)
	}()
	// The waiter joins the flight, then the leader's connection goes
	// before the node answers.
	waitCoalesced(t, m, 1)
	ws.Close(websocket.StatusNormalClosure, "bye")
	close(release)
	<-done
	if answer != `{"jsonrpc":"2.0","id":2,"result":{"params":["ok","added"]}}` {
		t.Fatalf("waiter: %s", answer)
	}
	if got := calls(`["ok","added"]`); got != 1 {
		t.Fatalf("%d node calls, want 1", got)
	}
}

// waitCoalesced waits until n reads of real_checked wait for one in
// flight.
func waitCoalesced(t *testing.T, m *metrics.Metrics, n float64) {
	t.Helper()
	ctx := ctxT(t)
	for counter(t, m.Registry(), "portico_coalesced_calls_total", map[string]string{"method": "real_checked"}) < n {
		select {
		case <-ctx.Done():
			t.Fatalf("%v reads coalesced, want %v", counter(t, m.Registry(), "portico_coalesced_calls_total", nil), n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestNoCoalesce: with coalescing off every call reaches the node.
func TestNoCoalesce(t *testing.T) {
	e := newEnv(t, options{noCoalesce: true})
	release, arrived, calls := heldNode(e)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			e.post(t, testKey, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"real_checked","params":["ok"]}`, i))
		})
	}
	for range 3 {
		<-arrived // each call reaches the node while the others are held
	}
	close(release)
	wg.Wait()
	if got := calls(`["ok","added"]`); got != 3 {
		t.Fatalf("%d node calls, want 3", got)
	}
}
