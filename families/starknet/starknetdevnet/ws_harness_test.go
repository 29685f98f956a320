package starknetdevnet

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/internal/starknetspec"
)

// wsSchemas checks notifications and results against the spec's schemas.
type wsSchemas = starknetspec.WS

func loadWSSpec(t testing.TB) *wsSchemas {
	t.Helper()
	s, err := starknetspec.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wsClient talks JSON-RPC to the devnet over a real WebSocket.
// Notifications read while waiting for an answer are kept, in order.
type wsClient struct {
	t       testing.TB
	spec    *wsSchemas
	c       *websocket.Conn
	id      int
	backlog []wsMessage
}

// wsMessage is one message from the devnet: an answer or a notification.
type wsMessage struct {
	Raw    []byte          `json:"-"`
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
	Method string          `json:"method"`
	Params struct {
		SubscriptionID json.RawMessage `json:"subscription_id"`
		Result         json.RawMessage `json:"result"`
	} `json:"params"`
}

func dialWS(t testing.TB, d *Devnet, spec *wsSchemas) *wsClient {
	t.Helper()
	return dialWSWith(t, d, spec, nil)
}

// dialWSWith dials through a dialer: one with a small receive buffer
// (smallReceiveBuffer) stands for a client that reads slowly.
func dialWSWith(t testing.TB, d *Devnet, spec *wsSchemas, dialer *net.Dialer) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var opts *websocket.DialOptions
	if dialer != nil {
		tr := &http.Transport{DialContext: dialer.DialContext}
		t.Cleanup(tr.CloseIdleConnections)
		opts = &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}}
	}
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(d.HTTPURL(), "http"), opts)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 22)
	t.Cleanup(func() { c.CloseNow() })
	return &wsClient{t: t, spec: spec, c: c}
}

// read returns the next message. The deadline only keeps a broken test
// from hanging; nothing is asserted about time.
func (w *wsClient) read() wsMessage {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, raw, err := w.c.Read(ctx)
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	var m wsMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		w.t.Fatalf("message %s: %v", raw, err)
	}
	m.Raw = raw
	return m
}

// call sends a request and returns its answer.
func (w *wsClient) call(method, params string) (json.RawMessage, *rpcError) {
	w.t.Helper()
	w.id++
	id := strconv.Itoa(w.id)
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"`
	if params != "" {
		body += `,"params":` + params
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(body+"}")); err != nil {
		w.t.Fatalf("write: %v", err)
	}
	for {
		m := w.read()
		if m.Method != "" {
			w.backlog = append(w.backlog, m)
			continue
		}
		if string(m.ID) != id {
			w.t.Fatalf("answer %s to call %s", m.Raw, id)
		}
		return m.Result, m.Error
	}
}

// must calls and fails on an error.
func (w *wsClient) must(method, params string) json.RawMessage {
	w.t.Helper()
	res, err := w.call(method, params)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, params, err)
	}
	return res
}

// subscribe calls a subscribe method, checks the id against the spec and
// returns it.
func (w *wsClient) subscribe(method, params string) json.RawMessage {
	w.t.Helper()
	id := w.must(method, params)
	if err := w.spec.CheckResult(method, id); err != nil {
		w.t.Fatalf("%s result %s: %v", method, id, err)
	}
	return id
}

// next returns the next notification.
func (w *wsClient) next() wsMessage {
	w.t.Helper()
	if len(w.backlog) > 0 {
		m := w.backlog[0]
		w.backlog = w.backlog[1:]
		return m
	}
	m := w.read()
	if m.Method == "" {
		w.t.Fatalf("an answer where a notification was due: %s", m.Raw)
	}
	return m
}

// expect reads the next notification, checks its method and subscription
// id, validates it against the spec and returns it.
func (w *wsClient) expect(method string, id json.RawMessage) wsMessage {
	w.t.Helper()
	m := w.next()
	if m.Method != method || string(m.Params.SubscriptionID) != string(id) {
		w.t.Fatalf("got %s, want a %s for subscription %s", m.Raw, method, id)
	}
	if err := w.spec.CheckNotification(m.Method, m.Params.SubscriptionID, m.Params.Result); err != nil {
		w.t.Fatalf("%s does not match spec 0.8.1: %v", m.Raw, err)
	}
	return m
}

// quiet makes a round trip and fails when a notification came before its
// answer. Pushed notifications (pending transactions, statuses) are queued
// before the call that caused them returns, so this proves that none is
// due; the round trip is an ordering fence, not a wait.
func (w *wsClient) quiet() {
	w.t.Helper()
	w.fence()
	if len(w.backlog) > 0 {
		w.t.Fatalf("unexpected notification %s", w.backlog[0].Raw)
	}
}

// fence makes a round trip: the pushed notifications due before it are
// in the backlog afterwards.
func (w *wsClient) fence() {
	w.t.Helper()
	w.must("starknet_chainId", "")
}

// fixedClock makes block timestamps, and so block hashes, reproducible.
func fixedClock() time.Time { return time.Unix(1_750_000_000, 0) }

func seal(t testing.TB, d *Devnet) uint64 {
	t.Helper()
	n, err := d.SealBlock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func traffic(t testing.TB, d *Devnet) {
	t.Helper()
	if err := d.GenerateTraffic(); err != nil {
		t.Fatal(err)
	}
}
