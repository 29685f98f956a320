package gateway_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/apikey"
	"github.com/porticohq/portico/gateway"
)

// TestBatchResponseBound: a batch whose results together pass the bound is
// answered with the results that fit and an error for each call that does
// not; the response stays within the bound (plus envelopes). The answers
// are read at once and count against the bound while they are read, so
// which calls fit depends on the order they arrive in, and fewer may fit
// than would one by one; never more.
func TestBatchResponseBound(t *testing.T) {
	e := newEnv(t, options{limits: func(l *gateway.Limits) { l.MaxBatchResponseBytes = 25_000 }})
	big := `"` + strings.Repeat("ab", 5000) + `"` // a 10 KB result
	e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":` + big + `}`))
	})
	var calls []string
	for i := range 5 {
		calls = append(calls, `{"jsonrpc":"2.0","id":`+string(rune('1'+i))+`,"method":"real_echo"}`)
	}
	status, body := e.post(t, testKey, "["+strings.Join(calls, ",")+"]")
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	results := strings.Count(body, big)
	refused := strings.Count(body, `"code":-32054,"message":"batch response too large: this call's result does not fit in the batch's limit of 25000 bytes"`)
	if results < 1 || results > 2 || results+refused != 5 {
		t.Fatalf("%d results and %d refusals, want 1 or 2 results and the rest refused; %d bytes", results, refused, len(body))
	}
}

// TestConnectionsPerAddress: one client address cannot take every
// connection slot.
func TestConnectionsPerAddress(t *testing.T) {
	e := newEnv(t, options{limits: func(l *gateway.Limits) { l.MaxConnectionsPerIP = 2 }})
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 512)
	n, _ := c.Read(buf)
	if got := string(buf[:n]); !strings.HasPrefix(got, "HTTP/1.1 503") || !strings.Contains(got, `"code":-32044,"message":"too many connections from this address: limit is 2"`) {
		t.Fatalf("third connection from one address: %q", got)
	}
}

// TestWebSocketsPerKey: one key cannot take every WebSocket slot; another
// key still connects.
func TestWebSocketsPerKey(t *testing.T) {
	const other = "fedcba9876543210fedcba9876543210"
	e := newEnv(t, options{limits: func(l *gateway.Limits) { l.MaxWSConnectionsPerKey = 2 }, keys: []apikey.Entry{{Name: "other", Hash: apikey.Sum(other)}}})
	for range 2 {
		if _, _, err := dialWS(t, e, testKey); err != nil {
			t.Fatal(err)
		}
	}
	_, resp, err := dialWS(t, e, testKey)
	if err == nil || resp == nil || resp.StatusCode != 503 {
		t.Fatalf("third socket of one key: %v %v", resp, err)
	}
	c, _, err := dialWS(t, e, other)
	if err != nil {
		t.Fatalf("another key: %v", err)
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// TestConnectionSlotsAreFair: nine client addresses that fill every slot
// with idle connections leave room for a tenth: an idle connection of
// the largest holder is closed to make it, and the tenth is served.
func TestConnectionSlotsAreFair(t *testing.T) {
	const perAddr, addrs = 10, 9
	e := newEnv(t, options{limits: func(l *gateway.Limits) {
		l.MaxConnections, l.MaxConnectionsPerIP = perAddr*addrs, perAddr
	}})
	target := strings.TrimPrefix(e.srv.URL, "http://")
	dialFrom := func(n int) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}, Timeout: 5 * time.Second}
		return d.Dial("tcp", target)
	}
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for a := 1; a <= addrs; a++ {
		for i := range perAddr {
			c, err := dialFrom(10 + a)
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, c)
			if i%2 == 0 {
				// Half of them served a request and are kept alive; the
				// others sent nothing yet.
				if _, err := c.Write([]byte("POST /v3/" + testKey + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 47\r\n\r\n" + `{"jsonrpc":"2.0","id":1,"method":"real_echo"}` + "\r\n")); err != nil {
					t.Fatal(err)
				}
				c.SetReadDeadline(time.Now().Add(10 * time.Second))
				buf := make([]byte, 4096)
				if n, err := c.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "HTTP/1.1 200") {
					t.Fatalf("address %d: %q %v", a, buf[:n], err)
				}
			}
		}
	}
	// Every slot is taken; a tenth address is served all the same.
	tenth, err := dialFrom(10 + addrs + 1)
	if err != nil {
		t.Fatal(err)
	}
	defer tenth.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"real_echo","params":[1]}`
	if _, err := tenth.Write([]byte("POST /v3/" + testKey + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)); err != nil {
		t.Fatal(err)
	}
	tenth.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := tenth.Read(buf)
	if got := string(buf[:n]); err != nil || !strings.HasPrefix(got, "HTTP/1.1 200") || !strings.Contains(got, `"result":[1]`) {
		t.Fatalf("the tenth address: %q %v", got, err)
	}
	// Exactly one of the others lost a connection: it reads EOF.
	closed := 0
	for _, c := range held {
		c.SetReadDeadline(time.Now().Add(5 * time.Millisecond)) // a closed one has its EOF waiting
		if _, err := c.Read(buf); errors.Is(err, io.EOF) {
			closed++
		}
	}
	if closed != 1 {
		t.Errorf("%d connections of the nine addresses were closed, want 1", closed)
	}
}
