package jsonrpc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/porticohq/portico/jsonrpc"
)

// wsHandler adds to testHandler the methods that use the connection:
// "sub" answers an id and then notifies n times, "flood" notifies until
// the connection refuses.
type wsHandler struct {
	flooded atomic.Int64 // notifications "flood" got queued
	refused atomic.Bool  // Notify reported false
}

func (h *wsHandler) ServeRPC(ctx context.Context, method string, params jsontext.Value) (any, error) {
	c := jsonrpc.ConnFrom(ctx)
	switch method {
	case "sub":
		n, _ := strconv.Atoi(strings.Trim(string(params), "[]"))
		ok := jsonrpc.AfterAnswer(ctx, func() {
			for i := range n {
				c.Notify([]byte(`{"jsonrpc":"2.0","method":"note","params":{"subscription":"0x1","result":` + strconv.Itoa(i) + `}}`))
			}
		})
		if !ok {
			return nil, errors.New("no connection")
		}
		return "0x1", nil
	case "tick":
		n, _ := strconv.Atoi(strings.Trim(string(params), "[]"))
		jsonrpc.AfterAnswer(ctx, func() {
			go func() {
				for i := range n {
					time.Sleep(100 * time.Millisecond)
					if !c.Notify([]byte(`{"jsonrpc":"2.0","method":"tick","params":` + strconv.Itoa(i) + `}`)) {
						return
					}
				}
			}()
		})
		return true, nil
	case "flood":
		msg := []byte(`{"jsonrpc":"2.0","method":"note","params":"` + strings.Repeat("x", 64<<10) + `"}`)
		jsonrpc.AfterAnswer(ctx, func() {
			go func() {
				// Paced, as a chain's notifications are: a reading
				// client keeps up, one that stops reading fills its
				// socket, then its queue.
				for c.Notify(msg) {
					h.flooded.Add(1)
					time.Sleep(time.Millisecond)
				}
				h.refused.Store(true)
			}()
		})
		return true, nil
	}
	return testHandler(ctx, method, params)
}

func startWS(t *testing.T, h jsonrpc.Handler, limits jsonrpc.Limits) (*jsonrpc.Server, string) {
	t.Helper()
	srv := jsonrpc.NewServer(h, jsonrpc.ServerOptions{Limits: limits})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return srv, "ws" + strings.TrimPrefix(hs.URL, "http")
}

