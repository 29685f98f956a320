package gateway_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/metering/apikey"
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

// TestTricklingConnectionsMakeRoom: four client addresses fill every
// connection slot with connections that sent the start of a request head
// and then trickle a byte now and then (the HTTP server counts each as
// busy from its first byte). Once they have gone limits.header_timeout
// without a whole request, a fifth address is served: a trickling
// connection is closed to make room; and an address at its own bound gets
// a new connection in the same way. Before, only idle connections were
// closed to make room, and every newcomer was refused with -32044.
func TestTricklingConnectionsMakeRoom(t *testing.T) {
	const perAddr, addrs = 8, 4
	const headerTimeout = 200 * time.Millisecond
	e := newEnv(t, options{limits: func(l *gateway.Limits) {
		l.MaxConnections, l.MaxConnectionsPerIP, l.HeaderTimeout = perAddr*addrs, perAddr, headerTimeout
	}})
	target := strings.TrimPrefix(e.srv.URL, "http://")
	dialFrom := func(n int) net.Conn {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); wg.Wait() })
	var trickling []net.Conn
	for a := range addrs {
		for range perAddr {
			c := dialFrom(30 + a)
			trickling = append(trickling, c)
			if _, err := c.Write([]byte("POST /v3/" + testKey[:8])); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
						if _, err := c.Write([]byte("a")); err != nil {
							return
						}
					}
				}
			})
		}
	}
	// The scenario, not a synchronisation: the trickling connections go
	// past the header timeout without a whole request.
	time.Sleep(3 * headerTimeout)
	served := func(c net.Conn) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"real_echo","params":[1]}`
		if _, err := c.Write([]byte("POST /v3/" + testKey + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		return string(buf[:n])
	}
	if got := served(dialFrom(30 + addrs)); !strings.HasPrefix(got, "HTTP/1.1 200") || !strings.Contains(got, `"result":[1]`) {
		t.Fatalf("a new address: %q", got)
	}
	if got := served(dialFrom(30)); !strings.HasPrefix(got, "HTTP/1.1 200") || !strings.Contains(got, `"result":[1]`) {
		t.Fatalf("an address at its bound: %q", got)
	}
	// Exactly two trickling connections were closed for them.
	closed := 0
	buf := make([]byte, 512)
	for _, c := range trickling {
		// A closed one has its end waiting: EOF, or a reset when the
		// server had not read all it was sent.
		c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		var ne net.Error
		if _, err := c.Read(buf); err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			closed++
		}
	}
	if closed != 2 {
		t.Errorf("%d trickling connections were closed, want 2", closed)
	}
}
