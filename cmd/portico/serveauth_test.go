package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/internal/authtest"
)

// serveAuth runs `portico serve` (one network without a node, so it starts
// at once) with args until the test ends, and returns the auth server's URL,
// its stdout and its log.
func serveAuth(t *testing.T, args ...string) (string, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "portico.yaml")
	if err := os.WriteFile(cfg, []byte("networks: [{name: evm-devnet, family: evm, devnet: {disabled: true}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0", "--config", cfg}, args...), stdout, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v\n%s", err, stderr)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	re := regexp.MustCompile(`(?m)^auth: (http://\S+)/ \(login pages`)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if out := stdout.String(); strings.Contains(out, "auth: email login") {
			return re.FindStringSubmatch(out)[1], stdout, stderr
		}
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start its auth server:\n%s\n%s", stdout, stderr)
		}
	}
}

// emailLogin logs the dev client in by email through the auth server's
// pages, the code read by code; it returns the error of the pages.
func emailLogin(t *testing.T, base, email string, code func(string) string) (*auth.State, error) {
	t.Helper()
	const app = "http://127.0.0.1:1/callback/"
	ctx := context.Background()
	sdk, err := auth.New(ctx, auth.InitParams{ClientID: DevClientID, Network: auth.SapphireDevnet, SDKURL: base},
		auth.WithStorage(&auth.FileStorage{Dir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := sdk.LoginURL(ctx, auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: app, MfaLevel: auth.MFANone})
	if err != nil {
		t.Fatal(err)
	}
	b := authtest.NewBrowser(app)
	cb, err := b.Passwordless(p.URL, email, code)
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, b.Page)
	}
	return sdk.CompleteLogin(ctx, cb)
}

// Issue 23: `portico serve`'s auth server always wrote email codes to its
// log and could not be given SMTP. Now codes reach the log only with
// --auth-dev-log-codes; --auth-login-config mails them; with neither,
// email login is off and no code is logged.
func TestServeAuthEmailCodes(t *testing.T) {
	t.Run("no flag: off, nothing logged", func(t *testing.T) {
		base, out, logs := serveAuth(t)
		if !strings.Contains(out.String(), "auth: email login is off") {
			t.Errorf("stdout does not say email login is off:\n%s", out)
		}
		if _, err := emailLogin(t, base, "ann@example.com", func(string) string { return "000000" }); err == nil {
			t.Fatal("an email login went through with no way to deliver codes")
		}
		if strings.Contains(logs.String(), "DEV ONLY") || pageCodeRE.MatchString(logs.String()) {
			t.Fatalf("a code reached the log without --auth-dev-log-codes:\n%s", logs)
		}
	})
	t.Run("--auth-dev-log-codes: logged", func(t *testing.T) {
		base, _, logs := serveAuth(t, "--auth-dev-log-codes")
		st, err := emailLogin(t, base, "bea@example.com", func(email string) string {
			m := pageCodeRE.FindStringSubmatch(logs.String())
			if m == nil || m[1] != email {
				t.Fatalf("no code for %s in the log:\n%s", email, logs)
			}
			return m[2]
		})
		if err != nil || st.UserInfo.VerifierID != "bea@example.com" {
			t.Fatalf("%+v %v", st, err)
		}
	})
	t.Run("--auth-login-config with smtp: mailed, not logged", func(t *testing.T) {
		mail := authtest.StartSMTP(t, "", "")
		host, port, _ := net.SplitHostPort(mail.Addr)
		cfg := filepath.Join(t.TempDir(), "login.json")
		login := fmt.Sprintf(`{"smtp": {"host": %q, "port": %s, "from": "login@auth.example", "tls": "none"}}`, host, port)
		if err := os.WriteFile(cfg, []byte(login), 0o600); err != nil {
			t.Fatal(err)
		}
		base, out, logs := serveAuth(t, "--auth-login-config", cfg)
		if !strings.Contains(out.String(), "auth: email login codes are mailed through "+host) {
			t.Errorf("stdout:\n%s", out)
		}
		st, err := emailLogin(t, base, "cy@example.com", mail.LastCode)
		if err != nil || st.UserInfo.VerifierID != "cy@example.com" {
			t.Fatalf("%+v %v", st, err)
		}
		if code := mail.LastCode("cy@example.com"); code == "" || strings.Contains(logs.String(), code) || strings.Contains(logs.String(), "DEV ONLY") {
			t.Fatalf("code %q: mailed and kept out of the log? log:\n%s", code, logs)
		}
	})
}

// Issue 23: the embedded key nodes' key files were kept inside the
// gateway's data directory, next to the shares they seal. They are beside
// it now, and keys at the old place are moved there, so the shares they
// sealed still open.
func TestServeNodeKeysOutsideDataDir(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "portico-data")
	serveAuth(t, "--data-dir", data)
	keys, _ := filepath.Glob(filepath.Join(root, "portico-data.node-keys", "*.key"))
	if len(keys) == 0 {
		t.Fatalf("no node key beside the data directory")
	}
	var inside []string
	_ = filepath.WalkDir(data, func(p string, _ os.DirEntry, _ error) error {
		if strings.HasSuffix(p, ".key") {
			inside = append(inside, p)
		}
		return nil
	})
	if len(inside) > 0 {
		t.Fatalf("node keys inside the data directory: %v", inside)
	}

	// The old place: moved, with a line in the log.
	old := filepath.Join(root, "old-data")
	if err := os.MkdirAll(filepath.Join(old, "auth.node-keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	k := filepath.Base(keys[0])
	b, err := os.ReadFile(keys[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "auth.node-keys", k), b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, logs := serveAuth(t, "--data-dir", old)
	got, err := os.ReadFile(filepath.Join(root, "old-data.node-keys", k))
	if err != nil || string(got) != string(b) {
		t.Fatalf("the old key was not moved: %v", err)
	}
	if _, err := os.Stat(filepath.Join(old, "auth.node-keys")); !os.IsNotExist(err) {
		t.Errorf("the old key directory is still there: %v", err)
	}
	if !strings.Contains(logs.String(), "moved the key nodes' key files out of the data directory") {
		t.Errorf("the move is not logged:\n%s", logs)
	}
}

// The flags table of `portico serve`'s auth server in docs/auth.md lists
// every --auth- flag with its environment variable, and nothing else.
func TestServeAuthFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/auth.md")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(--(?:auth-[a-z-]+|no-auth))[^`]*` \\| `([A-Z_]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		got[m[1]] = m[2]
	}
	want := map[string]string{}
	typ := reflect.TypeFor[ServeCmd]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		name := "--" + strings.ToLower(regexp.MustCompile(`([a-z])([A-Z])`).ReplaceAllString(f.Name, "$1-$2"))
		if strings.HasPrefix(name, "--auth-") || name == "--no-auth" {
			want[name] = f.Tag.Get("env")
		}
	}
	if len(want) < 5 || !reflect.DeepEqual(got, want) {
		t.Errorf("docs/auth.md lists %v; the flags are %v", got, want)
	}
}
