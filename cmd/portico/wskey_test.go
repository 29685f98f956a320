package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/config"
)

// adminDo sends an admin API request and returns its status and body.
func adminDo(t *testing.T, s *started, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.m.Shared+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.m.Config.Admin.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// wsClient is an open WebSocket of a real client (coder/websocket).
type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

func dialKey(t *testing.T, ctx context.Context, url string) *wsClient {
	t.Helper()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(1 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &wsClient{t: t, c: c}
}

// roundTrip sends one message and reads the next message that is not a
// notification.
func (w *wsClient) roundTrip(ctx context.Context, msg string) string {
	w.t.Helper()
	if err := w.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		w.t.Fatalf("write %s: %v", msg, err)
	}
	for {
		_, b, err := w.c.Read(ctx)
		if err != nil {
			w.t.Fatalf("answer to %s: %v", msg, err)
		}
		if !bytes.Contains(b, []byte(`"method":"eth_subscription"`)) {
			return string(b)
		}
	}
}

// refused sends msg on a socket its key now refuses and returns how the
// socket ended: the message is answered with the refusal (want in it)
// and the socket closes, or, when the check of sockets that send nothing
// came first, the socket is closed already. No result comes back.
func (w *wsClient) refused(ctx context.Context, msg, want string) websocket.CloseError {
	w.t.Helper()
	_ = w.c.Write(ctx, websocket.MessageText, []byte(msg)) // fails once closed
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, b, err := w.c.Read(ctx)
		if err == nil {
			if !bytes.Contains(b, []byte(`"method":"eth_subscription"`)) && !strings.Contains(string(b), want) {
				w.t.Errorf("answered %s, want the refusal %s", b, want)
			}
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			w.t.Fatalf("the socket ended without a close frame: %v", err)
		}
		return ce
	}
}

// closed reads until the socket ends and returns how it ended.
func (w *wsClient) closed(ctx context.Context) websocket.CloseError {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, _, err := w.c.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			w.t.Fatalf("the socket ended without a close frame: %v", err)
		}
		return ce
	}
}

