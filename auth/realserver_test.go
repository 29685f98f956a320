package auth_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd"
	"github.com/porticohq/portico/authd/clients"
	"github.com/porticohq/portico/internal/authtest"
)

// The SDK's flows run against the real auth server (package authd) in
// this process: login pages, session server and an embedded key network.
// The fake pages of internal/authtest are kept for fault injection only.

// syncBuffer is a log sink safe for concurrent writes.
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

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

type realEnv struct {
	URL      string
	Logs     *syncBuffer
	Clock    *testClock
	Sessions *sessionapi.Client
	storage  *auth.FileStorage
}

const appRedirect = "https://app.example/cb"

// newRealEnv starts the auth server on 127.0.0.1, reached as localhost
// (so the SDK's loopback callback on 127.0.0.1 is told apart), with the
// test client registered for the SDK's loopback callbacks and
// appRedirect, codes in the log (dev mode) and the session server on a
// test clock.
func newRealEnv(t *testing.T) *realEnv {
	t.Helper()
	e := &realEnv{Logs: &syncBuffer{}, Clock: &testClock{t: time.Now()}}
	hs := httptest.NewUnstartedServer(nil)
	_, port, _ := net.SplitHostPort(hs.Listener.Addr().String())
	e.URL = "http://localhost:" + port
	srv, err := authd.New(context.Background(), authd.Config{PublicURL: e.URL, DevLogCodes: true, Networks: []string{"sapphire_devnet"},
		Logger: slog.New(slog.NewTextHandler(e.Logs, nil)), Now: e.Clock.Now,
		Clients: []clients.Client{{ID: clientID, RedirectURLs: []string{"http://127.0.0.1/callback/", appRedirect}}}})
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = srv.Handler()
	hs.Start()
	t.Cleanup(func() { hs.Close(); _ = srv.Close() })
	e.Sessions = &sessionapi.Client{BaseURL: e.URL}
	e.storage = &auth.FileStorage{Dir: t.TempDir()}
	return e
}

var devCode = regexp.MustCompile(`DEV ONLY: passwordless code for (\S+): (\d{6})`)

func (e *realEnv) code(email string) string {
	c := ""
	for _, m := range devCode.FindAllStringSubmatch(e.Logs.String(), -1) {
		if m[1] == email {
			c = m[2]
		}
	}
	return c
}

// browser is the SDK's browser: it logs email in through the real pages
// and loads the SDK's loopback callback.
func (e *realEnv) browser(email string) func(string) error {
	return func(u string) error {
		cb, err := authtest.NewBrowser("http://127.0.0.1:").Passwordless(u, email, e.code)
		if err != nil {
			return err
		}
		return authtest.FollowCallback(context.Background(), nil, cb)
	}
}