func dial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func roundTrip(t *testing.T, c *websocket.Conn, msg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServerWebSocketCalls(t *testing.T) {
	// Registered first, so it runs after the servers' cleanup.
	current := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, current) })
	_, url := startWS(t, &wsHandler{}, jsonrpc.Limits{})
	c := dial(t, url)
	tests := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}`, `{"jsonrpc":"2.0","id":1,"result":[1]}`},
		{`[{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]},{"jsonrpc":"2.0","id":2,"method":"nope"}]`,
			`[{"jsonrpc":"2.0","id":1,"result":[1]},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method nope not found"}}]`},
		{`{"jsonrpc":"2.0","id":3,"method":"fail"}`, `{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"internal error"}}`},
		{`not json`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: invalid character 'o' in literal null (expecting 'u') after offset 1"}}`},
	}
	for _, tc := range tests {
		if got := roundTrip(t, c, tc.in); got != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// TestServerWebSocketAfterAnswer: a subscription's notifications never
// overtake the answer that gave its id.
func TestServerWebSocketAfterAnswer(t *testing.T) {
	_, url := startWS(t, &wsHandler{}, jsonrpc.Limits{})
	c := dial(t, url)
	for range 20 {
		if got := roundTrip(t, c, `{"jsonrpc":"2.0","id":7,"method":"sub","params":[50]}`); got != `{"jsonrpc":"2.0","id":7,"result":"0x1"}` {
			t.Fatalf("first message %s, want the answer", got)
		}
		for i := range 50 {
			_, b, err := c.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := `"result":` + strconv.Itoa(i) + `}}`; !strings.HasSuffix(string(b), want) {
				t.Fatalf("notification %d: %s", i, b)
			}
		}
	}
}

// TestServerWebSocketSlowReader: a client that never reads its
// notifications is disconnected with 1008 once its queue is full; the
// queue never holds more than its limit.
func TestServerWebSocketSlowReader(t *testing.T) {
	h := &wsHandler{}
	const maxQueue = 16
	_, url := startWS(t, h, jsonrpc.Limits{Conn: jsonrpc.ConnLimits{MaxQueue: maxQueue}})
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
	// The client now reads what reached its socket, then the close.
	var err error
	for err == nil {
		_, _, err = c.Read(context.Background())
	}
	if s := websocket.CloseStatus(err); s != websocket.StatusPolicyViolation {
		t.Fatalf("closed with %v (%v), want 1008", s, err)
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) && ce.Reason != jsonrpc.ReasonSlowReader {
		t.Errorf("reason %q", ce.Reason)
	}
	t.Logf("%d notifications queued before the disconnect (queue limit %d, the rest sat in socket buffers)", h.flooded.Load(), maxQueue)
}

func TestServerWebSocketLimits(t *testing.T) {
	t.Run("message too large", func(t *testing.T) {
		_, url := startWS(t, &wsHandler{}, jsonrpc.Limits{Conn: jsonrpc.ConnLimits{MaxMessageBytes: 100}})
		c := dial(t, url)
		got := roundTrip(t, c, `{"jsonrpc":"2.0","id":1,"method":"echo","params":["`+strings.Repeat("x", 100)+`"]}`)
		if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32051,"message":"websocket message too large: limit is 100 bytes"}}`; got != want {
			t.Errorf("got %s", got)
		}
		_, _, err := c.Read(context.Background())
		if s := websocket.CloseStatus(err); s != websocket.StatusMessageTooBig {
			t.Errorf("closed with %v, want 1009", err)
		}
	})
	t.Run("connections", func(t *testing.T) {
		_, url := startWS(t, &wsHandler{}, jsonrpc.Limits{MaxConnections: 1})
		c := dial(t, url)
		roundTrip(t, c, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)
		_, resp, err := websocket.Dial(context.Background(), url, nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("second connection: %v %v", resp, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32044,"message":"too many connections: limit is 1"}}`; string(body) != want {
			t.Errorf("refusal %s", body)
		}
	})
	t.Run("idle", func(t *testing.T) {
		_, url := startWS(t, &wsHandler{}, jsonrpc.Limits{Conn: jsonrpc.ConnLimits{IdleTimeout: 300 * time.Millisecond, PingInterval: 50 * time.Millisecond}})
		c := dial(t, url)
		_, _, err := c.Read(context.Background())
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.HasPrefix(ce.Reason, jsonrpc.ReasonIdle) {
			t.Fatalf("idle connection ended with %v", err)
		}
	})
	t.Run("notifications keep a connection alive", func(t *testing.T) {
		_, url := startWS(t, &wsHandler{}, jsonrpc.Limits{Conn: jsonrpc.ConnLimits{IdleTimeout: 300 * time.Millisecond, PingInterval: 50 * time.Millisecond}})
		c := dial(t, url)
		// The client sends one message, then only receives a notification
		// every 100 ms, for four times the idle timeout.
		roundTrip(t, c, `{"jsonrpc":"2.0","id":1,"method":"tick","params":[12]}`)
		for i := range 12 {
			if _, _, err := c.Read(context.Background()); err != nil {
				t.Fatalf("closed after %d notifications: %v", i, err)
			}
		}
	})
	t.Run("close", func(t *testing.T) {
		srv, url := startWS(t, &wsHandler{}, jsonrpc.Limits{})
		c := dial(t, url)
		roundTrip(t, c, `{"jsonrpc":"2.0","id":1,"method":"echo"}`)
		done := make(chan error, 1)
		go func() {
			_, _, err := c.Read(context.Background())
			done <- err
		}()
		srv.Close()
		if err := <-done; websocket.CloseStatus(err) != websocket.StatusGoingAway {
			t.Errorf("Close ended the connection with %v", err)
		}
	})
}

// TestConnWriteTimeout: a client that stops reading is cut off once a
// write stalls past WriteTimeout; and a close long after the last write
// still reaches the client with its reason (the deadline left on the
// socket by that write would refuse the close frame).
func TestConnWriteTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	conns := make(chan *jsonrpc.Conn, 1)
	url := socketServer(t, jsonrpc.ConnLimits{WriteTimeout: timeout, MaxQueue: 1 << 20, MaxQueueBytes: 1 << 30}, conns)

	// A client that never reads: its socket fills, a write stalls.
	_ = dial(t, url)
	c := <-conns
	big := []byte(`{"jsonrpc":"2.0","method":"note","params":"` + strings.Repeat("x", 1<<20) + `"}`)
	for range 64 {
		if !c.Notify(big) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("a stalled write did not end the connection")
	}

	// A close long after the last write carries its reason.
	cl := dial(t, url)
	c = <-conns
	c.Notify([]byte(`{"jsonrpc":"2.0","method":"note","params":1}`))
	if _, _, err := cl.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * timeout)
	c.Close(websocket.StatusPolicyViolation, "bye")
	_, _, err := cl.Read(context.Background())
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != "bye" {
		t.Fatalf("read after the close: %v", err)
	}
}

// TestConnServeEndsWithContext: Serve returns when its context ends, though
// reads wait on the socket alone.
func TestConnServeEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := jsonrpc.Accept(w, r, nil, jsonrpc.ConnLimits{})
		if err != nil {
			return
		}
		c.Serve(ctx, func(context.Context, []byte) []byte { return nil })
		close(served)
	}))
	t.Cleanup(hs.Close)
	c := dial(t, "ws"+strings.TrimPrefix(hs.URL, "http"))
	if err := c.Write(context.Background(), websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"m"}`)); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-served:
	case <-time.After(30 * time.Second): // a guard against a hang
		t.Fatal("Serve did not return after its context ended")
	}
}
