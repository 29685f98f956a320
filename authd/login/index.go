package login

import (
	"net/http"
	"net/url"

	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd/keynet"
)

// Index says where the auth server serves what besides the pages, for its
// front page.
type Index struct {
	// SessionServer is the path the session server is mounted at, ending
	// in "/" (the auth server mounts it at "/").
	SessionServer string
	// Health is the path of the health check; empty if there is none.
	Health string
	// Demo, if set, offers a demo login on the page (see DemoHandler,
	// which must be mounted beside it).
	Demo *Demo
}

// indexView is what the front page shows.
type indexView struct {
	Envs     []indexEnv
	Sessions []string
	Networks []indexNetwork
	Methods  []indexMethod
	JWKS     string
	Health   string
}

type indexEnv struct{ Env, Base string }

type indexNetwork struct {
	Name             string
	Nodes, Threshold int
}

type indexMethod struct {
	Provider, Verifier string
	Dev                bool
}

// IndexHandler serves the auth server's front page: a demo login when
// ix.Demo can succeed, the pages' base URL (an SDK's sdkUrl) per build
// environment, the session server's endpoints, the key networks, the
// sign-in methods and the health check. It links to no start page: one
// opened without a login's loginId has nothing to start. It is styled
// like the pages and rendered in their default language, or in the one
// ?lang= names. Nothing on it is secret: it shows what any SDK
// configuration names anyway.
func (h *Handler) IndexHandler(ix Index) http.Handler {
	v := h.indexView(ix)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page := &view{Page: "index", TitleKey: "index_title", brand: h.startBrand(r), Index: v}
		if h.demoAvailable(r.Context(), ix.Demo) {
			page.Demo = &indexDemo{Action: DemoPath + "?" + url.Values{"lang": {string(page.brand.Lang)}}.Encode(), ClientID: ix.Demo.ClientID}
		}
		h.render(w, r, http.StatusOK, page)
	})
}

func (h *Handler) indexView(ix Index) *indexView {
	v := &indexView{Health: ix.Health}
	for _, env := range []authwire.BuildEnv{authwire.Production, authwire.Staging, authwire.Testing} {
		base := h.cfg.BaseURLs[env]
		v.Envs = append(v.Envs, indexEnv{Env: string(env), Base: base})
	}
	v.Sessions = []string{"POST " + ix.SessionServer + sessionapi.SetPath, "GET " + ix.SessionServer + sessionapi.GetPath + "?key=…&namespace="}
	for _, name := range keynet.Networks() {
		if c, ok := h.cfg.Networks[name]; ok {
			nc := c.Network()
			v.Networks = append(v.Networks, indexNetwork{Name: name, Nodes: len(nc.Nodes), Threshold: nc.Threshold()})
		}
	}
	for _, p := range h.cfg.OIDC {
		v.Methods = append(v.Methods, indexMethod{Provider: p.Name, Verifier: p.verifier()})
	}
	for _, c := range h.cfg.Verifiers {
		v.Methods = append(v.Methods, indexMethod{Provider: string(authwire.JWT), Verifier: c.Verifier})
	}
	if h.cfg.Passwordless != nil {
		v.Methods = append(v.Methods, indexMethod{Provider: string(authwire.EmailPasswordless), Verifier: PasswordlessVerifier, Dev: h.devCodes()})
		v.JWKS = h.cfg.BaseURLs[authwire.Production] + "/jwks.json"
	}
	return v
}
