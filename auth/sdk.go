// Package auth is a Go port of a mobile social-login SDK at its v7 surface
// (the Swift SDK's Web3Auth v7): an app configures an SDK with InitParams,
// logs a user in through the hosted login pages in the browser, and gets
// back key material and user info in a State. The session is kept on a
// session server (package sessionapi), encrypted to a session key that only
// this device holds; the session key lives in the OS keyring.
//
// The types the SDK shares with the login pages (InitParams, LoginParams,
// State and the enumerations) are defined in package authwire, which the
// server imports without linking the SDK; they are re-exported here under
// the same names.
//
// MigrateV6 turns a v6 configuration into the v7 one.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pkg/browser"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/auth/sessionapi"
)

// DefaultLoginTimeout bounds a login, from opening the browser to the
// callback; the loginId record expires after as long.
const DefaultLoginTimeout = 600 * time.Second

// SDK is one configured client. Its methods are safe for concurrent use.
type SDK struct {
	params       InitParams
	endpoints    Endpoints
	sessions     *sessionapi.Client
	storage      Storage
	openBrowser  func(url string) error
	loginTimeout time.Duration
	callbackAddr string
	log          *slog.Logger
	now          func() time.Time

	mu    sync.Mutex
	state *State
}

type config struct {
	storage       Storage
	httpClient    *http.Client
	browser       func(string) error
	sessionServer string
	loginTimeout  time.Duration
	callbackAddr  string
	log           *slog.Logger
	now           func() time.Time
}

// Option changes a default of New.
type Option func(*config)

// WithStorage keeps the session id and dapp shares in s instead of
// DefaultStorage(clientId).
func WithStorage(s Storage) Option { return func(c *config) { c.storage = s } }

// WithHTTPClient sends the session server requests with hc.
func WithHTTPClient(hc *http.Client) Option { return func(c *config) { c.httpClient = hc } }

// WithBrowser opens login URLs with open instead of the system browser.
func WithBrowser(open func(url string) error) Option { return func(c *config) { c.browser = open } }

// WithSessionServer sets the session server's base URL (see ResolveEndpoints).
func WithSessionServer(url string) Option { return func(c *config) { c.sessionServer = url } }

// WithLoginTimeout bounds Login and the lifetime of loginId records.
func WithLoginTimeout(d time.Duration) Option { return func(c *config) { c.loginTimeout = d } }

// WithCallbackAddr sets the loopback address Login listens on for the
// redirect; the default "127.0.0.1:0" picks a free port (RFC 8252). A fixed
// port helps when the pages only accept registered redirect URLs.
func WithCallbackAddr(addr string) Option { return func(c *config) { c.callbackAddr = addr } }

// WithClock sets the clock pending logins expire by; time.Now by default.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithLogger logs to l; secrets are never logged.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// New validates p, resolves the endpoints and restores the saved session if
// the session server still holds it. A saved session that is invalid or
// expired is cleared; one that cannot be checked (the server is
// unreachable) is kept for next time. Neither is an error.
func New(ctx context.Context, p InitParams, opts ...Option) (*SDK, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	c := config{loginTimeout: DefaultLoginTimeout, callbackAddr: "127.0.0.1:0", browser: browser.OpenURL}
	for _, o := range opts {
		o(&c)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.storage == nil {
		st, err := DefaultStorage(p.ClientID)
		if err != nil {
			return nil, err
		}
		c.storage = st
	}
	if c.sessionServer != "" {
		if err := checkHTTPURL("sessionServer", c.sessionServer); err != nil {
			return nil, err
		}
	}
	s := &SDK{
		params:       p,
		endpoints:    ResolveEndpoints(p, c.sessionServer),
		storage:      c.storage,
		openBrowser:  c.browser,
		loginTimeout: c.loginTimeout,
		callbackAddr: c.callbackAddr,
		log:          c.log,
		now:          c.now,
	}
	s.sessions = &sessionapi.Client{BaseURL: s.endpoints.SessionServerURL, HTTP: c.httpClient}
	s.restore(ctx)
	return s, nil
}

// restore loads the saved session, if any.
func (s *SDK) restore(ctx context.Context) {
	id, err := s.storage.Get(storageSessionID)
	if errors.Is(err, ErrNotStored) {
		return
	}
	if err != nil {
		s.log.Warn("auth: cannot read the saved session", "err", err)
		return
	}
	st, err := s.fetchSession(ctx, id)
	var fe *FieldError
	var se *SessionError
	var status *sessionapi.StatusError
	switch {
	case err == nil:
		s.mu.Lock()
		s.state = st
		s.mu.Unlock()
	case errors.Is(err, ErrSessionNotFound), errors.As(err, &fe), errors.As(err, &se),
		errors.As(err, &status) && status.Status/100 == 4:
		s.log.Info("auth: the saved session is no longer valid; cleared", "reason", err)
		if err := s.storage.Delete(storageSessionID); err != nil {
			s.log.Warn("auth: cannot clear the saved session", "err", err)
		}
	default:
		s.log.Warn("auth: cannot check the saved session; kept for later", "err", err)
	}
}

// fetchSession reads and decodes the session record of sessionID.
func (s *SDK) fetchSession(ctx context.Context, sessionID string) (*State, error) {
	key, err := eccrypto.ParsePrivateKeyHex(sessionID)
	if err != nil {
		return nil, &FieldError{Field: "sessionId", Reason: "is not a 64-hex-character key"}
	}
	payload, err := s.sessions.Get(ctx, key)
	switch {
	case errors.Is(err, sessionapi.ErrNotFound):
		return nil, ErrSessionNotFound
	case errors.Is(err, eccrypto.ErrMACMismatch), errors.Is(err, eccrypto.ErrBadPadding):
		return nil, &SessionError{Field: "data", Err: err}
	case err != nil:
		var fe *eccrypto.FieldError
		if errors.As(err, &fe) {
			return nil, &SessionError{Field: "data", Err: err}
		}
		return nil, err
	}
	st, err := decodeSession(payload)
	if err != nil {
		return nil, err
	}
	st.SessionID = eccrypto.PrivateKeyHex(key)
	return st, nil
}

// decodeSession reads a session payload as the Swift SDK does: privKey,
// ed25519PrivKey and userInfo.typeOfLogin are required; secp256k1 keys are
// padded to 64 hex characters.
func decodeSession(payload []byte) (*State, error) {
	var st State
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, &SessionError{Field: "data", Err: errors.New("not a JSON object")}
	}
	switch {
	case st.PrivKey == "":
		return nil, &SessionError{Field: "privKey"}
	case st.Ed25519PrivKey == "":
		return nil, &SessionError{Field: "ed25519PrivKey"}
	case st.UserInfo == nil:
		return nil, &SessionError{Field: "userInfo"}
	case st.UserInfo.TypeOfLogin == "":
		return nil, &SessionError{Field: "userInfo.typeOfLogin"}
	}
	st.PrivKey = padKey(st.PrivKey)
	st.CoreKitKey = padKey(st.CoreKitKey)
	st.SessionID = ""
	return &st, nil
}

