package auth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd/keyderiv"
	"github.com/porticohq/portico/authd/sessionserver"
	"github.com/porticohq/portico/internal/authtest"
)

// clientID is base64, as real client ids are (the subkey uses its bytes).
const clientID = "BPi5PB_UiIZ-cPz1GtV5i1I2iOSOHuimiXBI0e-Oe_u6X3oVAbCiAZOTEBtTXw4tsluTITPqA8zMsfxIKMjiqNQ"

type env struct {
	server  *httptest.Server
	storage *auth.FileStorage
	pages   *authtest.Pages
	params  auth.InitParams
}

// newEnv starts a real session server (SQLite in memory) on 127.0.0.1 and
// the fake pages of internal/authtest, for what only a fake can do: pick
// the core kit key, see the payload the pages received, inject errors,
// the v8 callback form and dapp shares. The SDK's flows against the real
// auth server are in realserver_test.go.
func newEnv(t *testing.T) *env {
	t.Helper()
	db, err := sessionserver.OpenSQLite(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	srv := httptest.NewServer(sessionserver.New(sessionserver.Config{Store: db}).Handler())
	t.Cleanup(srv.Close)
	return &env{
		server:  srv,
		storage: &auth.FileStorage{Dir: filepath.Join(t.TempDir(), "store")},
		pages: &authtest.Pages{
			Sessions: &sessionapi.Client{BaseURL: srv.URL},
			User:     auth.UserInfo{Name: "Ada", Email: "ada@example.com", Verifier: "w3a-google", VerifierID: "ada@example.com"},
		},
		params: auth.InitParams{ClientID: clientID, Network: auth.SapphireDevnet, SDKURL: srv.URL + "/v6", SessionTime: 3600},
	}
}

func (e *env) sdk(t *testing.T, opts ...auth.Option) *auth.SDK {
	t.Helper()
	s, err := auth.New(context.Background(), e.params, append([]auth.Option{auth.WithStorage(e.storage), auth.WithBrowser(e.pages.Open)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLoginRestoreLogout(t *testing.T) {
	e := newEnv(t)
	core := "0f0e0d0c0b0a09080706050403020100f0e0d0c0b0a090807060504030201000"
	e.pages.CoreKitKey = core
	ctx := context.Background()
	s := e.sdk(t)
	if s.State() != nil {
		t.Fatal("state before login")
	}
	if s.Endpoints().SessionServerURL != e.server.URL+"/" {
		t.Fatalf("session server %s", s.Endpoints().SessionServerURL)
	}
	st, err := s.Login(ctx, auth.LoginParams{LoginProvider: auth.Google})
	if err != nil {
		t.Fatal(err)
	}
	want, err := keyderiv.Derive(nil, core, clientID)
	if err != nil {
		t.Fatal(err)
	}
	if st.PrivKey != want.PrivKey || st.CoreKitKey != want.CoreKitKey || st.Ed25519PrivKey != want.Ed25519PrivKey || st.CoreKitEd25519PrivKey != want.CoreKitEd25519PrivKey {
		t.Fatalf("keys %+v", st)
	}
	if st.UserInfo == nil || st.UserInfo.TypeOfLogin != "google" || st.UserInfo.Email != "ada@example.com" || len(st.SessionID) != 64 {
		t.Fatalf("state %+v", st)
	}
	// What the pages received.
	last := e.pages.Last()
	if last.ActionType != "login" || last.Options.ClientID != clientID || last.Options.BuildEnv != auth.Production ||
		last.Options.SessionTime != 3600 || last.Params.Curve != auth.SECP256K1 ||
		!strings.HasPrefix(last.Params.RedirectURL, "http://127.0.0.1:") || !strings.Contains(last.Params.RedirectURL, "/callback/") {
		t.Fatalf("payload %+v", last)
	}
	if k, _ := s.PrivKey(); k != want.PrivKey {
		t.Fatalf("PrivKey %s", k)
	}
	if k, _ := s.Ed25519PrivKey(); k != want.Ed25519PrivKey {
		t.Fatalf("Ed25519PrivKey %s", k)
	}
	if saved, err := e.storage.Get("sessionID"); err != nil || saved != st.SessionID {
		t.Fatalf("saved session: %v", err)
	}
	info, err := os.Stat(filepath.Join(e.storage.Dir, "sessionID"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("session file mode %v %v", info.Mode(), err)
	}

	// A new SDK restores the session; with useCoreKitKey the getters
	// return the core kit keys.
	e.params.UseCoreKitKey = ptr(true)
	s2 := e.sdk(t)
	if got := s2.State(); got == nil || *got.UserInfo != *st.UserInfo || got.SessionID != st.SessionID || got.PrivKey != st.PrivKey {
		t.Fatalf("restored %+v", got)
	}
	if k, _ := s2.PrivKey(); k != want.CoreKitKey {
		t.Fatalf("core kit PrivKey %s", k)
	}
	if k, _ := s2.Ed25519PrivKey(); k != want.CoreKitEd25519PrivKey {
		t.Fatalf("core kit Ed25519PrivKey %s", k)
	}

	if err := s2.Logout(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s2.Logout(ctx); !errors.Is(err, auth.ErrNoUserFound) {
		t.Fatalf("second logout: %v", err)
	}
	if _, err := s2.UserInfo(); !errors.Is(err, auth.ErrNoUserFound) {
		t.Fatalf("UserInfo after logout: %v", err)
	}
	if _, err := s2.PrivKey(); !errors.Is(err, auth.ErrNoUserFound) {
		t.Fatalf("PrivKey after logout: %v", err)
	}
	if _, err := e.storage.Get("sessionID"); !errors.Is(err, auth.ErrNotStored) {
		t.Fatalf("session id kept: %v", err)
	}
	// The server record is invalidated at once.
	key, _ := eccrypto.ParsePrivateKeyHex(st.SessionID)
	if _, err := e.pages.Sessions.Get(ctx, key); !errors.Is(err, sessionapi.ErrNotFound) {
		t.Fatalf("record after logout: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestLoginB64ParamsCallback(t *testing.T) {
	e := newEnv(t)
	e.pages.B64Params = true
	st, err := e.sdk(t).Login(context.Background(), auth.LoginParams{LoginProvider: auth.GitHub, Curve: auth.ED25519})
	if err != nil {
		t.Fatal(err)
	}
	if st.UserInfo.TypeOfLogin != "github" || e.pages.Last().Params.Curve != auth.ED25519 {
		t.Fatalf("%+v", st.UserInfo)
	}
}

// A failed login reports the pages' error and leaves the saved session as
// it was.
func TestLoginErrorKeepsSession(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first, err := e.sdk(t).Login(ctx, auth.LoginParams{LoginProvider: auth.Google})
	if err != nil {
		t.Fatal(err)
	}
	e.pages.Error = "user closed the window"
	s := e.sdk(t)
	_, err = s.Login(ctx, auth.LoginParams{LoginProvider: auth.Google})
	var le *auth.LoginError
	if !errors.As(err, &le) || le.Message != "user closed the window" {
		t.Fatalf("err = %v", err)
	}
	if saved, _ := e.storage.Get("sessionID"); saved != first.SessionID {
		t.Fatal("saved session overwritten by a failed login")
	}
	if st := s.State(); st == nil || st.SessionID != first.SessionID {
		t.Fatal("state lost by a failed login")
	}
}

func TestLoginCancelAndTimeout(t *testing.T) {
	e := newEnv(t)
	opened := make(chan string, 1)
	idle := func(u string) error { opened <- u; return nil }
	ctx, cancel := context.WithCancel(context.Background())
	s := e.sdk(t, auth.WithBrowser(idle))
	done := make(chan error, 1)
	go func() { _, err := s.Login(ctx, auth.LoginParams{LoginProvider: auth.Google}); done <- err }()
	u := <-opened
	if !strings.HasPrefix(u, e.server.URL+"/v6/start#b64Params=") {
		t.Fatalf("login URL %s", u)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	s = e.sdk(t, auth.WithBrowser(func(string) error { return nil }), auth.WithLoginTimeout(200*time.Millisecond))
	if _, err := s.Login(context.Background(), auth.LoginParams{LoginProvider: auth.Google}); !errors.Is(err, auth.ErrLoginTimeout) {
		t.Fatalf("timeout: %v", err)
	}
	if _, err := e.storage.Get("sessionID"); !errors.Is(err, auth.ErrNotStored) {
		t.Fatal("a session was saved by an unfinished login")
	}
	if _, err := s.Login(context.Background(), auth.LoginParams{LoginProvider: "myspace"}); err == nil {
		t.Fatal("bad provider accepted")
	}
}

func TestTwoStepLogin(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	s := e.sdk(t)
	if _, err := s.LoginURL(ctx, auth.LoginParams{LoginProvider: auth.Google}); err == nil {
		t.Fatal("LoginURL without a redirect URL")
	}
	p, err := s.LoginURL(ctx, auth.LoginParams{LoginProvider: auth.JWT, RedirectURL: "https://app.example/cb", AppState: "xyz",
		ExtraLoginOptions: &auth.ExtraLoginOptions{IDToken: "tok", AdditionalParams: map[string]string{"a": "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	cb, err := e.pages.Authorize(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(cb, "https://app.example/cb#sessionId=") {
		t.Fatalf("callback %s", cb)
	}
	last := e.pages.Last()
	if last.Params.AppState != "xyz" || last.Params.ExtraLoginOptions.AdditionalParams["a"] != "b" {
		t.Fatalf("params %+v", last.Params)
	}
	st, err := p.Complete(ctx, cb)
	if err != nil {
		t.Fatal(err)
	}
	if st.UserInfo.TypeOfLogin != "jwt" {
		t.Fatalf("%+v", st)
	}
	// The callback of another SDK instance works too (servers complete
	// logins wherever the callback lands).
	if _, err := e.sdk(t).CompleteLogin(ctx, cb); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sdk(t).CompleteLogin(ctx, "https://app.example/cb#sessionId="+strings.Repeat("ab", 32)); !errors.Is(err, auth.ErrSessionNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
}

func TestDappShareRemembered(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.pages.User.DappShare = "seven words of a device share"
	e.params.LoginConfig = map[string]auth.LoginConfig{"google": {Verifier: "w3a-google", TypeOfLogin: auth.TypeGoogle, ClientID: "g"}}
	if _, err := e.sdk(t).Login(ctx, auth.LoginParams{LoginProvider: auth.Google}); err != nil {
		t.Fatal(err)
	}
	raw, err := e.storage.Get("dappShares")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m["w3a-google|ada@example.com"] != "seven words of a device share" {
		t.Fatalf("dapp shares %s", raw)
	}
	if _, err := e.sdk(t).Login(ctx, auth.LoginParams{LoginProvider: auth.Google}); err != nil {
		t.Fatal(err)
	}
	if got := e.pages.Last().Params.DappShare; got != "seven words of a device share" {
		t.Fatalf("dappShare sent: %q", got)
	}
}

func TestRestoreClearsInvalidSessions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cases := []struct{ name, saved string }{
		{"not hex", "not a key"},
		{"no record", strings.Repeat("cd", 32)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := e.storage.Set("sessionID", c.saved); err != nil {
				t.Fatal(err)
			}
			if s := e.sdk(t); s.State() != nil {
				t.Fatal("state from an invalid session")
			}
			if _, err := e.storage.Get("sessionID"); !errors.Is(err, auth.ErrNotStored) {
				t.Fatal("invalid session kept")
			}
		})
	}
	t.Run("record not a session", func(t *testing.T) {
		k, _ := eccrypto.GenerateKey()
		if err := e.pages.Sessions.Set(ctx, k, []byte(`{"privKey":"01"}`), 60); err != nil {
			t.Fatal(err)
		}
		_ = e.storage.Set("sessionID", eccrypto.PrivateKeyHex(k))
		if s := e.sdk(t); s.State() != nil {
			t.Fatal("state from a bad record")
		}
		if _, err := e.storage.Get("sessionID"); !errors.Is(err, auth.ErrNotStored) {
			t.Fatal("bad record's session kept")
		}
	})
	t.Run("server unreachable keeps it", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		dead := "http://" + ln.Addr().String() + "/"
		_ = ln.Close()
		saved := strings.Repeat("ef", 32)
		_ = e.storage.Set("sessionID", saved)
		if s := e.sdk(t, auth.WithSessionServer(dead)); s.State() != nil {
			t.Fatal("state without a server")
		}
		if got, _ := e.storage.Get("sessionID"); got != saved {
			t.Fatal("session cleared although the server was only unreachable")
		}
	})
}

func TestNewRejectsBadParams(t *testing.T) {
	var fe *auth.FieldError
	_, err := auth.New(context.Background(), auth.InitParams{ClientID: "c", Network: "moonnet"}, auth.WithStorage(&auth.FileStorage{Dir: t.TempDir()}))
	if !errors.As(err, &fe) || fe.Field != "network" {
		t.Fatalf("err = %v", err)
	}
	_, err = auth.New(context.Background(), auth.InitParams{ClientID: "c", Network: auth.Mainnet, SessionTime: 8 * 86400}, auth.WithStorage(&auth.FileStorage{Dir: t.TempDir()}))
	if !errors.As(err, &fe) || fe.Field != "sessionTime" {
		t.Fatalf("err = %v", err)
	}
}
