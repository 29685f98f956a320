package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/store"
)

// wsDial opens a WebSocket with the given handshake headers (name, value
// pairs).
func wsDial(t *testing.T, e *keysEnv, key string, headers ...string) *websocket.Conn {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws/v3/" + key
	c, _, err := websocket.Dial(ctxT(t), url, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// wsAsk sends msg and returns the answer, or how the socket ended.
func wsAsk(t *testing.T, c *websocket.Conn, msg string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		return "", err
	}
	_, b, err := c.Read(ctx)
	return string(b), err
}

// TestWebSocketFollowsKey: each message on an open WebSocket is checked
// against the key as the store has it then (here with no key cache, and no
// check of idle sockets in the way): lists and bounds apply to the next
// message; a revoked key, a network, origin or User-Agent list that now
// refuses the handshake, or a secret the handshake did not send, refuse
// the message and close the socket with 1008 and the reason. A secret
// rotated after the handshake does not (docs/keys.md), and a store that
// cannot answer leaves the key as last seen. Before, a socket kept the key
// as it was at its handshake.
func TestWebSocketFollowsKey(t *testing.T) {
	e := newKeysEnv(t, options{keyTTL: time.Hour})
	ctx := context.Background()
	allowed := func(s string) *[]string { l := strings.Split(s, ","); return &l }
	two := 2
	tests := []struct {
		name    string
		spec    store.KeySpec
		headers []string
		change  func(t *testing.T, name string)
		body    string
		want    string // in the answer
		reason  string // the close frame's reason; "" when the socket stays open
	}{
		{"revoked", store.KeySpec{}, nil,
			func(t *testing.T, name string) { mustDo(t)(e.st.Revoke(ctx, name)) },
			chainID, `{"code":-32040,"message":"unauthorized: API key unknown or revoked","data":{"reason":"unknown"}}`,
			"unauthorized: API key unknown or revoked"},
		{"network list narrowed", store.KeySpec{}, nil,
			func(t *testing.T, name string) {
				mustDo(t)(e.st.Update(ctx, name, store.Patch{AllowNetworks: allowed("mainnet")}))
			},
			chainID, `"reason":"network"`, `rejected due to API key settings: network "testnet" is not allowed for this API key`},
		{"origin list set", store.KeySpec{}, []string{"Origin", "https://app.example.com"},
			func(t *testing.T, name string) {
				mustDo(t)(e.st.Update(ctx, name, store.Patch{AllowOrigins: allowed("other.example.com")}))
			},
			chainID, `"reason":"origin"`, `rejected due to API key settings: origin "https://app.example.com" is not allowed for this API key`},
		{"User-Agent list set", store.KeySpec{}, []string{"User-Agent", "curl/8.5.0"},
			func(t *testing.T, name string) {
				mustDo(t)(e.st.Update(ctx, name, store.Patch{Rules: store.RulesPatch{AllowUserAgents: allowed("viem/")}}))
			},
			chainID, `"reason":"user_agent"`, `rejected due to API key settings: User-Agent "curl/8.5.0" is not allowed for this API key`},
		{"a secret the handshake did not send", store.KeySpec{}, nil,
			func(t *testing.T, name string) {
				k, _, err := e.st.RotateSecret(ctx, name, 0)
				mustDo(t)(k, err)
			},
			chainID, `"reason":"secret_missing"`, "unauthorized: API key secret missing: send it as the password of HTTP Basic auth or in the X-Portico-Secret header"},
		{"method list narrowed", store.KeySpec{}, nil,
			func(t *testing.T, name string) {
				mustDo(t)(e.st.Update(ctx, name, store.Patch{AllowMethods: allowed("eth_blockNumber")}))
			},
			chainID, `"reason":"method"`, ""},
		{"contract list set", store.KeySpec{}, nil,
			func(t *testing.T, name string) {
				mustDo(t)(e.st.Update(ctx, name, store.Patch{Rules: store.RulesPatch{AllowAddresses: allowed(allowedA)}}))
			},
			ethCall(1, other), `"reason":"address"`, ""},
		{"requests_per_second lowered", store.KeySpec{}, nil,
			func(t *testing.T, name string) {
				mustDo(t)(e.st.Update(ctx, name, store.Patch{Rules: store.RulesPatch{RequestsPerSecond: &two}}))
			},
			"[" + chainID + "," + chainID + "," + chainID + "]", `"limit":"requests"`, ""}, // more than one second holds
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name = "follows-" + string(rune('a'+i))
			_, key := e.create(t, tc.spec)
			c := wsDial(t, e, key, tc.headers...)
			if got, err := wsAsk(t, c, chainID); err != nil || !strings.Contains(got, `"result"`) {
				t.Fatalf("before the change: %s %v", got, err)
			}
			tc.change(t, tc.spec.Name)
			got, err := wsAsk(t, c, tc.body)
			if err != nil || !strings.Contains(got, tc.want) || strings.Contains(got, `"result"`) {
				t.Fatalf("after the change: %s %v, want %s", got, err, tc.want)
			}
			if tc.reason == "" {
				if got, err := wsAsk(t, c, `{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}`); err != nil || !strings.Contains(got, `"result"`) {
					t.Errorf("the socket was not kept: %s %v", got, err)
				}
				return
			}
			_, _, err = c.Read(ctx)
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != tc.reason {
				t.Errorf("ended with %v, want 1008 %q", err, tc.reason)
			}
		})
	}

	t.Run("a secret rotated after the handshake", func(t *testing.T) {
		k, key := e.create(t, store.KeySpec{Name: "rotated", WithSecret: true})
		c := wsDial(t, e, key, "X-Portico-Secret", k.NewSecret)
		if _, _, err := e.st.RotateSecret(ctx, "rotated", 0); err != nil {
			t.Fatal(err)
		}
		if got, err := wsAsk(t, c, chainID); err != nil || !strings.Contains(got, `"result"`) {
			t.Errorf("a socket opened with the secret after a rotation: %s %v", got, err)
		}
	})

	t.Run("the store cannot answer", func(t *testing.T) {
		_, key := e.create(t, store.KeySpec{Name: "stored"})
		c := wsDial(t, e, key)
		e.st.Close()
		if got, err := wsAsk(t, c, chainID); err != nil || !strings.Contains(got, `"result"`) {
			t.Errorf("with the store down: %s %v", got, err)
		}
	})
}

// TestIdleWebSocketFollowsKey: a socket that sends nothing is checked
// against its key every Config.KeyTTL: revoked, it is closed with 1008 and
// the reason, without a message of its own.
func TestIdleWebSocketFollowsKey(t *testing.T) {
	e := newKeysEnvTTL(t, options{keyTTL: 20 * time.Millisecond}, 20*time.Millisecond)
	_, key := e.create(t, store.KeySpec{Name: "idle"})
	_, otherKey := e.create(t, store.KeySpec{Name: "kept"})
	idle := wsDial(t, e, key)
	kept := wsDial(t, e, otherKey)
	if _, err := e.st.Revoke(context.Background(), "idle"); err != nil {
		t.Fatal(err)
	}
	_, _, err := idle.Read(ctxT(t))
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || ce.Reason != "unauthorized: API key unknown or revoked" {
		t.Errorf("the idle socket of a revoked key ended with %v, want 1008 and the reason", err)
	}
	if got, err := wsAsk(t, kept, chainID); err != nil || !strings.Contains(got, `"result"`) {
		t.Errorf("another key's socket: %s %v", got, err)
	}
}

// mustDo fails the test on the error of a store change.
func mustDo(t *testing.T) func(store.Key, error) {
	return func(_ store.Key, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}
