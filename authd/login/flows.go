package login

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/authwire"
)

// Steps of a login.
const (
	stepEmail      = "email"       // asks for the email address
	stepCode       = "code"        // asks for the one-time code
	stepOIDC       = "oidc"        // off to the identity provider
	stepMFASetup   = "mfa_setup"   // offers (or forces) MFA setup
	stepMFARecover = "mfa_recover" // asks for a second factor
	stepSocialCode = "social_code" // the backup account's one-time code
	stepPhrase     = "phrase"      // shows the new recovery phrase
)

// identity is a signed-in user, as the identity step proved it.
type identity struct {
	Verifier    string
	VerifierID  string
	IDToken     string
	TypeOfLogin string
	Name        string
	Email       string
	Picture     string
	// OAuthIDToken and OAuthAccessToken are the provider's, for OIDC.
	OAuthIDToken     string
	OAuthAccessToken string
	// nonce is the token's nonce claim (OIDC).
	nonce string
}

// otp is a one-time code sent to an email address.
type otp struct {
	Email    string
	Hash     [32]byte
	Expires  time.Time
	Attempts int
}

// socialStep is the backup account's passwordless login during MFA setup
// or recovery.
type socialStep struct {
	Setup    bool // setting up (else recovering)
	Password string
	Code     otp
}

// flow is one login in progress. Its fields are guarded by mu.
type flow struct {
	mu sync.Mutex

	ID      string
	client  string // the client IP that started it (its limit key)
	binding string // the cookie's value
	CSRF    string
	Expires time.Time

	Env     authwire.BuildEnv
	Base    string // the base URL of Env
	Payload authwire.LoginPayload
	Lang    authwire.Language
	Step    string
	Notice  string // a translation key shown on the page (a form error)

	Code otp

	// OIDC.
	State, Nonce, PKCE string
	Provider           *oidcProvider
	AuthURL            string

	Identity *identity
	// NetworkKey is the key network's key for the user, held only until
	// the login ends.
	NetworkKey *secp256k1.PrivateKey
	// NodeIndexes are the nodes whose shares rebuilt NetworkKey, and
	// NodeSigs their signed token commitments (JSON strings), for the
	// session record.
	NodeIndexes []int
	NodeSigs    []string
	Record      *mfaRecord
	RecordVer   int64
	Social      *socialStep
	SkipAllowed bool
	// Done carries the result of MFA setup to the phrase page.
	Done *result
}

// result is what finishes a login.
type result struct {
	CoreKey     *secp256k1.PrivateKey
	MFAEnabled  bool
	DeviceShare string
	Phrase      string
}

// wipe drops the key material of a finished or expired login.
func (f *flow) wipe() {
	if f.NetworkKey != nil {
		f.NetworkKey.Zero()
		f.NetworkKey = nil
	}
	if f.Done != nil && f.Done.CoreKey != nil {
		f.Done.CoreKey.Zero()
	}
	f.Done, f.Social, f.Identity = nil, nil, nil
}

// Errors of flows.add.
var (
	errFull       = errors.New("login: too many logins in progress")
	errClientFull = errors.New("login: too many logins in progress from this client")
	errStarted    = errors.New("login: this login payload has already started a login")
)

// flows holds the logins in progress in memory, each until it expires or
// ends. It is bounded three ways: at most max flows, at most perClient
// per client IP, and one flow per login payload. When the table is full,
// the oldest flow of the client holding the most is dropped, so clients
// that flood it lose their own logins, not other users'.
type flows struct {
	mu        sync.Mutex
	byID      map[string]*flow
	byState   map[string]string // OIDC state → flow id
	byClient  map[string]int    // client IP → flows held
	started   map[string]time.Time
	max       int
	perClient int
	ttl       time.Duration
	now       func() time.Time
}

func newFlows(max, perClient int, ttl time.Duration, now func() time.Time) *flows {
	return &flows{byID: map[string]*flow{}, byState: map[string]string{}, byClient: map[string]int{}, started: map[string]time.Time{},
		max: max, perClient: perClient, ttl: ttl, now: now}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// add makes a new flow for client, started by the login payload named
// payload (its loginId's public key): errStarted if that payload already
// started one, errClientFull if the client holds perClient flows.
func (s *flows) add(client, payload string) (*flow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if until, ok := s.started[payload]; ok && now.Before(until) {
		return nil, errStarted
	}
	if s.byClient[client] >= s.perClient {
		s.sweepLocked()
		if s.byClient[client] >= s.perClient {
			return nil, errClientFull
		}
	}
	if len(s.byID) >= s.max {
		s.sweepLocked()
		if len(s.byID) >= s.max && !s.evictLocked() {
			return nil, errFull
		}
	}
	if len(s.started) >= 2*s.max {
		s.sweepLocked()
	}
	f := &flow{ID: randomHex(16), client: client, binding: randomHex(16), CSRF: randomHex(16), Expires: now.Add(s.ttl)}
	s.byID[f.ID] = f
	s.byClient[client]++
	// The payload stays spent for as long as a flow could live; the pages
	// also invalidate its record on the session server.
	s.started[payload] = f.Expires
	return f, nil
}

// evictLocked drops the oldest flow of the client holding the most.
func (s *flows) evictLocked() bool {
	top := ""
	for c, n := range s.byClient {
		if top == "" || n > s.byClient[top] {
			top = c
		}
	}
	var oldest *flow
	for _, f := range s.byID {
		if f.client == top && (oldest == nil || f.Expires.Before(oldest.Expires)) {
			oldest = f
		}
	}
	if oldest == nil {
		return false
	}
	s.removeLocked(oldest.ID)
	return true
}

func (s *flows) sweepLocked() {
	now := s.now()
	for id, f := range s.byID {
		if now.After(f.Expires) {
			s.removeLocked(id)
		}
	}
	for p, until := range s.started {
		if !now.Before(until) {
			delete(s.started, p)
		}
	}
}

func (s *flows) removeLocked(id string) {
	f, ok := s.byID[id]
	if !ok {
		return
	}
	delete(s.byID, id)
	if s.byClient[f.client]--; s.byClient[f.client] <= 0 {
		delete(s.byClient, f.client)
	}
	if f.State != "" {
		delete(s.byState, f.State)
	}
	go func() { f.mu.Lock(); f.wipe(); f.mu.Unlock() }()
}

// get returns a live flow whose cookie binding matches.
func (s *flows) get(id, binding string) (*flow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.byID[id]
	if !ok {
		return nil, fail(CodeFlowExpired, errors.New("unknown login id"))
	}
	if s.now().After(f.Expires) {
		s.removeLocked(id)
		return nil, fail(CodeFlowExpired, errors.New("login expired"))
	}
	if subtle.ConstantTimeCompare([]byte(f.binding), []byte(binding)) != 1 {
		return nil, fail(CodeForbidden, errors.New("the login cookie does not match"))
	}
	return f, nil
}

// bindState registers an OIDC state for a flow.
func (s *flows) bindState(f *flow, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.State != "" {
		delete(s.byState, f.State)
	}
	f.State = state
	s.byState[state] = f.ID
}

// byOIDCState returns the flow id of an OIDC state, once.
func (s *flows) byOIDCState(state string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.byState[state]
	delete(s.byState, state)
	return id, ok
}

// remove ends a flow.
func (s *flows) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.removeLocked(id)
}

// len is the number of flows held.
func (s *flows) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// cookieName is the cookie that binds a flow to the browser.
func cookieName(id string) string {
	h := sha256.Sum256([]byte(id))
	return "pl_" + hex.EncodeToString(h[:6])
}
