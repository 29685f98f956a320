package login

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/clients"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/keyderiv"
)

// Handler serves the login pages. Mount it at the root of the auth server
// (next to the session server's /store/ paths): it answers <base>/start,
// <base>/login/…, <base>/oidc/callback and <base>/jwks.json for each
// build environment's base URL path.
type Handler struct {
	cfg       Config
	log       *slog.Logger
	flows     *flows
	templates map[string]*template.Template
	catalogs  catalogs
	verifiers *idtoken.Registry
	oidc      []*oidcProvider
	sponge    *keyderiv.Sponge
	lim       *limiters
	prefixes  []string
	// missing, when set (by tests), records translation keys a page
	// asked for that its language lacks.
	missing map[string]bool
}

var _ http.Handler = (*Handler)(nil)

// New validates cfg and builds the pages. It does no I/O: OIDC discovery
// happens at a provider's first login.
func New(cfg Config) (*Handler, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, log: cfg.Logger, flows: newFlows(cfg.MaxFlows, cfg.Limits.FlowsPerClient, cfg.FlowTTL, cfg.Now),
		sponge: keyderiv.NewSponge(), lim: newLimiters(cfg.Limits, cfg.Now, cfg.Shared)}
	if h.templates, err = parseTemplates(); err != nil {
		return nil, err
	}
	if h.catalogs, err = loadCatalogs(); err != nil {
		return nil, err
	}
	opts := idtoken.Options{HTTPClient: cfg.HTTPClient, Now: cfg.Now}
	if h.verifiers, err = idtoken.NewRegistry(cfg.VerifierConfigs(), opts); err != nil {
		return nil, &ConfigError{Field: "verifiers", Reason: err.Error()}
	}
	for _, p := range cfg.OIDC {
		h.oidc = append(h.oidc, &oidcProvider{cfg: p})
	}
	seen := map[string]bool{}
	for _, u := range cfg.BaseURLs {
		pu, _ := url.Parse(u)
		p := strings.TrimRight(pu.Path, "/")
		if !seen[p] {
			seen[p] = true
			h.prefixes = append(h.prefixes, p)
		}
	}
	return h, nil
}

// InFlight is the number of logins in progress (held in memory).
func (h *Handler) InFlight() int { return h.flows.len() }

// route strips the longest base path prefix from path.
func (h *Handler) route(path string) (string, bool) {
	best, ok := "", false
	for _, p := range h.prefixes {
		if p == "" || path == p || strings.HasPrefix(path, p+"/") {
			if !ok || len(p) > len(best) {
				best, ok = p, true
			}
		}
	}
	if !ok {
		return "", false
	}
	return strings.TrimPrefix(path, best), true
}

// ServeHTTP routes the pages.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := h.route(r.URL.Path)
	if !ok {
		http.NotFound(w, r)
		return
	}
	switch {
	case p == "/start" && r.Method == http.MethodGet:
		h.render(w, r, http.StatusOK, &view{Page: "start", brand: h.startBrand(r), Action: r.URL.Path})
	case p == "/start" && r.Method == http.MethodPost:
		h.start(w, r)
	case p == "/oidc/callback" && r.Method == http.MethodGet:
		h.oidcCallback(w, r)
	case p == "/jwks.json" && r.Method == http.MethodGet && h.cfg.Passwordless != nil:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(h.cfg.Passwordless.JWKS())
	case strings.HasPrefix(p, "/login/"):
		id, action, _ := strings.Cut(strings.TrimPrefix(p, "/login/"), "/")
		h.step(w, r, id, action)
	default:
		http.NotFound(w, r)
	}
}

// startBrand is the /start page's look before the payload is read: the
// defaults, in the language of ?lang= if given.
func (h *Handler) startBrand(r *http.Request) brand {
	b := brandFor(authwire.InitParams{}, "")
	b.AppName = "Portico"
	if l := authwire.Language(r.URL.Query().Get("lang")); l != "" && l.Valid() {
		b.Lang = l
	}
	return b
}

