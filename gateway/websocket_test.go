package gateway_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/gateway"
)

func dialWS(t *testing.T, e *env, key string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	url := "ws" + strings.TrimPrefix(e.srv.URL, "http") + "/ws/v3/" + key
	c, resp, err := websocket.Dial(ctxT(t), url, nil)
	if c != nil {
		c.SetReadLimit(1 << 20)
		t.Cleanup(func() { c.CloseNow() })
	}
	return c, resp, err
}

// TestWebSocketMatchesHTTP sends the same bodies over both transports and
// expects the same answers.
func TestWebSocketMatchesHTTP(t *testing.T) {
	e := newEnv(t, options{})
	c, _, err := dialWS(t, e, testKey)
	if err != nil {
		t.Fatal(err)
	}
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"real_echo","params":[1,{"x":"y"}]}`,
		`{"jsonrpc":"2.0","id":"s","method":"test_echo"}`,
		`{"jsonrpc":"2.0","id":null,"method":"seed_checked","params":["ok"]}`,
		`{"jsonrpc":"2.0","id":2,"method":"real_checked","params":["no"]}`,
		`{"jsonrpc":"2.0","id":3,"method":"nope"}`,
		`{"jsonrpc":"2.0",`,
		`[]`,
		`[{"jsonrpc":"2.0","id":1,"method":"real_echo"},{"jsonrpc":"2.0","method":"real_echo"},{"jsonrpc":"2.0","id":2,"method":"x"}]`,
		`[1,2,3,4,5,6]`,
	}
	for _, body := range bodies {
		_, want := e.post(t, testKey, body)
		if err := c.Write(ctxT(t), websocket.MessageText, []byte(body)); err != nil {
			t.Fatal(err)
		}
		_, got, err := c.Read(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("body %s\nws   %s\nhttp %s", body, got, want)
		}
	}
	// A notification gets no answer: the next message answers the next call.
	c.Write(ctxT(t), websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"real_echo"}`))
	c.Write(ctxT(t), websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":5,"method":"real_echo"}`))
	if _, got, _ := c.Read(ctxT(t)); string(got) != `{"jsonrpc":"2.0","id":5,"result":null}` {
		t.Fatalf("after notification got %s", got)
	}
}

func TestWebSocketRefusals(t *testing.T) {
	t.Run("bad key is refused before upgrade", func(t *testing.T) {
		e := newEnv(t, options{})
		_, resp, err := dialWS(t, e, "nope")
		if err == nil || resp == nil || resp.StatusCode != 401 {
			t.Fatalf("err %v, resp %v", err, resp)
		}
	})
	t.Run("message too large", func(t *testing.T) {
		e := newEnv(t, options{})
		c, _, err := dialWS(t, e, testKey)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(ctxT(t), websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"real_echo","params":["`+strings.Repeat("x", 5000)+`"]}`))
		_, got, err := c.Read(ctxT(t))
		if want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32051,"message":"websocket message too large: limit is 4096 bytes"}}`; err != nil || string(got) != want {
			t.Fatalf("got %s, %v", got, err)
		}
		_, _, err = c.Read(ctxT(t))
		if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
			t.Fatalf("close: %v", err)
		}
	})
	t.Run("connection limit", func(t *testing.T) {
		e := newEnv(t, options{})
		for range 4 {
			if _, _, err := dialWS(t, e, testKey); err != nil {
				t.Fatal(err)
			}
		}
		_, resp, err := dialWS(t, e, testKey)
		if err == nil || resp == nil || resp.StatusCode != 503 {
			t.Fatalf("fifth connection: err %v resp %v", err, resp)
		}
	})
	t.Run("idle client is closed", func(t *testing.T) {
		e := newEnv(t, options{limits: func(l *gateway.Limits) { l.WSIdleTimeout = 100 * time.Millisecond }})
		c, _, err := dialWS(t, e, testKey)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = c.Read(ctxT(t))
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.HasPrefix(ce.Reason, "idle timeout") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestConnectionLimit(t *testing.T) {
	e := newEnv(t, options{limits: func(l *gateway.Limits) { l.MaxConnections = 2 }})
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	// Accept runs in the server's goroutine: wait until both are counted by
	// making the third connection retry until it is refused.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 512)
	n, _ := c.Read(buf)
	got := string(buf[:n])
	if !strings.HasPrefix(got, "HTTP/1.1 503") || !strings.Contains(got, `"code":-32044,"message":"too many connections: limit is 2"`) {
		t.Fatalf("got %q", got)
	}
}

func TestSlowClientTimesOut(t *testing.T) {
	e := newEnv(t, options{limits: func(l *gateway.Limits) { l.ReadTimeout = 200 * time.Millisecond }})
	c, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Headers arrive, the body never does.
	c.Write([]byte("POST /v3/" + testKey + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1024)
	n, _ := c.Read(buf)
	got := string(buf[:n])
	if !strings.HasPrefix(got, "HTTP/1.1 408") || !strings.Contains(got, `"code":-32047`) {
		t.Fatalf("got %q", got)
	}
}
