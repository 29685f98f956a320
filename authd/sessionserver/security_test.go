package sessionserver

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/auth/sessionapi"
)

// setBody is a signed store/set body for key, as an SDK sends it.
func setBody(t *testing.T, key *secp256k1.PrivateKey, payload []byte, timeout int) string {
	t.Helper()
	enc, err := eccrypto.Encrypt(key.PubKey(), payload)
	must(t, err)
	data := enc.String()
	b, _ := json.Marshal(sessionapi.SetRequest{Key: eccrypto.PublicKeyHex(key.PubKey()), Data: data,
		Signature: eccrypto.Sign(key, []byte(data)).String(), Timeout: timeout})
	return string(b)
}

// The attack of issue 19 (5): one client stored 300 records of 128 KB in
// 6.8 s. Writes per client IP are now limited; another client is not
// affected.
func TestWriteQuotaPerClientIP(t *testing.T) {
	d := mustOpen(t)(OpenSQLite(context.Background(), ""))
	s := New(Config{Store: d})
	h := s.Handler()
	big := []byte(`"` + strings.Repeat("a", 63<<10) + `"`) // about 127 KiB of data once encrypted and hex-encoded
	send := func(ip string) int {
		key, _ := eccrypto.GenerateKey()
		r := httptest.NewRequest(http.MethodPost, "/store/set", strings.NewReader(setBody(t, key, big, sessionapi.MaxTimeout)))
		r.RemoteAddr = ip + ":40000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	stored := 0
	for range 300 {
		if send("192.0.2.7") != http.StatusOK {
			break
		}
		stored++
	}
	if stored == 300 {
		t.Fatal("one client stored 300 records of 128 KB: no quota per client")
	}
	if code := send("192.0.2.7"); code != http.StatusTooManyRequests {
		t.Fatalf("over quota: %d, want 429", code)
	}
	if code := send("198.51.100.9"); code != http.StatusOK {
		t.Fatalf("another client: %d", code)
	}
	t.Logf("one client stored %d records of 128 KB", stored)
}

// A record invalidated by logout cannot be brought back by replaying the
// set request that wrote it (the protocol signs only the data).
func TestLogoutCannotBeReplayed(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			srv, clk := startServer(t, open(t))
			key, _ := eccrypto.GenerateKey()
			captured := setBody(t, key, []byte(`{"privKey":"secret"}`), 3600)
			if st, msg := post(t, srv.URL+"/store/set", captured); st != 200 {
				t.Fatalf("set: %d %s", st, msg)
			}
			cl := &sessionapi.Client{BaseURL: srv.URL}
			must(t, cl.Invalidate(context.Background(), key))
			if st, _ := post(t, srv.URL+"/store/set", captured); st == 200 {
				t.Fatal("the replayed set request was accepted after logout")
			}
			if _, err := cl.Get(context.Background(), key); !errors.Is(err, sessionapi.ErrNotFound) {
				t.Fatalf("after logout and replay: %v, want not found", err)
			}
			// Logging out again is harmless.
			must(t, cl.Invalidate(context.Background(), key))
			clk.add(3599e9)
			if st, _ := post(t, srv.URL+"/store/set", captured); st == 200 {
				t.Fatal("replay accepted before the record would have expired")
			}
		})
	}
}

// inNamespace is a set body moved to namespace ns: the signature covers
// only the data, so whoever captured a request can do this.
func inNamespace(t *testing.T, body, ns string) string {
	t.Helper()
	var m map[string]any
	must(t, json.Unmarshal([]byte(body), &m))
	m["namespace"] = ns
	b, err := json.Marshal(m)
	must(t, err)
	return string(b)
}

