package authd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd/clients"
	"github.com/porticohq/portico/internal/authtest"
)

// The interop tests run the real JavaScript libraries of the SDK family,
// installed from npm by scripts/install-test-deps.sh (pinned in
// package.json): @toruslabs/openlogin 6.x, @toruslabs/openlogin-session-manager
// 3.x, @toruslabs/session-manager 3.x (what @web3auth/auth 9.x uses) and
// @toruslabs/eccrypto 4.x.

// jsWorker is one Node.js process running testdata/js/worker.cjs: it
// runs the interop scripts on request, so the libraries load (and the JS
// elliptic curve code warms up, about 4 s here) once for the package's
// tests. It ends when the test binary exits and its stdin closes.
type jsWorker struct {
	mu     sync.Mutex
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *syncBuffer
}

var (
	jsOnce   sync.Once
	jsShared *jsWorker
	jsErr    string
)

// startJS returns the package's worker, starting it at first use. Without
// Node.js or the modules the test is skipped, or fails under
// PORTICO_TEST_STRICT=1.
func startJS(t *testing.T) *jsWorker {
	t.Helper()
	jsOnce.Do(func() { jsShared, jsErr = newJSWorker() })
	if jsErr != "" {
		missing(t, jsErr)
	}
	return jsShared
}

func newJSWorker() (*jsWorker, string) {
	root, _ := filepath.Abs("..")
	if _, err := exec.LookPath("node"); err != nil {
		return nil, "node: " + err.Error()
	}
	for _, m := range []string{"@toruslabs/openlogin", "@toruslabs/openlogin-session-manager", "@toruslabs/session-manager", "@toruslabs/eccrypto", "@web3auth/auth"} {
		if _, err := os.Stat(filepath.Join(root, "node_modules", m, "package.json")); err != nil {
			return nil, m + " is not installed (run scripts/install-test-deps.sh)"
		}
	}
	cmd := exec.Command("node", filepath.Join("testdata", "js", "worker.cjs"))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	w := &jsWorker{in: stdin, stderr: &syncBuffer{}}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		return nil, "node: " + err.Error()
	}
	w.out = bufio.NewScanner(stdout)
	w.out.Buffer(make([]byte, 1<<20), 1<<20)
	return w, ""
}

// node runs a script of testdata/js in the worker and returns its result.
func (w *jsWorker) node(t *testing.T, script string, args ...string) []byte {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	req, _ := json.Marshal(map[string]any{"script": strings.TrimSuffix(script, ".cjs"), "args": args})
	if _, err := w.in.Write(append(req, '\n')); err != nil {
		t.Fatal(err)
	}
	if !w.out.Scan() {
		t.Fatalf("node worker ended: %v\n%s", w.out.Err(), w.stderr)
	}
	var resp struct{ Out, Error string }
	if err := json.Unmarshal(w.out.Bytes(), &resp); err != nil || resp.Error != "" {
		t.Fatalf("node %s %s: %v %s", script, strings.Join(args, " "), err, resp.Error)
	}
	return []byte(resp.Out)
}

// syncBuffer is a buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("PORTICO_TEST_STRICT") == "1" {
		t.Fatalf("%s (PORTICO_TEST_STRICT=1)", why)
	}
	t.Skip(why)
}

