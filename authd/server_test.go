package authd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/login"
	"github.com/porticohq/portico/internal/testsvc"
)

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// serve builds a server from cfg, serves it on 127.0.0.1 with the public
// URL the listener's, and closes both when the test ends.
func serve(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	cfg.PublicURL = "http://" + hs.Listener.Addr().String()
	s, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = s.Handler()
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, hs.URL
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The server answers what its front page says it does, logs through the
// logger it is given, and serves sessions from its data directory or
// PostgreSQL.
func TestServer(t *testing.T) {
	backends := []struct {
		name string
		cfg  func(t *testing.T) Config
		warn bool
	}{
		{"memory", func(*testing.T) Config { return Config{} }, true},
		{"data dir", func(t *testing.T) Config { return Config{DataDir: t.TempDir()} }, false},
		{"postgres", func(t *testing.T) Config { return Config{Postgres: testsvc.Postgres(t), NodeKeyDir: t.TempDir()} }, false},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			log := &logBuffer{}
			cfg := b.cfg(t)
			cfg.Networks = []string{"sapphire_devnet", "aqua"}
			cfg.DevLogCodes = true
			cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
			s, url := serve(t, cfg)
			if got := s.BaseURLs(); got[authwire.Production] != url || got[authwire.Staging] != url+"/staging" {
				t.Errorf("base URLs %v", got)
			}
			if got := s.Networks(); len(got) != 2 || got[0] != "sapphire_devnet" {
				t.Errorf("networks %v", got)
			}
			if strings.Contains(log.String(), "kept in memory") != b.warn {
				t.Errorf("memory warning: want %v, log:\n%s", b.warn, log)
			}

			status, page := get(t, url+"/")
			for _, want := range []string{`<html lang="en"`, "<code>sapphire_devnet</code></td><td>5</td><td>3</td>", "<code>aqua</code>",
				"<code>POST /store/set</code>", "<code>email_passwordless</code>"} {
				if status != 200 || !strings.Contains(page, want) {
					t.Fatalf("GET /: %d, lacks %q:\n%s", status, want, page)
				}
			}
			// Every link on the front page answers.
			links := regexp.MustCompile(`href="([^"?][^"]*)"`).FindAllStringSubmatch(page, -1)
			if len(links) < 5 {
				t.Fatalf("links %q", links)
			}
			for _, l := range links {
				u := l[1]
				if strings.HasPrefix(u, "/") {
					u = url + u
				}
				if status, body := get(t, u); status != 200 {
					t.Errorf("%s: %d %s", u, status, body)
				}
			}
			if !strings.Contains(log.String(), "DEVELOPMENT SETUP") {
				t.Error("the embedded key network is not labelled a development setup")
			}
			if cfg.DataDir != "" {
				// Every state file is private; the node keys are beside the
				// data directory, not in it.
				files, _ := filepath.Glob(filepath.Join(cfg.DataDir, "keynet", "*.db"))
				files = append(files, filepath.Join(cfg.DataDir, DatabaseFile))
				keys, _ := filepath.Glob(filepath.Join(cfg.DataDir+".node-keys", "*.key"))
				if len(files) != 11 || len(keys) != 10 {
					t.Fatalf("%d databases, %d node keys", len(files), len(keys))
				}
				for _, f := range append(files, keys...) {
					if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
						t.Errorf("%s: mode %v %v, want 0600", f, fi.Mode(), err)
					}
				}
			}
			if status, body := get(t, url+HealthPath); status != 200 || body != "ok\n" {
				t.Errorf("health: %d %q", status, body)
			}

			// A record written over HTTP reads back through the pages'
			// in-process client to the same store, and the reverse.
			ctx := context.Background()
			key, _ := eccrypto.GenerateKey()
			overHTTP := &sessionapi.Client{BaseURL: url}
			if err := overHTTP.Set(ctx, key, []byte(`{"a":1}`), 60); err != nil {
				t.Fatal(err)
			}
			if got, err := overHTTP.Get(ctx, key); err != nil || string(got) != `{"a":1}` {
				t.Fatalf("get: %s %v", got, err)
			}
			var se *sessionapi.StatusError
			if err := overHTTP.Set(ctx, key, []byte("{}"), sessionapi.MaxTimeout+1); !errors.As(err, &se) || se.Status != 400 {
				t.Fatalf("long timeout: %v", err)
			}
		})
	}
}

// New refuses a bad config, names the field, and leaves nothing running.
func TestNewErrors(t *testing.T) {
	before := runtime.NumGoroutine()
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no public URL", Config{}, "authd: config: PublicURL: required"},
		{"unknown network", Config{PublicURL: "http://a", Networks: []string{"sapphire_devnet", "ropsten"}}, `unknown network "ropsten"`},
		{"bad verifier", Config{PublicURL: "http://a", Login: LoginFile{Verifiers: []idtoken.Config{{Verifier: "v", TypeOfLogin: "jwt"}}}}, `verifier "v": jwksUrl`},
		{"oidc without client id", Config{PublicURL: "http://a", Login: LoginFile{OIDC: []login.OIDCProvider{{Name: "google", DiscoveryURL: "https://accounts.google.com"}}}}, `verifier "google": clientId`},
		{"same base URL twice", Config{PublicURL: "http://a", Login: LoginFile{BaseURLs: map[authwire.BuildEnv]string{authwire.Staging: "http://a"}}}, "baseUrls.staging"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(context.Background(), c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	settled(t, before)
}

// Close stops every goroutine New started (the key nodes, the sweeper).
func TestCloseStopsEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	s, err := New(context.Background(), Config{PublicURL: "http://127.0.0.1:1", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if runtime.NumGoroutine() <= before {
		t.Fatal("nothing started")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	settled(t, before)
}

// settled waits until no more goroutines run than before.
func settled(t *testing.T, before int) {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