// failPage renders an error page (before a login's redirect URL is known).
func (h *Handler) failPage(w http.ResponseWriter, r *http.Request, b brand, err error) {
	e := asError(err)
	h.log.Warn("login: failed", "code", e.Code, "err", e.Err)
	h.render(w, r, e.Status(), &view{Page: "error", brand: b, TitleKey: "error_title", ErrorCode: e.Code, ErrorKey: "err_" + e.Code})
}

// failFlow ends a login with an error: back to the app with #error=… (as
// the SDK expects), or an error page if the redirect is unusable.
func (h *Handler) failFlow(w http.ResponseWriter, r *http.Request, f *flow, err error) {
	e := asError(err)
	h.flows.remove(f.ID)
	redirect := f.Payload.Params.RedirectURL
	if redirect == "" || checkRedirect(redirect) != nil {
		h.failPage(w, r, brandFor(f.Payload.Options, ""), e)
		return
	}
	h.log.Warn("login: failed", "code", e.Code, "provider", f.Payload.Params.LoginProvider, "err", e.Err)
	msg := e.Code + ": " + h.catalogs[authwire.English]["err_"+e.Code]
	http.Redirect(w, r, redirect+"#"+url.Values{"error": {msg}}.Encode(), http.StatusSeeOther)
}

// checkRedirect refuses redirect URLs that are not absolute or whose
// scheme could run script.
func checkRedirect(s string) error { return clients.CheckRedirectURL(s) }

// checkClient looks the payload's client id up in the registry: it must
// be registered, the redirect URL must be one of its own, and an appUrl
// the pages would show the user as the app's address must be on one of
// its origins (else it is dropped).
func (h *Handler) checkClient(ctx context.Context, p *authwire.LoginPayload) error {
	c, err := h.cfg.Clients.Client(ctx, p.Options.ClientID)
	if errors.Is(err, clients.ErrNotFound) {
		return fail(CodeUnknownClient, fmt.Errorf("client id %q is not registered", p.Options.ClientID))
	}
	if err != nil {
		return fail(CodeInternal, err)
	}
	if err := checkRedirect(p.Params.RedirectURL); err != nil {
		return fail(CodeBadRedirect, err)
	}
	if !c.AllowsRedirect(p.Params.RedirectURL) {
		return fail(CodeBadRedirect, fmt.Errorf("%w: client %q", clients.ErrRedirect, c.ID))
	}
	if wl := p.Options.WhiteLabel; wl != nil && wl.AppURL != "" && !c.AllowsOrigin(wl.AppURL) {
		cp := *wl
		cp.AppURL = ""
		p.Options.WhiteLabel = &cp
	}
	return nil
}

// readLogin decrypts the login payload stored under loginId; it returns
// the loginId key too, for the caller to invalidate the record and zero.
func (h *Handler) readLogin(ctx context.Context, b64 string) (_ *authwire.LoginPayload, _ *secp256k1.PrivateKey, err error) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(b64, "="))
	if err != nil {
		return nil, nil, fail(CodeBadRequest, errors.New("b64Params is not base64url"))
	}
	var start struct {
		LoginID string `json:"loginId"`
	}
	if err := json.Unmarshal(raw, &start); err != nil || start.LoginID == "" {
		return nil, nil, fail(CodeBadRequest, errors.New("b64Params has no loginId"))
	}
	key, err := eccrypto.ParsePrivateKeyHex(start.LoginID)
	if err != nil {
		return nil, nil, fail(CodeBadRequest, errors.New("loginId is not a 64-hex key"))
	}
	data, err := h.cfg.Sessions.Get(ctx, key)
	if err != nil {
		key.Zero()
		return nil, nil, fail(CodeLoginNotFound, err)
	}
	defer func() {
		if err != nil {
			key.Zero()
		}
	}()
	var p authwire.LoginPayload
	if err = json.Unmarshal(data, &p); err != nil {
		return nil, nil, fail(CodeBadRequest, err)
	}
	if p.ActionType != "login" {
		err = errors.New("actionType is not login")
		return nil, nil, fail(CodeBadRequest, err)
	}
	if err = p.Options.Validate(); err != nil {
		return nil, nil, fail(CodeBadRequest, err)
	}
	if err = p.Params.Validate(); err != nil {
		return nil, nil, fail(CodeBadRequest, err)
	}
	return &p, key, nil
}

