// Package admin is the admin HTTP API of the gateway: API keys and usage,
// behind a bearer token. It answers JSON under /admin/v1/:
//
//	GET    /admin/v1/keys                  list active keys (?revoked=true for all,
//	                                       ?today=true with today's balances)
//	POST   /admin/v1/keys                  create a key; the answer holds the key, once
//	GET    /admin/v1/keys/{name}           one key, with today's balance
//	PATCH  /admin/v1/keys/{name}           change balance, rate or allowlists
//	DELETE /admin/v1/keys/{name}           revoke
//	POST   /admin/v1/keys/{name}/secret    give the key a new secret (the answer
//	                                       holds it, once); {"grace_seconds": n}
//	                                       keeps the old one working for n seconds
//	DELETE /admin/v1/keys/{name}/secret    drop the key's secret
//	GET    /admin/v1/webhooks              every active key's webhooks, with their state
//	GET    /admin/v1/keys/{name}/webhooks  the key's webhooks, with their state
//	POST   /admin/v1/keys/{name}/webhooks  make a webhook (network, event, filter,
//	                                       url, secret): 201 with its "id"
//	DELETE /admin/v1/keys/{name}/webhooks/{id}         delete a webhook
//	POST   /admin/v1/keys/{name}/webhooks/{id}/resume  make a paused webhook active
//	GET    /admin/v1/usage?key=&from=&to=  usage by day, key and method
//	                                       (?group=key or ?group=method sums the other)
//	GET    /admin/v1/nodes                 every network's nodes, when Config.Nodes is set
//	POST   /admin/v1/reload                reload the config file, when Config.Reload is set:
//	                                       200 {"reloaded":true}, or 422 with the
//	                                       refusal (the running config stays)
//
// Errors are {"error": "..."} with a 4xx or 5xx status.
//
// The bearer token is checked by an admintoken.Checker, in constant time
// and with wrong tokens slowed per client address (never refused), the
// same Checker the dashboard's sign-in form uses when they are wired
// together.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/admin/admintoken"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

// Balancer tells a key's balance today; *metering.Ledger is one.
type Balancer interface {
	Balance(ctx context.Context, id apikey.Identity) (metering.Bill, error)
}

// Config configures the API.
type Config struct {
	// Token is the bearer token; required unless Tokens is set.
	Token string
	// Tokens checks the bearer token and slows wrong ones; nil makes one
	// for Token with admintoken.DefaultLimits. Pass the dashboard's
	// Checker here so that both count one budget of wrong tokens.
	Tokens *admintoken.Checker
	// Store holds keys and usage; required.
	Store *store.Store
	// Meter answers live balances; nil leaves them out.
	Meter Balancer
	// DefaultDailyCredits applies to keys created without a balance.
	DefaultDailyCredits int64
	// Nodes returns the state of every network's nodes (heads, lag,
	// health, latency), served as JSON at /admin/v1/nodes; nil leaves the
	// endpoint out.
	Nodes func() any
	// Reload reads the config file again and serves it, or says why it
	// refused to (the running config then stays); nil leaves
	// POST /admin/v1/reload out.
	Reload func(ctx context.Context) error
	// Webhooks checks webhooks before they are stored and starts their
	// delivery; nil stores them unchecked.
	Webhooks Webhooks
	// Logger records changes (never keys or tokens).
	Logger *slog.Logger
}

// API is the admin HTTP handler.
type API struct {
	cfg    Config
	tokens *admintoken.Checker
	mux    *http.ServeMux
}

// New returns the API handler.
func New(cfg Config) (*API, error) {
	if (cfg.Token == "" && cfg.Tokens == nil) || cfg.Store == nil {
		return nil, errors.New("admin: Token (or Tokens) and Store are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &API{cfg: cfg, tokens: cfg.Tokens, mux: http.NewServeMux()}
	if a.tokens == nil {
		var err error
		if a.tokens, err = admintoken.New(admintoken.Config{Token: cfg.Token}); err != nil {
			return nil, err
		}
	}
	a.mux.HandleFunc("GET /admin/v1/keys", a.list)
	a.mux.HandleFunc("POST /admin/v1/keys", a.create)
	a.mux.HandleFunc("GET /admin/v1/keys/{name}", a.show)
	a.mux.HandleFunc("PATCH /admin/v1/keys/{name}", a.update)
	a.mux.HandleFunc("DELETE /admin/v1/keys/{name}", a.revoke)
	a.mux.HandleFunc("POST /admin/v1/keys/{name}/secret", a.rotateSecret)
	a.mux.HandleFunc("DELETE /admin/v1/keys/{name}/secret", a.removeSecret)
	a.mux.HandleFunc("GET /admin/v1/usage", a.usage)
	a.routeWebhooks()
	if cfg.Nodes != nil {
		a.mux.HandleFunc("GET /admin/v1/nodes", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, cfg.Nodes()) })
	}
	if cfg.Reload != nil {
		a.mux.HandleFunc("POST /admin/v1/reload", a.reload)
	}
	return a, nil
}

