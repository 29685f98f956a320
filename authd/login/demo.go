package login

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/keynet"
)

// The demo login's paths, at the root of the auth server beside its front
// page.
const (
	// DemoPath starts a demo login (POST, from the front page's button).
	DemoPath = "/demo"
	// DemoDonePath is where a demo login returns. It is under /callback/,
	// where a development client's loopback redirects may go.
	DemoDonePath = "/callback/demo"
)

// Demo is the front page's demo login: a button that starts a real email
// login for a registered client, as its SDK would (the login payload
// stored on the session server under a fresh loginId, the browser sent to
// <sdkUrl>/start#b64Params=…), and a page of the auth server's own for
// the login to return to. A plain link cannot start a login: the start
// page needs the loginId that only whoever stored the payload holds.
type Demo struct {
	// ClientID is the client the demo logs in for (portico serve: its
	// development client). The button shows only while the client is
	// registered with RedirectURL among its redirects.
	ClientID string
	// RedirectURL is DemoDonePath on the auth server's public URL.
	RedirectURL string
}

// indexDemo is the demo login's part of the front page.
type indexDemo struct {
	Action   string
	ClientID string
}

// demoAvailable reports whether a demo login can succeed: email logins
// are on, the client is registered and may return to the demo's page, and
// a key network is served.
func (h *Handler) demoAvailable(ctx context.Context, d *Demo) bool {
	if d == nil || h.cfg.Passwordless == nil || h.demoNetwork() == "" {
		return false
	}
	c, err := h.cfg.Clients.Client(ctx, d.ClientID)
	return err == nil && c.AllowsRedirect(d.RedirectURL)
}

// demoNetwork is the key network a demo login uses: sapphire_devnet when
// served, else the first network served.
func (h *Handler) demoNetwork() authwire.Network {
	if _, ok := h.cfg.Networks[string(authwire.SapphireDevnet)]; ok {
		return authwire.SapphireDevnet
	}
	for _, n := range keynet.Networks() {
		if _, ok := h.cfg.Networks[n]; ok {
			return authwire.Network(n)
		}
	}
	return ""
}

// DemoHandler serves the demo login: POST DemoPath and GET DemoDonePath.
// Mount it at the auth server's root.
func (h *Handler) DemoHandler(d Demo) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+DemoPath, func(w http.ResponseWriter, r *http.Request) { h.demoStart(w, r, d) })
	mux.HandleFunc("GET "+DemoDonePath, func(w http.ResponseWriter, r *http.Request) {
		h.render(w, r, http.StatusOK, &view{Page: "demo", TitleKey: "demo_done_title", brand: h.startBrand(r), BackURL: "/"})
	})
	return mux
}

// demoStart stores a login payload for the demo's client under a fresh
// loginId and sends the browser to the start page with it, as an SDK's
// LoginURL does. It counts as a login started from the client IP.
func (h *Handler) demoStart(w http.ResponseWriter, r *http.Request, d Demo) {
	b := h.startBrand(r)
	if !h.lim.starts.Allow(h.client(r), 1) {
		h.failPage(w, r, b, fail(CodeRateLimited, errors.New("too many logins started from this client")))
		return
	}
	if !h.demoAvailable(r.Context(), &d) {
		h.failPage(w, r, b, fail(CodeUnknownClient, errors.New("the demo login is not available: no email login, or its client cannot return to "+d.RedirectURL)))
		return
	}
	base := h.cfg.BaseURLs[authwire.Production]
	payload, err := json.Marshal(authwire.LoginPayload{
		Options: authwire.InitParams{ClientID: d.ClientID, Network: h.demoNetwork(), BuildEnv: authwire.Production, SDKURL: base,
			RedirectURL: d.RedirectURL, WhiteLabel: &authwire.WhiteLabelData{AppName: "Portico demo", DefaultLanguage: b.Lang}},
		Params: authwire.LoginParams{LoginProvider: authwire.EmailPasswordless, RedirectURL: d.RedirectURL, Curve: authwire.SECP256K1,
			MfaLevel: authwire.MFANone},
		ActionType: "login",
	})
	if err != nil {
		h.failPage(w, r, b, fail(CodeInternal, err))
		return
	}
	key, err := eccrypto.GenerateKey()
	if err != nil {
		h.failPage(w, r, b, fail(CodeInternal, err))
		return
	}
	defer key.Zero()
	if err := h.cfg.Sessions.Set(r.Context(), key, payload, int(h.cfg.FlowTTL.Seconds())); err != nil {
		h.failPage(w, r, b, fail(CodeSessionWrite, err))
		return
	}
	start, _ := json.Marshal(map[string]string{"loginId": eccrypto.PrivateKeyHex(key)})
	http.Redirect(w, r, base+"/start#b64Params="+base64.RawURLEncoding.EncodeToString(start), http.StatusSeeOther)
}