func (e *realEnv) sdk(t *testing.T, p auth.InitParams, opts ...auth.Option) *auth.SDK {
	t.Helper()
	p.ClientID, p.Network, p.SDKURL = clientID, auth.SapphireDevnet, e.URL
	s, err := auth.New(context.Background(), p, append([]auth.Option{auth.WithStorage(e.storage), auth.WithClock(e.Clock.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRealServerLoginRestoreLogout(t *testing.T) {
	e := newRealEnv(t)
	ctx := context.Background()
	s := e.sdk(t, auth.InitParams{}, auth.WithBrowser(e.browser("ada@example.com")))
	st, err := s.Login(ctx, auth.LoginParams{LoginProvider: auth.EmailPasswordless, MfaLevel: auth.MFANone})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.PrivKey) != 64 || len(st.CoreKitKey) != 64 || st.PrivKey == st.CoreKitKey || len(st.Ed25519PrivKey) != 128 ||
		st.UserInfo.VerifierID != "ada@example.com" || st.UserInfo.TypeOfLogin != "passwordless" || len(st.NodeIndexes) != 3 {
		t.Fatalf("state %+v", st)
	}
	// A new SDK restores it; with useCoreKitKey the getters give the core
	// kit keys.
	s2 := e.sdk(t, auth.InitParams{UseCoreKitKey: ptr(true)})
	if got := s2.State(); got == nil || got.SessionID != st.SessionID || got.PrivKey != st.PrivKey {
		t.Fatalf("restored %+v", got)
	}
	if k, _ := s2.PrivKey(); k != st.CoreKitKey {
		t.Fatal("useCoreKitKey: PrivKey is not the core kit key")
	}
	// The same user logs in again: the same keys.
	again, err := e.sdk(t, auth.InitParams{}, auth.WithBrowser(e.browser("ada@example.com"))).Login(ctx, auth.LoginParams{LoginProvider: auth.EmailPasswordless, MfaLevel: auth.MFANone})
	if err != nil || again.PrivKey != st.PrivKey {
		t.Fatalf("second login: %v", err)
	}
	if err := s2.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s2.Logout(ctx); !errors.Is(err, auth.ErrNoUserFound) {
		t.Fatalf("second logout: %v", err)
	}
	key, _ := eccrypto.ParsePrivateKeyHex(st.SessionID)
	if _, err := e.Sessions.Get(ctx, key); !errors.Is(err, sessionapi.ErrNotFound) {
		t.Fatalf("record after logout: %v", err)
	}
}

// The two-step login against the real pages: the record lives for the
// default 86400 s (alive just before), the loginId record is deleted after
// completion, a second callback is refused, and an expired pending login
// returns ErrLoginExpired.
func TestRealServerTwoStepLogin(t *testing.T) {
	e := newRealEnv(t)
	ctx := context.Background()
	for _, c := range []struct {
		name        string
		sessionTime int
		lifetime    time.Duration
	}{
		{"default session time", 0, 86400 * time.Second},
		{"sessionTime 3600", 3600, time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := e.sdk(t, auth.InitParams{SessionTime: c.sessionTime})
			p, err := s.LoginURL(ctx, auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: appRedirect, MfaLevel: auth.MFANone})
			if err != nil {
				t.Fatal(err)
			}
			cb, err := authtest.NewBrowser(appRedirect).Passwordless(p.URL, "bea@example.com", e.code)
			if err != nil {
				t.Fatal(err)
			}
			st, err := p.Complete(ctx, cb)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Complete(ctx, cb); !errors.Is(err, auth.ErrLoginCompleted) {
				t.Fatalf("second callback: %v", err)
			}
			_, frag, _ := strings.Cut(p.URL, "#b64Params=")
			raw, _ := base64.RawURLEncoding.DecodeString(frag)
			var start struct{ LoginID string }
			_ = json.Unmarshal(raw, &start)
			loginKey, err := eccrypto.ParsePrivateKeyHex(start.LoginID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Sessions.Get(ctx, loginKey); !errors.Is(err, sessionapi.ErrNotFound) {
				t.Fatalf("loginId record after completion: %v", err)
			}
			key, _ := eccrypto.ParsePrivateKeyHex(st.SessionID)
			e.Clock.Advance(c.lifetime - time.Second)
			if _, err := e.Sessions.Get(ctx, key); err != nil {
				t.Fatalf("record a second before sessionTime: %v", err)
			}
			e.Clock.Advance(time.Second)
			if _, err := e.Sessions.Get(ctx, key); !errors.Is(err, sessionapi.ErrNotFound) {
				t.Fatalf("record at sessionTime: %v", err)
			}
		})
	}
	t.Run("expired", func(t *testing.T) {
		s := e.sdk(t, auth.InitParams{})
		p, err := s.LoginURL(ctx, auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: appRedirect})
		if err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(auth.DefaultLoginTimeout + time.Second)
		if _, err := p.Complete(ctx, appRedirect+"#sessionId="+strings.Repeat("ab", 32)); !errors.Is(err, auth.ErrLoginExpired) {
			t.Fatalf("expired: %v", err)
		}
		// The pages refuse it too: its record expired on the server.
		if cb, st, _ := authtest.NewBrowser(appRedirect).Start(p.URL); cb != "" || st != 404 {
			t.Fatalf("pages on an expired login: %q %d", cb, st)
		}
	})
}
