package jsonrpc_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// subHandler serves "sub" (a subscription that notifies params[0] times at
// once, before its answer is even queued) and "unsub".
type subHandler struct {
	next  atomic.Int64
	ended atomic.Int64
}

func (h *subHandler) ServeRPC(ctx context.Context, method string, params jsontext.Value) (any, error) {
	switch method {
	case "sub":
		id := jsontext.Value(strconv.FormatInt(h.next.Add(1), 10))
		s, err := jsonrpc.Subscribe(ctx, id)
		if err != nil {
			return nil, err
		}
		s.OnEnd(func() { h.ended.Add(1) })
		n, _ := strconv.Atoi(strings.Trim(string(params), "[]"))
		for i := range n {
			s.Notify([]byte(`{"jsonrpc":"2.0","method":"note","params":{"subscription":` + string(id) + `,"result":` + strconv.Itoa(i) + `}}`))
		}
		return id, nil
	case "unsub":
		return jsonrpc.Unsubscribe(ctx, jsontext.Value(strings.Trim(string(params), "[]"))), nil
	}
	return testHandler(ctx, method, params)
}

func TestSubscriptions(t *testing.T) {
	h := &subHandler{}
	srv := jsonrpc.NewServer(h, jsonrpc.ServerOptions{Limits: jsonrpc.Limits{Conn: jsonrpc.ConnLimits{MaxSubscriptions: 2}}})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()
	c := dial(t, "ws"+strings.TrimPrefix(hs.URL, "http"))

	// The id comes first, then the notifications made before it.
	if got := roundTrip(t, c, `{"jsonrpc":"2.0","id":1,"method":"sub","params":[3]}`); got != `{"jsonrpc":"2.0","id":1,"result":1}` {
		t.Fatalf("subscribe: %s", got)
	}
	for i := range 3 {
		_, b, err := c.Read(context.Background())
		if err != nil || !strings.HasSuffix(string(b), `"result":`+strconv.Itoa(i)+`}}`) {
			t.Fatalf("notification %d: %s %v", i, b, err)
		}
	}
	roundTrip(t, c, `{"jsonrpc":"2.0","id":2,"method":"sub","params":[0]}`)
	if got := roundTrip(t, c, `{"jsonrpc":"2.0","id":3,"method":"sub","params":[0]}`); got != `{"jsonrpc":"2.0","id":3,"error":{"code":-32055,"message":"too many subscriptions on this connection: limit is 2"}}` {
		t.Fatalf("third subscription: %s", got)
	}
	if got := roundTrip(t, c, `{"jsonrpc":"2.0","id":4,"method":"unsub","params":[1]}`); got != `{"jsonrpc":"2.0","id":4,"result":true}` {
		t.Fatalf("unsubscribe: %s", got)
	}
	if got := roundTrip(t, c, `{"jsonrpc":"2.0","id":5,"method":"unsub","params":[1]}`); got != `{"jsonrpc":"2.0","id":5,"result":false}` {
		t.Fatalf("unsubscribe twice: %s", got)
	}
	if h.ended.Load() != 1 {
		t.Fatalf("%d subscriptions ended, want 1", h.ended.Load())
	}
	// Over HTTP there is nothing to notify on.
	out, _ := srv.Serve(context.Background(), []byte(`{"jsonrpc":"2.0","id":6,"method":"sub","params":[0]}`), nil)
	if want := `{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"notifications not supported: subscribe over a WebSocket"}}`; string(out) != want {
		t.Fatalf("over HTTP: %s", out)
	}
	// The connection's end ends the rest.
	c.CloseNow()
	srv.Close()
	if h.ended.Load() != 2 {
		t.Fatalf("%d subscriptions ended after the connection closed, want 2", h.ended.Load())
	}
}