// reload serves POST /admin/v1/reload. The refusal is the error the
// server logs: it names the config field, with upstream URLs redacted.
func (a *API) reload(w http.ResponseWriter, r *http.Request) {
	if err := a.cfg.Reload(r.Context()); err != nil {
		writeError(w, http.StatusUnprocessableEntity, err)
		return
	}
	a.cfg.Logger.Info("admin: config reloaded")
	writeJSON(w, http.StatusOK, map[string]bool{"reloaded": true})
}

// Tokens is the Checker of the bearer token, for the dashboard to share.
func (a *API) Tokens() *admintoken.Checker { return a.tokens }

// ServeHTTP checks the bearer token, then serves the API. A request from
// an address that has sent wrong tokens is held first (admintoken), with
// the right token as with a wrong one; one without a bearer token is
// refused at once, as it guesses nothing.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok {
		client := admintoken.Client(r)
		good, waited, err := a.tokens.Check(r.Context(), client, got)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, errors.New("gave up waiting to check the admin token: the server is stopping or the client left"))
			return
		}
		if !good {
			a.cfg.Logger.Warn("admin: wrong token", "client", client, "held", waited)
		}
		ok = good
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="portico-admin"`)
		writeError(w, http.StatusUnauthorized, errors.New("admin token missing or wrong"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	a.mux.ServeHTTP(w, r)
}

// KeyJSON is a key as the API shows it; Key is set only on creation,
// Secret only on creation with a secret and on a rotation.
type KeyJSON struct {
	Name          string   `json:"name"`
	Key           string   `json:"key,omitempty"`
	Secret        string   `json:"secret,omitempty"`
	DailyCredits  int64    `json:"daily_credits"`
	RatePerSecond int64    `json:"rate_per_second"`
	AllowMethods  []string `json:"allow_methods,omitempty"`
	AllowNetworks []string `json:"allow_networks,omitempty"`
	AllowOrigins  []string `json:"allow_origins,omitempty"`
	// The key's own rules (docs/keys.md); HasSecret says calls need a
	// secret, PrevSecretUntil ends a rotated-out secret's grace period.
	HasSecret         bool               `json:"has_secret"`
	PrevSecretUntil   time.Time          `json:"prev_secret_until,omitzero"`
	JWTKeys           []apikey.JWTKey    `json:"jwt_keys,omitempty"`
	JWTMaxLifetime    int64              `json:"jwt_max_lifetime_seconds,omitempty"`
	JWTAudience       string             `json:"jwt_audience,omitempty"`
	AllowAddresses    []string           `json:"allow_addresses,omitempty"`
	AllowUserAgents   []string           `json:"allow_user_agents,omitempty"`
	MaxConcurrent     int                `json:"max_concurrent,omitempty"`
	RequestsPerSecond int                `json:"requests_per_second,omitempty"`
	Logs              *portico.LogLimits `json:"logs,omitempty"`
	CreatedAt         time.Time          `json:"created_at"`
	RevokedAt         time.Time          `json:"revoked_at,omitzero"`
	Today             *Balance           `json:"today,omitempty"`
}

// Balance is a key's live balance today.
type Balance struct {
	Day       string    `json:"day"`
	Used      int64     `json:"used"`
	Remaining int64     `json:"remaining"`
	ResetsAt  time.Time `json:"resets_at"`
}

func keyJSON(k store.Key) KeyJSON {
	r := k.Rules
	return KeyJSON{Name: k.Name, DailyCredits: k.DailyCredits, RatePerSecond: k.RatePerSecond,
		AllowMethods: k.AllowMethods, AllowNetworks: k.AllowNetworks, AllowOrigins: k.AllowOrigins,
		HasSecret: r.HasSecret(), PrevSecretUntil: r.PrevSecretUntil, JWTKeys: r.JWTKeys,
		JWTMaxLifetime: int64(r.JWTMaxLifetime / time.Second), JWTAudience: r.JWTAudience,
		AllowAddresses: r.AllowAddresses, AllowUserAgents: r.AllowUserAgents,
		MaxConcurrent: r.MaxConcurrent, RequestsPerSecond: r.RequestsPerSecond, Logs: r.Logs,
		CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
}

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	keys, err := a.cfg.Store.List(r.Context(), q.Get("revoked") == "true")
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	// today=true adds each active key's live balance: one meter lookup
	// per key (a Redis round trip each with a shared meter), so only on
	// request.
	today := q.Get("today") == "true" && a.cfg.Meter != nil
	out := make([]KeyJSON, 0, len(keys))
	for _, k := range keys {
		kj := keyJSON(k)
		if today && k.RevokedAt.IsZero() {
			if kj.Today, err = a.balance(r.Context(), k); err != nil {
				writeError(w, http.StatusServiceUnavailable, err)
				return
			}
		}
		out = append(out, kj)
	}
	writeJSON(w, http.StatusOK, out)
}

// balance is k's live balance today.
func (a *API) balance(ctx context.Context, k store.Key) (*Balance, error) {
	b, err := a.cfg.Meter.Balance(ctx, store.Identity(k))
	if err != nil {
		return nil, err
	}
	return &Balance{Day: b.Day, Used: b.Used, Remaining: b.Remaining(), ResetsAt: b.ResetAt}, nil
}

// KeyRequest is the body of POST and PATCH. On PATCH, absent fields are
// left as they are; an empty list removes a restriction.
type KeyRequest struct {
	Name          string    `json:"name"`
	DailyCredits  *int64    `json:"daily_credits"`
	RatePerSecond *int64    `json:"rate_per_second"`
	AllowMethods  *[]string `json:"allow_methods"`
	AllowNetworks *[]string `json:"allow_networks"`
	AllowOrigins  *[]string `json:"allow_origins"`
	// WithSecret, on POST, gives the key a secret, answered once.
	WithSecret        bool               `json:"with_secret"`
	JWTKeys           *[]apikey.JWTKey   `json:"jwt_keys"`
	JWTMaxLifetime    *int64             `json:"jwt_max_lifetime_seconds"`
	JWTAudience       *string            `json:"jwt_audience"`
	AllowAddresses    *[]string          `json:"allow_addresses"`
	AllowUserAgents   *[]string          `json:"allow_user_agents"`
	MaxConcurrent     *int               `json:"max_concurrent"`
	RequestsPerSecond *int               `json:"requests_per_second"`
	Logs              *portico.LogLimits `json:"logs"`
}

// rules is the request's change to a key's own rules.
func (req *KeyRequest) rules() store.RulesPatch {
	p := store.RulesPatch{JWTKeys: req.JWTKeys, JWTAudience: req.JWTAudience, AllowAddresses: req.AllowAddresses,
		AllowUserAgents: req.AllowUserAgents, MaxConcurrent: req.MaxConcurrent, RequestsPerSecond: req.RequestsPerSecond, Logs: req.Logs}
	if req.JWTMaxLifetime != nil {
		d := time.Duration(*req.JWTMaxLifetime) * time.Second
		p.JWTMaxLifetime = &d
	}
	return p
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	return nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	var req KeyRequest
	if err := decode(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	daily := a.cfg.DefaultDailyCredits
	if req.DailyCredits != nil {
		daily = *req.DailyCredits
	}
	p := req.rules()
	if p.Logs != nil && *p.Logs == (portico.LogLimits{}) {
		p.Logs = nil
	}
	rp := store.Rules{JWTKeys: deref(p.JWTKeys), JWTMaxLifetime: deref(p.JWTMaxLifetime), JWTAudience: deref(p.JWTAudience),
		AllowAddresses: deref(p.AllowAddresses), AllowUserAgents: deref(p.AllowUserAgents),
		MaxConcurrent: deref(p.MaxConcurrent), RequestsPerSecond: deref(p.RequestsPerSecond), Logs: p.Logs}
	k, secret, err := a.cfg.Store.Create(r.Context(), store.KeySpec{Name: req.Name, DailyCredits: daily,
		RatePerSecond: deref(req.RatePerSecond), AllowMethods: deref(req.AllowMethods),
		AllowNetworks: deref(req.AllowNetworks), AllowOrigins: deref(req.AllowOrigins),
		Rules: rp, WithSecret: req.WithSecret})
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	a.cfg.Logger.Info("admin: key created", "name", k.Name)
	out := keyJSON(k)
	out.Key, out.Secret = secret, k.NewSecret
	writeJSON(w, http.StatusCreated, out)
}

func (a *API) show(w http.ResponseWriter, r *http.Request) {
	k, err := a.cfg.Store.Get(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	out := keyJSON(k)
	if a.cfg.Meter != nil {
		if out.Today, err = a.balance(r.Context(), k); err != nil {
			writeError(w, http.StatusServiceUnavailable, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) update(w http.ResponseWriter, r *http.Request) {
	var req KeyRequest
	if err := decode(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if req.Name != "" && req.Name != r.PathValue("name") {
		writeError(w, http.StatusBadRequest, errors.New("name: keys cannot be renamed"))
		return
	}
	if req.WithSecret {
		writeError(w, http.StatusBadRequest, errors.New("with_secret: on an existing key, POST /admin/v1/keys/{name}/secret"))
		return
	}
	k, err := a.cfg.Store.Update(r.Context(), r.PathValue("name"), store.Patch{DailyCredits: req.DailyCredits,
		RatePerSecond: req.RatePerSecond, AllowMethods: req.AllowMethods, AllowNetworks: req.AllowNetworks, AllowOrigins: req.AllowOrigins,
		Rules: req.rules()})
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	a.cfg.Logger.Info("admin: key updated", "name", k.Name)
	writeJSON(w, http.StatusOK, keyJSON(k))
}

func (a *API) revoke(w http.ResponseWriter, r *http.Request) {
	k, err := a.cfg.Store.Revoke(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	a.cfg.Logger.Info("admin: key revoked", "name", k.Name)
	writeJSON(w, http.StatusOK, keyJSON(k))
}

// SecretRequest is the body of POST /admin/v1/keys/{name}/secret; it may
// be empty.
type SecretRequest struct {
	// GraceSeconds keeps the previous secret working this long; absent
	// means store.DefaultSecretGrace, 0 stops it at once.
	GraceSeconds *int64 `json:"grace_seconds"`
}

func (a *API) rotateSecret(w http.ResponseWriter, r *http.Request) {
	var req SecretRequest
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
	}
	grace := store.DefaultSecretGrace
	if req.GraceSeconds != nil {
		grace = time.Duration(*req.GraceSeconds) * time.Second
	}
	k, secret, err := a.cfg.Store.RotateSecret(r.Context(), r.PathValue("name"), grace)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	a.cfg.Logger.Info("admin: key secret rotated", "name", k.Name, "grace", grace)
	out := keyJSON(k)
	out.Secret = secret
	writeJSON(w, http.StatusOK, out)
}

func (a *API) removeSecret(w http.ResponseWriter, r *http.Request) {
	k, err := a.cfg.Store.RemoveSecret(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	a.cfg.Logger.Info("admin: key secret removed", "name", k.Name)
	writeJSON(w, http.StatusOK, keyJSON(k))
}

// UsageJSON is one usage row. Rows grouped by key have no Method, rows
// grouped by method no Key.
type UsageJSON struct {
	Day     string `json:"day"`
	Key     string `json:"key,omitempty"`
	Method  string `json:"method,omitempty"`
	Calls   int64  `json:"calls"`
	Credits int64  `json:"credits"`
}

func (a *API) usage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.UsageFilter{From: q.Get("from"), To: q.Get("to")}
	group := q.Get("group")
	if group != "" && group != groupKey && group != groupMethod {
		writeError(w, http.StatusBadRequest, fmt.Errorf("group: want %s or %s, got %q", groupKey, groupMethod, group))
		return
	}
	for _, d := range []struct{ name, v string }{{"from", f.From}, {"to", f.To}} {
		if _, err := time.Parse(time.DateOnly, d.v); d.v != "" && err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%s: want a date as YYYY-MM-DD, got %q", d.name, d.v))
			return
		}
	}
	if name := q.Get("key"); name != "" {
		k, err := a.cfg.Store.Get(r.Context(), name)
		if err != nil {
			writeError(w, statusOf(err), err)
			return
		}
		f.KeyID = k.ID
	}
	rows, err := a.cfg.Store.Usage(r.Context(), f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err)
		return
	}
	if group != "" {
		writeJSON(w, http.StatusOK, groupUsage(rows, group))
		return
	}
	out := make([]UsageJSON, 0, len(rows))
	for _, u := range rows {
		out = append(out, UsageJSON{Day: u.Day, Key: u.KeyName, Method: u.Method, Calls: u.Calls, Credits: u.Credits})
	}
	writeJSON(w, http.StatusOK, out)
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrWebhookNotFound):
		return http.StatusNotFound
	case errors.Is(err, store.ErrNameTaken):
		return http.StatusConflict
	}
	var in *store.InputError
	if errors.As(err, &in) {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
