package jsonrpc_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"encoding/json"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/jsonrpc"
)

// socketServer serves each WebSocket with a jsonrpc.Conn of the given
// limits; each Conn is sent on conns.
func socketServer(t *testing.T, limits jsonrpc.ConnLimits, conns chan<- *jsonrpc.Conn) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := jsonrpc.Accept(w, r, nil, limits)
		if err != nil {
			return
		}
		conns <- c
		c.Serve(context.Background(), func(context.Context, []byte) []byte { return nil })
	}))
	t.Cleanup(hs.Close)
	return "ws" + strings.TrimPrefix(hs.URL, "http")
}

// fill sends notifications to a client that does not read until one is
// refused (the connection cut it off) or the socket's buffers are full
// and a write is blocked: then Notify keeps queueing.
func fill(t *testing.T, c *jsonrpc.Conn, n int) {
	t.Helper()
	big := []byte(`{"jsonrpc":"2.0","method":"note","params":"` + strings.Repeat("x", 256<<10) + `"}`)
	for range n {
		if !c.Notify(big) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// readClose reads what reached the client and returns how its connection
// ended.
func readClose(t *testing.T, cl *websocket.Conn) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if _, _, err := cl.Read(ctx); err != nil {
			return err
		}
	}
}

// TestCloseFrameReachesStalledClient: a client that reads nothing and is
// cut off while a write to it is blocked gets the close frame with its
// reason when it reads again, though that is long after the blocked
// write's own deadline (WriteTimeout): the close has a deadline of its
// own, CloseTimeout from the cut-off. A client cut off for nothing but
// the write timeout gets its close frame too. Before, the blocked write
// failed at its deadline and the socket was dropped without a close
// frame.
func TestCloseFrameReachesStalledClient(t *testing.T) {
	const writeTimeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name   string
		limits jsonrpc.ConnLimits
		reason string
	}{
		{"cut off for its backlog", jsonrpc.ConnLimits{WriteTimeout: writeTimeout, MaxQueue: 8, MaxQueueBytes: 1 << 30}, jsonrpc.ReasonSlowReader},
		{"cut off by the write timeout", jsonrpc.ConnLimits{WriteTimeout: writeTimeout, MaxQueue: 1 << 20, MaxQueueBytes: 1 << 30}, jsonrpc.ReasonWriteTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conns := make(chan *jsonrpc.Conn, 1)
			url := socketServer(t, tc.limits, conns)
			cl := dial(t, url)
			cl.SetReadLimit(1 << 20)
			c := <-conns
			fill(t, c, 128)
			select {
			case <-c.Done():
			case <-time.After(30 * time.Second): // a guard against a hang
				t.Fatal("the client that reads nothing was never cut off")
			}
			// The scenario, not a synchronisation: the client stays away
			// for several times the write timeout, then reads.
			time.Sleep(5 * writeTimeout)
			err := readClose(t, cl)
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != tc.reason {
				t.Fatalf("the client ended with %v, want close 1008 %q", err, tc.reason)
			}
		})
	}
}

// TestFramesWholeAcrossFullSocket: notifications sent faster than a
// client reads fill its socket; one is then written in part at once by
// the sender and the rest by the writer, before anything else. When the
// client reads, every message arrives whole and in order, those written
// at once, in part, and queued, spliced and not.
func TestFramesWholeAcrossFullSocket(t *testing.T) {
	conns := make(chan *jsonrpc.Conn, 1)
	url := socketServer(t, jsonrpc.ConnLimits{WriteTimeout: time.Minute, MaxQueue: 1 << 20, MaxQueueBytes: 1 << 30}, conns)
	cl := dial(t, url)
	c := <-conns
	const n = 3000
	pad := strings.Repeat("x", 10_007) // frames that end anywhere in the socket's buffer
	for i := range n {
		head := []byte(`{"jsonrpc":"2.0","method":"note","params":{"subscription":`)
		tail := []byte(`,"result":"` + pad + `"}}`)
		if i%2 == 0 {
			c.NotifySpliced(head, []byte(strconv.Itoa(i)), tail)
		} else if !c.Notify(append(append(head, strconv.Itoa(i)...), tail...)) {
			t.Fatalf("notification %d refused", i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range n {
		_, msg, err := cl.Read(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		var got struct {
			Params struct {
				Subscription int
				Result       string
			}
		}
		if err := json.Unmarshal(msg, &got); err != nil || got.Params.Subscription != i || got.Params.Result != pad {
			t.Fatalf("message %d: %.80s... (%d bytes: %v)", i, msg, len(msg), err)
		}
	}
}