func padKey(k string) string {
	if k != "" && len(k) < 64 {
		return strings.Repeat("0", 64-len(k)) + k
	}
	return k
}

// InitParams returns the parameters the SDK was made with.
func (s *SDK) InitParams() InitParams { return s.params }

// Endpoints returns the resolved login pages and session server URLs.
func (s *SDK) Endpoints() Endpoints { return s.endpoints }

// State returns a copy of the current state, or nil when no user is
// logged in.
func (s *SDK) State() *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		return nil
	}
	return cloneState(s.state)
}

func cloneState(st *State) *State {
	c := *st
	if st.UserInfo != nil {
		u := *st.UserInfo
		c.UserInfo = &u
	}
	return &c
}

func (s *SDK) useCoreKit() bool { return s.params.UseCoreKitKey != nil && *s.params.UseCoreKitKey }

// PrivKey returns the secp256k1 private key in hex: the core kit key when
// InitParams.UseCoreKitKey is true, the app-scoped key otherwise. Without a
// user it returns ErrNoUserFound (the Swift SDK returns "").
func (s *SDK) PrivKey() (string, error) {
	st := s.State()
	if st == nil {
		return "", ErrNoUserFound
	}
	if s.useCoreKit() {
		return st.CoreKitKey, nil
	}
	return st.PrivKey, nil
}

// Ed25519PrivKey returns the ed25519 private key (seed ‖ public key) in
// hex, chosen as PrivKey chooses.
func (s *SDK) Ed25519PrivKey() (string, error) {
	st := s.State()
	if st == nil {
		return "", ErrNoUserFound
	}
	if s.useCoreKit() {
		return st.CoreKitEd25519PrivKey, nil
	}
	return st.Ed25519PrivKey, nil
}

// UserInfo returns the logged-in user, or ErrNoUserFound.
func (s *SDK) UserInfo() (*UserInfo, error) {
	st := s.State()
	if st == nil || st.UserInfo == nil {
		return nil, ErrNoUserFound
	}
	return st.UserInfo, nil
}

// Logout invalidates the session on the session server (an encrypted empty
// record that expires in a second) and clears the saved session id and
// dapp shares. Without a user it returns ErrNoUserFound. Local state is
// cleared even when the server cannot be reached; that error is returned.
func (s *SDK) Logout(ctx context.Context) error {
	s.mu.Lock()
	st := s.state
	s.state = nil
	s.mu.Unlock()
	if st == nil {
		return ErrNoUserFound
	}
	var errs []error
	key, err := eccrypto.ParsePrivateKeyHex(st.SessionID)
	if err == nil {
		if err := s.sessions.Invalidate(ctx, key); err != nil {
			errs = append(errs, fmt.Errorf("auth: logout: session server: %w", err))
		}
	}
	for _, k := range []string{storageSessionID, storageDappShares} {
		if err := s.storage.Delete(k); err != nil {
			errs = append(errs, fmt.Errorf("auth: logout: %w", err))
		}
	}
	return errors.Join(errs...)
}

// dappShares reads the saved map "verifier|verifierId" → dappShare.
func (s *SDK) dappShares() map[string]string {
	m := map[string]string{}
	raw, err := s.storage.Get(storageDappShares)
	if err != nil {
		return m
	}
	if json.Unmarshal([]byte(raw), &m) != nil {
		return map[string]string{}
	}
	return m
}

// savedDappShare finds a saved share for the verifier of the first (by
// key order) LoginConfig entry.
func (s *SDK) savedDappShare() string {
	if len(s.params.LoginConfig) == 0 {
		return ""
	}
	keys := make([]string, 0, len(s.params.LoginConfig))
	for k := range s.params.LoginConfig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	verifier := s.params.LoginConfig[keys[0]].Verifier
	shares := s.dappShares()
	ids := make([]string, 0, len(shares))
	for k := range shares {
		if strings.HasPrefix(k, verifier+"|") {
			ids = append(ids, k)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	sort.Strings(ids)
	return shares[ids[0]]
}

// saveDappShare remembers the user's dapp share for the next login.
func (s *SDK) saveDappShare(u *UserInfo) error {
	if u == nil || u.DappShare == "" || u.Verifier == "" {
		return nil
	}
	m := s.dappShares()
	m[u.Verifier+"|"+u.VerifierID] = u.DappShare
	b, _ := json.Marshal(m)
	return s.storage.Set(storageDappShares, string(b))
}
