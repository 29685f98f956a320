// Package dashboard is the gateway's web dashboard for the holder of the
// admin token, served under /dashboard/ on the shared listener: usage
// charts, every network's nodes, and API keys (create, change balance,
// revoke).
//
// It keeps no data of its own. Every read and every change goes through
// the admin API (package admin), which the dashboard calls in-process with
// the admin token as its bearer: the browser reaches the admin API's
// /admin/v1/{path} at /dashboard/api/v1/{path}, signed in by a session
// cookie, and never holds the token once it has sent the sign-in form.
//
//	GET  /dashboard/               the dashboard, or the sign-in form without a session
//	POST /dashboard/signin         form field token; sets the session cookie
//	POST /dashboard/signout        form field csrf; ends the session
//	GET  /dashboard/static/{file}  the embedded CSS, JavaScript and icon
//	     /dashboard/api/v1/{path}  the admin API, for a session
//
// Sessions are random ids in this process's memory (a restart signs
// everyone out); the cookie is HttpOnly, SameSite=Strict and Secure over
// TLS. A request that changes something must come from a page of the same
// origin (Origin, else Referer) and carry the session's CSRF token.
// Without a session, a client address gets a bounded number of requests
// (Config.PageLimit; the addresses tracked are bounded by
// Config.MaxClients). The sign-in form's token is checked by the same
// admintoken.Checker as the admin API's bearer (Config.Tokens): wrong
// tokens from an address are slowed, whichever door they came through,
// and a sign-in with the right token is held like them but never refused.
package dashboard

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/porticohq/portico/admin/admintoken"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/dashboard/"

// Network is one network as a client reaches it: the bases of its
// endpoint URLs, to which the dashboard appends /v3/<key> and
// /ws/v3/<key>.
type Network struct {
	Name   string `json:"name"`
	Family string `json:"family"`
	// HTTP is the base of the HTTP endpoint, e.g. http://127.0.0.1:8702.
	HTTP string `json:"http"`
	// WS is the base of the WebSocket endpoint, e.g. ws://127.0.0.1:8702.
	WS string `json:"ws"`
}

// The defaults of Config's limits, as docs/operations.md lists them.
var (
	DefaultSessionTTL  = 12 * time.Hour
	DefaultMaxSessions = 64
	DefaultPageLimit   = Limit{Burst: 60, Every: 500 * time.Millisecond}
	DefaultMaxClients  = 4096
)

// Config configures the dashboard.
type Config struct {
	// Admin is the admin API's handler (an *admin.API); required. It is
	// called in-process with Token as its bearer.
	Admin http.Handler
	// Token is the admin token: what the sign-in form asks for, and what
	// the dashboard sends to Admin; required.
	Token string
	// Tokens checks the sign-in form's token and slows wrong ones; pass
	// the admin API's (admin.API.Tokens), so that guesses through either
	// count together. Nil makes one for Token with Now as its clock.
	Tokens *admintoken.Checker
	// Networks lists the networks whose endpoint URLs are shown with a
	// new key. It is called for each page, so a caller can fill it once
	// its listeners are bound; nil shows none.
	Networks func() []Network
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger records sign-ins and sign-outs (never tokens or session ids).
	Logger *slog.Logger
	// SessionTTL is how long a sign-in lasts; zero means
	// DefaultSessionTTL.
	SessionTTL time.Duration
	// MaxSessions bounds the sessions held; signing in when it is reached
	// ends the oldest. Zero means DefaultMaxSessions.
	MaxSessions int
	// PageLimit bounds requests without a session per client address
	// (the sign-in form and its assets; sign-in attempts are bounded by
	// Tokens instead, so that nobody's page requests can keep the admin
	// from signing in); zero means DefaultPageLimit.
	PageLimit Limit
	// MaxClients bounds the client addresses each limit tracks; zero
	// means DefaultMaxClients.
	MaxClients int
}

// Handler serves the dashboard under Prefix.
type Handler struct {
	cfg      Config
	tokens   *admintoken.Checker
	sessions *sessions
	pages    *limiter
	assets   *assets
}

var _ http.Handler = (*Handler)(nil)

// New checks cfg, fills its defaults and parses the embedded pages.
func New(cfg Config) (*Handler, error) {
	if cfg.Admin == nil || cfg.Token == "" {
		return nil, errors.New("dashboard: Admin and Token are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Networks == nil {
		cfg.Networks = func() []Network { return nil }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.PageLimit == (Limit{}) {
		cfg.PageLimit = DefaultPageLimit
	}
	if cfg.MaxClients <= 0 {
		cfg.MaxClients = DefaultMaxClients
	}
	if cfg.PageLimit.Burst < 1 || cfg.PageLimit.Every <= 0 {
		return nil, errors.New("dashboard: a Limit needs a Burst of 1 or more and a positive Every")
	}
	tokens := cfg.Tokens
	if tokens == nil {
		var err error
		if tokens, err = admintoken.New(admintoken.Config{Token: cfg.Token, Now: cfg.Now}); err != nil {
			return nil, err
		}
	}
	a, err := loadAssets()
	if err != nil {
		return nil, err
	}
	return &Handler{
		cfg:      cfg,
		tokens:   tokens,
		sessions: newSessions(cfg.MaxSessions, cfg.SessionTTL),
		pages:    newLimiter(cfg.PageLimit, cfg.MaxClients),
		assets:   a,
	}, nil
}

// ServeHTTP routes a request under Prefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), Prefix)
	if !ok {
		if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		http.NotFound(w, r)
		return
	}
	now := h.cfg.Now()
	s, signedIn := h.sessions.get(cookieValue(r), now)
	if !signedIn && rest != "signin" {
		if wait, ok := h.pages.take(admintoken.Client(r), now); !ok {
			tooMany(w, wait)
			http.Error(w, "too many requests from your address; try again later", http.StatusTooManyRequests)
			return
		}
	}
	switch {
	case rest == "":
		if !allow(w, r, http.MethodGet, http.MethodHead) {
			return
		}
		if signedIn {
			h.dashboardPage(w, s, now)
		} else {
			h.signInPage(w, http.StatusOK, "")
		}
	case rest == "signin":
		if allow(w, r, http.MethodPost) {
			h.signIn(w, r)
		}
	case rest == "signout":
		if allow(w, r, http.MethodPost) {
			h.signOut(w, r, s, signedIn)
		}
	case strings.HasPrefix(rest, "static/"):
		if allow(w, r, http.MethodGet, http.MethodHead) {
			h.assets.serve(w, r, strings.TrimPrefix(rest, "static/"))
		}
	case strings.HasPrefix(rest, "api/v1/"):
		if !signedIn {
			apiError(w, http.StatusUnauthorized, "sign in to the dashboard first")
			return
		}
		h.api(w, r, s, strings.TrimPrefix(rest, "api/v1/"))
	default:
		http.NotFound(w, r)
	}
}

// allow answers 405 unless r's method is one of methods.
func allow(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// tooMany sets Retry-After to wait, in whole seconds rounded up.
func tooMany(w http.ResponseWriter, wait time.Duration) {
	w.Header().Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
}
