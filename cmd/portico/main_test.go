package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/config"
)

// strict reports whether missing test dependencies fail the run instead of
// skipping (make test sets it).
func strict() bool { return os.Getenv("PORTICO_TEST_STRICT") == "1" }

// started is a portico serve running in-process.
type started struct {
	m      *Main
	stdout *lockedBuffer
	logs   *lockedBuffer
}

// start runs Main on port 0 with cfg, after opts have set its other
// fields, and stops it when the test ends. Every log line is checked for
// secrets at the end.
func start(t testing.TB, cfg config.Config, opts ...func(*Main)) *started {
	t.Helper()
	if cfg.Listen == "" || cfg.Listen == config.DefaultListen {
		cfg.Listen = "127.0.0.1:0"
	}
	s := &started{stdout: &lockedBuffer{}, logs: &lockedBuffer{}}
	cfg.Log.Level = "debug"
	s.m = &Main{Config: cfg, Stdout: s.stdout, Stderr: s.logs}
	for _, o := range opts {
		o(s.m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.m.Run(ctx); err != nil {
		s.m.Close()
		t.Fatalf("run: %v\n%s", err, s.logs)
	}
	t.Cleanup(func() {
		if err := s.m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		logs := s.logs.String()
		for _, secret := range s.secrets() {
			if strings.Contains(logs, secret) {
				t.Errorf("secret %q reached the log", secret)
			}
		}
	})
	return s
}

// secrets are strings that must never appear in logs: keys and the
// secret-bearing parts of upstream URLs.
func (s *started) secrets() []string {
	out := []string{}
	if s.m.Key != "" {
		out = append(out, s.m.Key)
	}
	if s.m.Config.Admin.Token != "" {
		out = append(out, s.m.Config.Admin.Token)
	}
	for _, k := range s.m.Config.Keys {
		if k.Key != "" {
			out = append(out, k.Key)
		}
	}
	for _, n := range s.m.Config.Networks {
		for _, u := range n.Upstreams {
			if i := strings.Index(u.URL, "/secret"); i >= 0 {
				out = append(out, u.URL[i:])
			}
		}
	}
	return out
}

// key returns the key clients use.
func (s *started) key() string {
	if s.m.Key != "" {
		return s.m.Key
	}
	return s.m.Config.Keys[0].Key
}

// addr returns a network's own listener address.
func (s *started) addr(t testing.TB, network string) string {
	t.Helper()
	for _, ep := range s.m.Networks {
		if ep.Name == network {
			return ep.Addr
		}
	}
	t.Fatalf("no network %s", network)
	return ""
}

// url returns a network's HTTP URL on its own listener.
func (s *started) url(t testing.TB, network string) string {
	return "http://" + s.addr(t, network) + "/v3/" + s.key()
}

// wsURL returns a network's WebSocket URL on its own listener.
func (s *started) wsURL(t *testing.T, network string) string {
	return "ws://" + s.addr(t, network) + "/ws/v3/" + s.key()
}

// post sends a raw body and returns the status and response.
func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var readyRE = regexp.MustCompile(`^(\S+)\s+(http://\S+/v3/(\S+))\s+(ws://\S+/ws/v3/(\S+))\s+curl -s (http://\S+) -H 'Content-Type: application/json' -d '(.*)'$`)