func jsonArg(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// JS creates, Go reads; Go creates, JS reads; JS updates and logs out: for
// the older session manager (store/set, GET store/get, PUT store/update)
// and the newer one (/v2/store/*), both signing with DER in hex.
func TestInteropSessionManagers(t *testing.T) {
	js := startJS(t)
	node := js.node
	_, url := serve(t, Config{Networks: []string{"sapphire_devnet"}})
	ctx := context.Background()
	gocl := &sessionapi.Client{BaseURL: url}
	for _, lib := range []string{"openlogin", "v2"} {
		t.Run(lib, func(t *testing.T) {
			record := map[string]any{"privKey": "0a1b", "userInfo": map[string]any{"typeOfLogin": "google", "email": "js@example.com"}}
			var created struct{ SessionID string }
			_ = json.Unmarshal(node(t, "session.cjs", jsonArg(map[string]any{"lib": lib, "op": "create", "url": url, "data": record})), &created)
			key, err := eccrypto.ParsePrivateKeyHex(created.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := gocl.Get(ctx, key)
			if err != nil || !strings.Contains(string(got), `"email":"js@example.com"`) {
				t.Fatalf("JS creates, Go reads: %s %v", got, err)
			}

			goKey, _ := eccrypto.GenerateKey()
			if err := gocl.Set(ctx, goKey, []byte(`{"privKey":"ffee","userInfo":{"typeOfLogin":"jwt"}}`), 600); err != nil {
				t.Fatal(err)
			}
			var read struct{ Data map[string]any }
			_ = json.Unmarshal(node(t, "session.cjs", jsonArg(map[string]any{"lib": lib, "op": "read", "url": url, "sessionId": eccrypto.PrivateKeyHex(goKey)})), &read)
			if read.Data["privKey"] != "ffee" {
				t.Fatalf("Go creates, JS reads: %v", read.Data)
			}

			node(t, "session.cjs", jsonArg(map[string]any{"lib": lib, "op": "update", "url": url, "sessionId": created.SessionID, "data": map[string]any{"privKey": "beef"}}))
			if got, err := gocl.Get(ctx, key); err != nil || string(got) != `{"privKey":"beef"}` {
				t.Fatalf("JS updates, Go reads: %s %v", got, err)
			}
			node(t, "session.cjs", jsonArg(map[string]any{"lib": lib, "op": "invalidate", "url": url, "sessionId": created.SessionID}))
			if _, err := gocl.Get(ctx, key); !errors.Is(err, sessionapi.ErrNotFound) {
				t.Fatalf("JS logs out, Go reads: %v", err)
			}
		})
	}
}

// ECIES both ways between Go and the JavaScript eccrypto, zero bytes
// included, and a JS message whose shared x coordinate has a leading zero
// byte (which eccrypto hashes unpadded).
func TestInteropECIES(t *testing.T) {
	js := startJS(t)
	node := js.node
	key, _ := eccrypto.GenerateKey()
	pub := eccrypto.PublicKeyHex(key.PubKey())
	big := bytes.Repeat([]byte("portico "), 200)
	// An ephemeral key whose shared x coordinate starts with a zero byte.
	var zeroEphem string
	for zeroEphem == "" {
		e, _ := eccrypto.GenerateKey()
		if secp256k1.GenerateSharedSecret(e, key.PubKey())[0] == 0 {
			zeroEphem = eccrypto.PrivateKeyHex(e)
		}
	}
	for name, pt := range map[string][]byte{"zero bytes": {}, "json": []byte(`{"privKey":"00"}`), "1600 bytes": big} {
		t.Run(name, func(t *testing.T) {
			for _, flag := range []string{"", zeroEphem} {
				args := []string{"encrypt", pub, hex.EncodeToString(pt)}
				if flag != "" {
					args = append(args, flag)
				}
				enc, err := eccrypto.ParseEncrypted(string(node(t, "ecies.cjs", args...)))
				if err != nil {
					t.Fatal(err)
				}
				got, err := eccrypto.Decrypt(key, enc)
				if err != nil || !bytes.Equal(got, pt) {
					t.Fatalf("JS encrypts (%s), Go decrypts: %v", flag, err)
				}
			}
			enc, _ := eccrypto.Encrypt(key.PubKey(), pt)
			if got := string(node(t, "ecies.cjs", "decrypt", eccrypto.PrivateKeyHex(key), enc.String())); got != hex.EncodeToString(pt) {
				t.Fatalf("Go encrypts, JS decrypts: %q", got)
			}
		})
	}
}

var devCode = regexp.MustCompile(`DEV ONLY: passwordless code for (\S+): (\d{6})`)

// The real web SDK (@toruslabs/openlogin 6.x) starts a login, with
// extraLoginOptions.max_age as a number as its types allow; the pages
// complete it; the SDK reads the session: the same key the Go SDK gets.
func TestInteropOpenLoginLogin(t *testing.T) {
	js := startJS(t)
	node := js.node
	logs := &logBuffer{}
	const app = "http://127.0.0.1:1/js-app/"
	const clientID = "anMtYXBw"
	_, url := serve(t, Config{Networks: []string{"sapphire_devnet"}, DevLogCodes: true, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Clients: []clients.Client{{ID: clientID, RedirectURLs: []string{app}}}})
	code := func(email string) string {
		c := ""
		for _, m := range devCode.FindAllStringSubmatch(logs.String(), -1) {
			if m[1] == email {
				c = m[2]
			}
		}
		return c
	}
	req := map[string]any{"sdkUrl": url, "sessionServer": url, "redirectUrl": app, "clientId": clientID, "network": "sapphire_devnet",
		"loginProvider": "email_passwordless", "extraLoginOptions": map[string]any{"login_hint": "web@example.com", "max_age": 3600}}
	var started struct{ LoginURL string }
	out := node(t, "openlogin.cjs", "start", jsonArg(req))
	_ = json.Unmarshal(out, &started)
	if !strings.HasPrefix(started.LoginURL, url+"/start#b64Params=") {
		t.Fatalf("login URL %q (%s)", started.LoginURL, out)
	}
	b := authtest.NewBrowser(app)
	cb, err := b.Passwordless(started.LoginURL, "web@example.com", code)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.Page)
	}
	req["callbackUrl"] = cb
	var web struct {
		PrivKey, CoreKitKey string
		UserInfo            auth.UserInfo
		State               auth.State
	}
	if err := json.Unmarshal(node(t, "openlogin.cjs", "finish", jsonArg(req)), &web); err != nil {
		t.Fatal(err)
	}
	if len(web.PrivKey) != 64 || web.UserInfo.Email != "web@example.com" || web.State.KeyMode != auth.KeyMode1of1 || len(web.State.NodeIndexes) != 3 {
		t.Fatalf("the web SDK's state: %+v", web)
	}

	// The Go SDK, same app and user: the same keys.
	sdk, err := auth.New(context.Background(), auth.InitParams{ClientID: clientID, Network: auth.SapphireDevnet, SDKURL: url},
		auth.WithStorage(&auth.FileStorage{Dir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: app, MfaLevel: auth.MFANone})
	if err != nil {
		t.Fatal(err)
	}
	cb, err = authtest.NewBrowser(app).Passwordless(pl.URL, "web@example.com", code)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sdk.CompleteLogin(context.Background(), cb)
	if err != nil || st.PrivKey != web.PrivKey || st.CoreKitKey != web.CoreKitKey {
		t.Fatalf("Go SDK: %v; keys differ from the web SDK's", err)
	}
}