// TestOpenWebSocketFollowsKey: an open WebSocket follows its key as the store
// has it, as an operator changes it through the admin API: once
// store.key_cache_ttl has passed, a narrowed method list and a lowered
// requests_per_second apply to the next message; a narrowed network list
// and a revocation close the socket with 1008 and the reason (the next
// message is refused, if the check of every socket did not close it
// first); and a socket that sends nothing (a subscriber) is closed too,
// its subscription ended. Before, every open socket kept the
// key as it was at its handshake.
func TestOpenWebSocketFollowsKey(t *testing.T) {
	const ttl = 200 * time.Millisecond
	cfg := config.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Admin.Token = "ws-follows-key-admin-token-0123"
	cfg.Store.KeyCacheTTL = ttl
	cfg.Networks = []config.Network{{Name: "evm-devnet", Family: "evm", Devnet: config.Devnet{BlockPeriod: 200 * time.Millisecond}}}
	s := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wsBase := "ws://" + s.addr(t, "evm-devnet") + "/ws/v3/"
	newKey := func(name string) string {
		t.Helper()
		status, body := adminDo(t, s, "POST", "/admin/v1/keys", `{"name":"`+name+`"}`)
		var k struct {
			Key string `json:"key"`
		}
		if err := json.Unmarshal([]byte(body), &k); status != 200 && status != 201 || err != nil || k.Key == "" {
			t.Fatalf("create %s: %d %s", name, status, body)
		}
		return k.Key
	}
	patch := func(name, body string) {
		t.Helper()
		if status, out := adminDo(t, s, "PATCH", "/admin/v1/keys/"+name, body); status != 200 {
			t.Fatalf("patch %s %s: %d %s", name, body, status, out)
		}
	}
	// Past the key cache: the scenario, not a synchronisation.
	pastTTL := func() { time.Sleep(3 * ttl) }
	const chainID = `{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`

	t.Run("narrowed method list", func(t *testing.T) {
		key := newKey("methods")
		w := dialKey(t, ctx, wsBase+key)
		if got := w.roundTrip(ctx, chainID); !strings.Contains(got, `"result":"0x`) {
			t.Fatalf("before: %s", got)
		}
		patch("methods", `{"allow_methods":["eth_blockNumber"]}`)
		pastTTL()
		if got := w.roundTrip(ctx, chainID); !strings.Contains(got, `"code":-32002`) || !strings.Contains(got, `"reason":"method"`) {
			t.Errorf("eth_chainId after the method list was narrowed: %s", got)
		}
		if got := w.roundTrip(ctx, `{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}`); !strings.Contains(got, `"result":"0x`) {
			t.Errorf("eth_blockNumber, still allowed: %s", got)
		}
	})

	t.Run("lowered requests_per_second", func(t *testing.T) {
		key := newKey("rate")
		w := dialKey(t, ctx, wsBase+key)
		batch := "[" + strings.TrimSuffix(strings.Repeat(chainID+",", 10), ",") + "]"
		if got := w.roundTrip(ctx, batch); strings.Count(got, `"result":"0x`) != 10 {
			t.Fatalf("before: %s", got)
		}
		patch("rate", `{"requests_per_second":5}`)
		pastTTL()
		// A batch of more calls than one second holds never fits.
		if got := w.roundTrip(ctx, batch); strings.Count(got, `"limit":"requests"`) != 10 {
			t.Errorf("a batch of 10 at 5 calls per second: %s", got)
		}
	})

	t.Run("narrowed network list", func(t *testing.T) {
		key := newKey("networks")
		w := dialKey(t, ctx, wsBase+key)
		if got := w.roundTrip(ctx, chainID); !strings.Contains(got, `"result":"0x`) {
			t.Fatalf("before: %s", got)
		}
		patch("networks", `{"allow_networks":["eth-mainnet"]}`)
		pastTTL()
		if ce := w.refused(ctx, chainID, `"code":-32002`); ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, `network "evm-devnet" is not allowed`) {
			t.Errorf("closed with %v, want 1008 naming the network", ce)
		}
	})

	t.Run("revoked", func(t *testing.T) {
		key := newKey("revoked")
		caller := dialKey(t, ctx, wsBase+key)
		subscriber := dialKey(t, ctx, wsBase+key)
		if got := caller.roundTrip(ctx, chainID); !strings.Contains(got, `"result":"0x`) {
			t.Fatalf("before: %s", got)
		}
		if got := subscriber.roundTrip(ctx, `{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`); !strings.Contains(got, `"result":"0x`) {
			t.Fatalf("subscribe: %s", got)
		}
		if _, _, err := subscriber.c.Read(ctx); err != nil {
			t.Fatalf("first head: %v", err)
		}
		if status, body := adminDo(t, s, "DELETE", "/admin/v1/keys/revoked", ""); status != 200 {
			t.Fatalf("revoke: %d %s", status, body)
		}
		pastTTL()
		if a := call(t, "http://"+s.addr(t, "evm-devnet")+"/v3/"+key, chainID); a.status != 401 {
			t.Fatalf("HTTP after the revocation: %d %s", a.status, a.body)
		}
		if ce := caller.refused(ctx, chainID, `"code":-32040,"message":"unauthorized: API key unknown or revoked"`); ce.Code != websocket.StatusPolicyViolation || ce.Reason != "unauthorized: API key unknown or revoked" {
			t.Errorf("the caller's socket closed with %v, want 1008 and the reason", ce)
		}
		// The subscriber sends nothing: it is closed all the same, and its
		// subscription ends with it.
		if ce := subscriber.closed(ctx); ce.Code != websocket.StatusPolicyViolation || ce.Reason != "unauthorized: API key unknown or revoked" {
			t.Errorf("the subscriber's socket closed with %v, want 1008 and the reason", ce)
		}
		if _, _, err := websocket.Dial(ctx, wsBase+key, nil); err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("a new handshake after the revocation: %v", err)
		}
	})
}
