package login

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/porticohq/portico/auth/authwire"
	"golang.org/x/oauth2"
)

// oidcProvider is a configured provider with its discovered endpoints
// (found at first use and kept).
type oidcProvider struct {
	cfg OIDCProvider

	mu       sync.Mutex
	endpoint *oauth2.Endpoint
}

// discover finds the provider's endpoints.
func (p *oidcProvider) discover(ctx context.Context, hc *http.Client) (oauth2.Endpoint, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.endpoint != nil {
		return *p.endpoint, nil
	}
	issuer := strings.TrimSuffix(strings.TrimRight(p.cfg.DiscoveryURL, "/"), "/.well-known/openid-configuration")
	prov, err := oidc.NewProvider(oidc.ClientContext(ctx, hc), issuer)
	if err != nil {
		return oauth2.Endpoint{}, err
	}
	ep := prov.Endpoint()
	p.endpoint = &ep
	return ep, nil
}

func (p *oidcProvider) oauth2Config(ep oauth2.Endpoint, redirect string, scope string) *oauth2.Config {
	scopes := []string{oidc.ScopeOpenID}
	extra := p.cfg.Scopes
	if scope != "" {
		extra = strings.Fields(scope)
	} else if len(extra) == 0 {
		extra = []string{"email", "profile"}
	}
	for _, s := range extra {
		if s != oidc.ScopeOpenID {
			scopes = append(scopes, s)
		}
	}
	return &oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret, Endpoint: ep, RedirectURL: redirect, Scopes: scopes}
}

// pickOIDC finds the provider for a login: the loginConfig entry's
// verifier if it names one, else the first provider of that name.
func (h *Handler) pickOIDC(provider authwire.Provider, lc authwire.LoginConfig) *oidcProvider {
	for _, p := range h.oidc {
		if lc.Verifier != "" && p.cfg.verifier() == lc.Verifier {
			return p
		}
	}
	if lc.Verifier != "" {
		return nil
	}
	for _, p := range h.oidc {
		if p.cfg.Name == string(provider) {
			return p
		}
	}
	return nil
}

// authCodeOptions are the authorization request's parameters from
// extraLoginOptions (additionalParams included). Parameters the login
// itself owns (state, nonce, PKCE, client_id, redirect_uri,
// response_type) cannot be overridden.
func authCodeOptions(xo *authwire.ExtraLoginOptions) []oauth2.AuthCodeOption {
	if xo == nil {
		return nil
	}
	var out []oauth2.AuthCodeOption
	set := func(k, v string) {
		if v != "" {
			out = append(out, oauth2.SetAuthURLParam(k, v))
		}
	}
	set("display", xo.Display)
	set("prompt", xo.Prompt)
	set("max_age", string(xo.MaxAge))
	set("ui_locales", xo.UILocales)
	set("id_token_hint", xo.IDTokenHint)
	set("login_hint", xo.LoginHint)
	set("acr_values", xo.ACRValues)
	set("audience", xo.Audience)
	set("connection", xo.Connection)
	reserved := map[string]bool{"state": true, "nonce": true, "code_challenge": true, "code_challenge_method": true,
		"client_id": true, "redirect_uri": true, "response_type": true, "scope": true}
	for k, v := range xo.AdditionalParams {
		if !reserved[k] {
			set(k, v)
		}
	}
	return out
}

// oidcBegin sends the browser to the provider's authorization endpoint,
// with state, nonce and PKCE (S256).
func (h *Handler) oidcBegin(w http.ResponseWriter, r *http.Request, f *flow, lc authwire.LoginConfig) {
	p := h.pickOIDC(f.Payload.Params.LoginProvider, lc)
	if p == nil {
		h.failFlow(w, r, f, fail(CodeProviderUnavailable, fmt.Errorf("no OIDC provider for %q", f.Payload.Params.LoginProvider)))
		return
	}
	ep, err := p.discover(r.Context(), h.cfg.HTTPClient)
	if err != nil {
		h.failFlow(w, r, f, fail(CodeProviderError, err))
		return
	}
	xo := f.Payload.Params.ExtraLoginOptions
	scope := ""
	if xo != nil {
		scope = xo.Scope
	}
	f.Provider, f.Nonce, f.PKCE = p, randomHex(16), oauth2.GenerateVerifier()
	h.flows.bindState(f, randomHex(16))
	opts := append([]oauth2.AuthCodeOption{oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.PKCE)}, authCodeOptions(xo)...)
	f.AuthURL = p.oauth2Config(ep, f.Base+"/oidc/callback", scope).AuthCodeURL(f.State, opts...)
	f.Step = stepOIDC
	http.Redirect(w, r, f.AuthURL, http.StatusFound)
}

// oidcCallback finishes the provider's login: it checks state (and the
// login's cookie), exchanges the code with the PKCE verifier, and checks
// the id token (signature, iss, aud, expiry, nonce).
func (h *Handler) oidcCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id, ok := h.flows.byOIDCState(q.Get("state"))
	if !ok {
		h.failPage(w, r, h.startBrand(r), fail(CodeFlowExpired, errors.New("unknown OIDC state")))
		return
	}
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
	if f.Step != stepOIDC || f.Provider == nil {
		h.failFlow(w, r, f, fail(CodeBadRequest, errors.New("not waiting for an OIDC callback")))
		return
	}
	if e := q.Get("error"); e != "" {
		h.failFlow(w, r, f, fail(CodeProviderError, fmt.Errorf("provider: %s: %s", e, q.Get("error_description"))))
		return
	}
	ep, err := f.Provider.discover(r.Context(), h.cfg.HTTPClient)
	if err != nil {
		h.failFlow(w, r, f, fail(CodeProviderError, err))
		return
	}
	ctx := oidc.ClientContext(r.Context(), h.cfg.HTTPClient)
	tok, err := f.Provider.oauth2Config(ep, f.Base+"/oidc/callback", "").Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.PKCE))
	if err != nil {
		h.failFlow(w, r, f, fail(CodeTokenRefused, fmt.Errorf("code exchange: %w", err)))
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		h.failFlow(w, r, f, fail(CodeTokenRefused, errors.New("the token response has no id_token")))
		return
	}
	ident, err := h.verify(r.Context(), f.Provider.cfg.verifier(), raw)
	if err != nil {
		h.failFlow(w, r, f, err)
		return
	}
	if !constantEqual(ident.nonce, f.Nonce) {
		h.failFlow(w, r, f, fail(CodeTokenRefused, errors.New("id token nonce does not match")))
		return
	}
	ident.TypeOfLogin = f.Provider.cfg.Name
	ident.OAuthIDToken, ident.OAuthAccessToken = raw, tok.AccessToken
	f.Identity = ident
	h.afterIdentity(w, r, f)
}
