package sessionserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/auth/sessionapi"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func startServer(t *testing.T, d *DB) (*httptest.Server, *clock) {
	srv, _, c := startServers(t, d)
	return srv, c
}

// startServers serves a Server over HTTP and returns it with its
// in-process client.
func startServers(t *testing.T, d *DB) (*httptest.Server, *sessionapi.Client, *clock) {
	c := &clock{t: time.Now()}
	s := New(Config{Store: d, Now: c.now})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, s.Client(), c
}

// clients are the two ways to reach a server: over HTTP, and in-process
// (what the auth server's login pages use).
func clients(srv *httptest.Server, inProcess *sessionapi.Client) map[string]*sessionapi.Client {
	return map[string]*sessionapi.Client{"http": {BaseURL: srv.URL}, "in-process": inProcess}
}

// The client and server agree on every backend: a record written with the
// session key reads back, expires, and is replaced by an invalidation.
func TestClientServer(t *testing.T) {
	for name, open := range backends(t) {
		srv, inProcess, clk := startServers(t, open(t))
		for via, cl := range clients(srv, inProcess) {
			t.Run(name+"/"+via, func(t *testing.T) {
				ctx := context.Background()
				key, _ := eccrypto.GenerateKey()
				payload := []byte(`{"privKey":"ab","userInfo":{"typeOfLogin":"google"}}`)
				must(t, cl.Set(ctx, key, payload, 60))
				got, err := cl.Get(ctx, key)
				if err != nil || string(got) != string(payload) {
					t.Fatalf("get: %s %v", got, err)
				}
				other, _ := eccrypto.GenerateKey()
				if _, err := cl.Get(ctx, other); !errors.Is(err, sessionapi.ErrNotFound) {
					t.Fatalf("unknown key: %v", err)
				}
				clk.add(61 * time.Second)
				if _, err := cl.Get(ctx, key); !errors.Is(err, sessionapi.ErrNotFound) {
					t.Fatalf("expired: %v", err)
				}
				must(t, cl.Set(ctx, key, payload, 60))
				must(t, cl.Invalidate(ctx, key))
				if _, err := cl.Get(ctx, key); !errors.Is(err, sessionapi.ErrNotFound) {
					t.Fatalf("invalidated: %v", err)
				}
			})
		}
	}
}