// start reads the login behind the posted b64Params and begins it.
func (h *Handler) start(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	b := h.startBrand(r)
	client := h.client(r)
	if !h.lim.starts.Allow(client, 1) {
		h.failPage(w, r, b, fail(CodeRateLimited, errors.New("too many logins started from this client")))
		return
	}
	if err := r.ParseForm(); err != nil {
		h.failPage(w, r, b, fail(CodeBadRequest, err))
		return
	}
	p, loginKey, err := h.readLogin(r.Context(), r.PostForm.Get("b64Params"))
	if err != nil {
		h.failPage(w, r, b, err)
		return
	}
	defer loginKey.Zero()
	if err := h.checkClient(r.Context(), p); err != nil {
		h.failPage(w, r, brandFor(p.Options, ""), err)
		return
	}
	f, err := h.flows.add(client, eccrypto.PublicKeyHex(loginKey.PubKey()))
	switch {
	case errors.Is(err, errStarted):
		h.failPage(w, r, brandFor(p.Options, ""), fail(CodeLoginNotFound, err))
		return
	case errors.Is(err, errClientFull):
		h.failPage(w, r, brandFor(p.Options, ""), fail(CodeRateLimited, err))
		return
	case err != nil:
		h.failPage(w, r, brandFor(p.Options, ""), fail(CodeTooManyLogins, err))
		return
	}
	// A payload starts one login: its record is invalidated (a tombstone,
	// so its captured write cannot restore it).
	if err := h.cfg.Sessions.Invalidate(r.Context(), loginKey); err != nil {
		h.log.Warn("login: cannot invalidate the login payload", "err", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Payload = *p
	f.Env = p.Options.BuildEnv
	if f.Env == "" {
		f.Env = authwire.Production
	}
	f.Base = h.cfg.BaseURLs[f.Env]
	f.Lang = brandFor(p.Options, p.Params.RedirectURL).Lang
	http.SetCookie(w, &http.Cookie{Name: cookieName(f.ID), Value: f.binding, Path: "/", HttpOnly: true, Secure: h.cfg.SecureCookies,
		SameSite: http.SameSiteLaxMode, MaxAge: int(h.cfg.FlowTTL.Seconds())})
	h.begin(w, r, f)
}

// basePath is the path of the flow's base URL.
func (f *flow) basePath() string {
	u, _ := url.Parse(f.Base)
	return strings.TrimRight(u.Path, "/")
}

// pageURL is the flow's page on its base URL.
func (f *flow) pageURL() string { return f.Base + "/login/" + f.ID }

// begin dispatches on the login provider.
func (h *Handler) begin(w http.ResponseWriter, r *http.Request, f *flow) {
	params := f.Payload.Params
	lc, hasLC := f.Payload.Options.LoginConfig[string(params.LoginProvider)]
	switch {
	case params.LoginProvider == authwire.JWT || (hasLC && lc.TypeOfLogin == authwire.TypeJWT):
		h.jwtLogin(w, r, f, lc)
	case params.LoginProvider == authwire.EmailPasswordless:
		if h.cfg.Passwordless == nil {
			h.failFlow(w, r, f, fail(CodeProviderUnavailable, errors.New("passwordless is off")))
			return
		}
		f.Step = stepEmail
		if xo := params.ExtraLoginOptions; xo != nil {
			if email, ok := normalizeEmail(xo.LoginHint); ok {
				if f.Notice = h.sendCode(r.Context(), f, &f.Code, email); f.Notice == "" {
					f.Step = stepCode
				}
			}
		}
		http.Redirect(w, r, f.pageURL(), http.StatusSeeOther)
	default:
		h.oidcBegin(w, r, f, lc)
	}
}

// step handles /login/{id}[/action].
func (h *Handler) step(w http.ResponseWriter, r *http.Request, id, action string) {
	c, _ := r.Cookie(cookieName(id))
	binding := ""
	if c != nil {
		binding = c.Value
	}
	f, err := h.flows.get(id, binding)
	if err != nil {
		h.failPage(w, r, h.startBrand(r), err)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Method == http.MethodGet && action == "" {
		if l := authwire.Language(r.URL.Query().Get("lang")); l != "" && l.Valid() {
			f.Lang = l
		}
		h.show(w, r, f)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		h.failFlow(w, r, f, fail(CodeBadRequest, err))
		return
	}
	if !constantEqual(r.PostForm.Get("csrf"), f.CSRF) {
		h.failPage(w, r, h.brand(f), fail(CodeForbidden, errors.New("bad csrf token")))
		return
	}
	f.Notice = ""
	switch {
	case action == "email" && (f.Step == stepEmail || f.Step == stepCode):
		h.postEmail(w, r, f)
	case action == "code" && f.Step == stepCode:
		h.postCode(w, r, f)
	case action == "mfa/setup" && f.Step == stepMFASetup:
		h.postMFASetup(w, r, f)
	case action == "mfa/skip" && f.Step == stepMFASetup && f.SkipAllowed:
		h.finish(w, r, f, &result{CoreKey: f.NetworkKey})
	case action == "mfa/recover" && f.Step == stepMFARecover:
		h.postMFARecover(w, r, f)
	case action == "social/code" && f.Step == stepSocialCode:
		h.postSocialCode(w, r, f)
	case action == "phrase" && f.Step == stepPhrase:
		h.finish(w, r, f, f.Done)
	default:
		http.Redirect(w, r, f.pageURL(), http.StatusSeeOther)
	}
}

// devCodes reports whether codes go to the log instead of by mail.
func (h *Handler) devCodes() bool {
	return h.cfg.Passwordless != nil && h.cfg.Passwordless.Mailer == nil && h.cfg.Passwordless.DevLogCodes
}

// brand is the flow's white label in its current language.
func (h *Handler) brand(f *flow) brand {
	b := brandFor(f.Payload.Options, f.Payload.Params.RedirectURL)
	b.Lang = f.Lang
	return b
}

// show renders the flow's current step.
func (h *Handler) show(w http.ResponseWriter, r *http.Request, f *flow) {
	v := &view{brand: h.brand(f), CSRF: f.CSRF, Action: f.basePath() + "/login/" + f.ID, Notice: f.Notice, DevCodes: h.devCodes()}
	switch f.Step {
	case stepEmail:
		v.Page, v.TitleKey = "email", "continue_email"
		if xo := f.Payload.Params.ExtraLoginOptions; xo != nil {
			v.Email = xo.LoginHint
		}
	case stepCode, stepSocialCode:
		v.Page, v.TitleKey, v.Email = "code", "code_title", f.Code.Email
		if f.Step == stepSocialCode {
			v.Social, v.Email = true, f.Social.Code.Email
		}
	case stepMFASetup:
		v.Page, v.TitleKey = "mfa_setup", "mfa_setup_title"
		v.Factors, v.SkipAllowed, v.Mandatory = h.setupFactors(f), f.SkipAllowed, !f.SkipAllowed
	case stepMFARecover:
		v.Page, v.TitleKey = "mfa_recover", "recover_title"
		v.Factors = recoverFactors(f)
	case stepPhrase:
		v.Page, v.TitleKey = "phrase", "phrase_title"
		v.Phrase = strings.Fields(f.Done.Phrase)
	case stepOIDC:
		http.Redirect(w, r, f.AuthURL, http.StatusFound)
		return
	default:
		v.Page, v.TitleKey = "start", "loading"
	}
	h.render(w, r, http.StatusOK, v)
}
