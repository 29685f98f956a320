// Package authtest holds test helpers for the auth SDK and server: Browser,
// a scriptless browser that drives the real login pages (authd/login);
// StartSMTP, a real SMTP server on 127.0.0.1 that keeps what it receives;
// and Pages, a fake of the login pages kept only for fault injection: it
// reads a login's payload from the session server, "logs the user in" with
// keys derived from a test core kit key (no identity provider, no key
// network), writes the session record and redirects to the app, or answers
// with an error or with the v8 "#b64Params=" callback form, which the real
// pages never send.
package authtest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd/keyderiv"
)

// Pages is a test identity step. Set its fields before use; it records
// the last login it saw.
type Pages struct {
	// Sessions is the session server the SDK uses.
	Sessions *sessionapi.Client
	// HTTP follows the redirect; nil means http.DefaultClient.
	HTTP *http.Client
	// User is returned as userInfo; TypeOfLogin defaults to the login
	// provider.
	User authwire.UserInfo
	// CoreKitKey is the user's base key in hex; empty means a random one.
	CoreKitKey string
	// Error, if set, makes the pages redirect with this error instead.
	Error string
	// B64Params makes the redirect use the "#b64Params=" form instead of
	// "#sessionId=".
	B64Params bool

	mu   sync.Mutex
	last *authwire.LoginPayload
}

// Last returns the login payload of the last login, or nil.
func (p *Pages) Last() *authwire.LoginPayload {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// Authorize reads the login behind loginURL, writes a session for it and
// returns the callback URL the pages would redirect to.
func (p *Pages) Authorize(ctx context.Context, loginURL string) (string, error) {
	u, err := url.Parse(loginURL)
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(u.Path, "/start") {
		return "", fmt.Errorf("authtest: login URL path %q does not end in /start", u.Path)
	}
	frag, err := url.ParseQuery(u.Fragment)
	if err != nil {
		return "", err
	}
	raw, err := base64.RawURLEncoding.DecodeString(frag.Get("b64Params"))
	if err != nil {
		return "", fmt.Errorf("authtest: b64Params: %w", err)
	}
	var start struct {
		LoginID string `json:"loginId"`
	}
	if err := json.Unmarshal(raw, &start); err != nil {
		return "", fmt.Errorf("authtest: b64Params: %w", err)
	}
	loginKey, err := eccrypto.ParsePrivateKeyHex(start.LoginID)
	if err != nil {
		return "", err
	}
	data, err := p.Sessions.Get(ctx, loginKey)
	if err != nil {
		return "", fmt.Errorf("authtest: read the login: %w", err)
	}
	var payload authwire.LoginPayload
	if err := json.Unmarshal(data, &payload); err != nil {
		return "", fmt.Errorf("authtest: login payload: %w", err)
	}
	if payload.ActionType != "login" {
		return "", fmt.Errorf("authtest: actionType %q", payload.ActionType)
	}
	p.mu.Lock()
	p.last = &payload
	p.mu.Unlock()
	redirect := payload.Params.RedirectURL
	if redirect == "" {
		return "", errors.New("authtest: the login has no redirectUrl")
	}
	if p.Error != "" {
		return redirect + "#error=" + url.QueryEscape(p.Error), nil
	}
	core := p.CoreKitKey
	if core == "" {
		k, err := eccrypto.GenerateKey()
		if err != nil {
			return "", err
		}
		core = eccrypto.PrivateKeyHex(k)
	}
	keys, err := keyderiv.Derive(nil, core, payload.Options.ClientID)
	if err != nil {
		return "", fmt.Errorf("authtest: derive keys: %w", err)
	}
	user := p.User
	if user.TypeOfLogin == "" {
		user.TypeOfLogin = string(payload.Params.LoginProvider)
	}
	sessionKey, err := eccrypto.GenerateKey()
	if err != nil {
		return "", err
	}
	sessionID := eccrypto.PrivateKeyHex(sessionKey)
	session, _ := json.Marshal(authwire.State{
		PrivKey:               keys.PrivKey,
		Ed25519PrivKey:        keys.Ed25519PrivKey,
		SessionID:             sessionID,
		UserInfo:              &user,
		CoreKitKey:            keys.CoreKitKey,
		CoreKitEd25519PrivKey: keys.CoreKitEd25519PrivKey,
	})
	timeout := payload.Options.SessionTime
	if timeout == 0 {
		timeout = authwire.DefaultSessionTime
	}
	if err := p.Sessions.Set(ctx, sessionKey, session, timeout); err != nil {
		return "", fmt.Errorf("authtest: write the session: %w", err)
	}
	if p.B64Params {
		b, _ := json.Marshal(map[string]string{"sessionId": sessionID})
		return redirect + "#b64Params=" + base64.RawURLEncoding.EncodeToString(b), nil
	}
	return redirect + "#sessionId=" + sessionID + "&sessionNamespace=", nil
}

// Open is a browser opener for auth.WithBrowser: it authorizes the login,
// then does what a browser does with the redirect: it loads the callback
// page (without the fragment, which browsers never send) and, as the
// page's script would, posts the full URL back to it.
func (p *Pages) Open(loginURL string) error {
	ctx := context.Background()
	cb, err := p.Authorize(ctx, loginURL)
	if err != nil {
		return err
	}
	hc := p.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	return FollowCallback(ctx, hc, cb)
}