func TestSetRejects(t *testing.T) {
	d := mustOpen(t)(OpenSQLite(context.Background(), ""))
	srv, _ := startServer(t, d)
	key, _ := eccrypto.GenerateKey()
	other, _ := eccrypto.GenerateKey()
	enc, _ := eccrypto.Encrypt(key.PubKey(), []byte("{}"))
	data := enc.String()
	good := sessionapi.SetRequest{
		Key: eccrypto.PublicKeyHex(key.PubKey()), Data: data,
		Signature: eccrypto.Sign(key, []byte(data)).String(), Timeout: 60,
	}
	cases := []struct {
		name   string
		mutate func(*sessionapi.SetRequest)
		status int
		msg    string
	}{
		{"ok", func(*sessionapi.SetRequest) {}, 200, ""},
		{"max timeout", func(r *sessionapi.SetRequest) { r.Timeout = sessionapi.MaxTimeout }, 200, ""},
		{"timeout above 7 days", func(r *sessionapi.SetRequest) { r.Timeout = sessionapi.MaxTimeout + 1 }, 400, "timeout: 604801 seconds is more than the maximum of 604800 (7 days)"},
		{"negative timeout", func(r *sessionapi.SetRequest) { r.Timeout = -5 }, 400, "timeout:"},
		{"compressed key", func(r *sessionapi.SetRequest) { r.Key = "02" + r.Key[2:66] }, 400, "key:"},
		{"key off the curve", func(r *sessionapi.SetRequest) { r.Key = "04" + strings.Repeat("11", 64) }, 400, "key:"},
		{"no data", func(r *sessionapi.SetRequest) { r.Data = "" }, 400, "data:"},
		{"data not ecies", func(r *sessionapi.SetRequest) { r.Data = `{"x":1}` }, 400, "data:"},
		{"no signature", func(r *sessionapi.SetRequest) { r.Signature = "" }, 400, "signature:"},
		{"signature neither json nor der", func(r *sessionapi.SetRequest) { r.Signature = "abc" }, 400, "signature:"},
		{"signature by another key", func(r *sessionapi.SetRequest) { r.Signature = eccrypto.Sign(other, []byte(r.Data)).String() }, 400, "signature: does not verify against key"},
		{"signature over other data", func(r *sessionapi.SetRequest) { r.Signature = eccrypto.Sign(key, []byte("x")).String() }, 400, "signature: does not verify"},
		{"data too large", func(r *sessionapi.SetRequest) { r.Data = strings.Repeat("a", sessionapi.MaxDataBytes+1) }, 413, "data:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := good
			c.mutate(&r)
			body, _ := json.Marshal(r)
			status, msg := post(t, srv.URL+"/store/set", string(body))
			if status != c.status || !strings.Contains(msg, c.msg) {
				t.Fatalf("%d %q, want %d %q", status, msg, c.status, c.msg)
			}
		})
	}
	t.Run("body too large", func(t *testing.T) {
		status, msg := post(t, srv.URL+"/store/set", `{"data":"`+strings.Repeat("a", sessionapi.MaxBodyBytes)+`"}`)
		if status != 413 || !strings.Contains(msg, "body:") {
			t.Fatalf("%d %q", status, msg)
		}
	})
	t.Run("not json", func(t *testing.T) {
		if status, msg := post(t, srv.URL+"/store/set", `nope`); status != 400 || !strings.Contains(msg, "body:") {
			t.Fatalf("%d %q", status, msg)
		}
	})
	t.Run("get bad key", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/store/get?key=zz&namespace=")
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatal(resp.Status)
		}
	})
	t.Run("wrong method", func(t *testing.T) {
		resp, err := http.Get(srv.URL + "/store/set")
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 405 {
			t.Fatal(resp.Status)
		}
	})
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	must(t, err)
	defer resp.Body.Close()
	var e sessionapi.ErrorResponse
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e.Error
}

func TestCORS(t *testing.T) {
	d := mustOpen(t)(OpenSQLite(context.Background(), ""))
	srv, _ := startServer(t, d)
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/store/set", nil)
	req.Header.Set("Origin", "https://pages.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 204 || resp.Header.Get("Access-Control-Allow-Origin") != "*" || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("%s %v", resp.Status, resp.Header)
	}
	resp, err = http.Get(srv.URL + "/store/get?namespace=&key=04" + strings.Repeat("ab", 64))
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("%s %v", resp.Status, resp.Header)
	}
}

func TestSweeper(t *testing.T) {
	d := mustOpen(t)(OpenSQLite(context.Background(), ""))
	ctx, cancel := context.WithCancel(context.Background())
	s := New(Config{Store: d, SweepInterval: 10 * time.Millisecond})
	done := make(chan struct{})
	go func() { s.RunSweeper(ctx); close(done) }()
	past := time.Now().Add(-time.Second)
	must(t, d.Put(ctx, Record{Key: "old", Data: "x", ExpiresAt: past}, past))
	must(t, d.Put(ctx, Record{Key: "new", Data: "y", ExpiresAt: time.Now().Add(time.Hour)}, past))
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		must(t, d.db.QueryRow(`SELECT COUNT(*) FROM auth_sessions`).Scan(&n))
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sweeper left %d records", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// The client surfaces the server's error answer with its status.
func TestClientStatusError(t *testing.T) {
	d := mustOpen(t)(OpenSQLite(context.Background(), ""))
	srv, inProcess, _ := startServers(t, d)
	key, _ := eccrypto.GenerateKey()
	for via, cl := range clients(srv, inProcess) {
		err := cl.Set(context.Background(), key, []byte("{}"), sessionapi.MaxTimeout+1)
		var se *sessionapi.StatusError
		if !errors.As(err, &se) || se.Status != 400 || !strings.HasPrefix(se.Message, "timeout:") {
			t.Fatalf("%s: err = %v", via, err)
		}
	}
}