// Issue 23: the tombstone of a logout held only the record's namespace, so
// the captured set request could write the logged-out session into
// another one. A logout now ends the key in every namespace: replays into
// any namespace are refused, and what the key had stored in others is
// gone.
func TestLogoutCoversEveryNamespace(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			srv, clk := startServer(t, open(t))
			key, _ := eccrypto.GenerateKey()
			pub := eccrypto.PublicKeyHex(key.PubKey())
			captured := setBody(t, key, []byte(`{"privKey":"secret"}`), 3600)
			for _, ns := range []string{"", "app-b"} {
				if st, msg := post(t, srv.URL+"/store/set", inNamespace(t, captured, ns)); st != 200 {
					t.Fatalf("set in %q: %d %s", ns, st, msg)
				}
			}
			cl := &sessionapi.Client{BaseURL: srv.URL}
			must(t, cl.Invalidate(context.Background(), key))
			for _, ns := range []string{"", "app-b", "other", "x"} {
				if st, _ := post(t, srv.URL+"/store/set", inNamespace(t, captured, ns)); st != http.StatusGone {
					t.Errorf("replay into namespace %q after logout: %d, want 410", ns, st)
				}
				resp, err := http.Get(srv.URL + "/store/get?key=" + pub + "&namespace=" + ns)
				must(t, err)
				resp.Body.Close()
				if resp.StatusCode != http.StatusNotFound {
					t.Errorf("get in namespace %q after logout: %d, want 404", ns, resp.StatusCode)
				}
			}
			// Once the logged-out record would have expired, the key is
			// free again (the protocol's known limit, docs/auth.md).
			clk.add(3601e9)
			if st, msg := post(t, srv.URL+"/store/set", inNamespace(t, captured, "other")); st != 200 {
				t.Errorf("after the tombstone expired: %d %s", st, msg)
			}
		})
	}
}

// derSignature is the signature the JavaScript session managers send: DER
// in hex (JS eccrypto's sign).
func derSignature(key *secp256k1.PrivateKey, data string) string {
	sig := eccrypto.Sign(key, []byte(data))
	var r, s secp256k1.ModNScalar
	r.SetBytes(&sig.R)
	s.SetBytes(&sig.S)
	return hex.EncodeToString(ecdsa.NewSignature(&r, &s).Serialize())
}

// The JavaScript session managers' forms: a DER signature, POST
// /v2/store/set and /v2/store/get, PUT /store/update and /v2/store/update.
func TestJSProtocolForms(t *testing.T) {
	d := mustOpen(t)(OpenSQLite(context.Background(), ""))
	srv, _ := startServer(t, d)
	key, _ := eccrypto.GenerateKey()
	pub := eccrypto.PublicKeyHex(key.PubKey())
	body := func(payload string, withTimeout bool) string {
		enc, _ := eccrypto.Encrypt(key.PubKey(), []byte(payload))
		m := map[string]any{"key": pub, "data": enc.String(), "signature": derSignature(key, enc.String()), "allowedOrigin": "*"}
		if withTimeout {
			m["timeout"] = 600
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	read := func(t *testing.T, path string) string {
		t.Helper()
		var resp *http.Response
		var err error
		if path == "/v2/store/get" {
			resp, err = http.Post(srv.URL+path, "application/json", strings.NewReader(`{"key":"`+pub+`"}`))
		} else {
			resp, err = http.Get(srv.URL + path + "?key=" + pub)
		}
		must(t, err)
		defer resp.Body.Close()
		var g sessionapi.GetResponse
		_ = json.NewDecoder(resp.Body).Decode(&g)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		enc, err := eccrypto.ParseEncrypted(g.Message)
		must(t, err)
		pt, err := eccrypto.Decrypt(key, enc)
		must(t, err)
		return string(pt)
	}
	put := func(t *testing.T, path, b string) int {
		req, _ := http.NewRequest(http.MethodPut, srv.URL+path, strings.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, v := range []string{"", "/v2"} {
		t.Run("prefix "+v, func(t *testing.T) {
			if st, msg := post(t, srv.URL+v+"/store/set", body(`{"a":1}`, true)); st != 200 {
				t.Fatalf("set with a DER signature: %d %s", st, msg)
			}
			if got := read(t, v+"/store/get"); got != `{"a":1}` {
				t.Fatalf("get: %s", got)
			}
			if st := put(t, v+"/store/update", body(`{"a":2}`, false)); st != 200 {
				t.Fatalf("update: %d", st)
			}
			if got := read(t, "/store/get"); got != `{"a":2}` {
				t.Fatalf("after update: %s", got)
			}
		})
	}
	other, _ := eccrypto.GenerateKey()
	enc, _ := eccrypto.Encrypt(other.PubKey(), []byte("{}"))
	b, _ := json.Marshal(map[string]any{"key": eccrypto.PublicKeyHex(other.PubKey()), "data": enc.String(), "signature": derSignature(other, enc.String())})
	if st := put(t, "/store/update", string(b)); st != http.StatusNotFound {
		t.Fatalf("update of no record: %d, want 404", st)
	}
}
