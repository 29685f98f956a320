package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/porticohq/portico/admin/admintoken"
)

// maxFormBytes bounds the sign-in and sign-out forms.
const maxFormBytes = 4 << 10

// signIn checks the token of the sign-in form and starts a session. The
// check holds an address that has sent wrong tokens (to the form or to
// the admin API) before looking at the token, the right one included.
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		h.signInPage(w, http.StatusForbidden, "Sign in from the dashboard's own page.")
		return
	}
	client := admintoken.Client(r)
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	ok, held, err := h.tokens.Check(r.Context(), client, r.PostFormValue("token"))
	if err != nil {
		h.signInPage(w, http.StatusServiceUnavailable, "The server stopped before it checked the token: try again.")
		return
	}
	if !ok {
		h.cfg.Logger.Warn("dashboard: sign-in failed", "client", client, "held", held)
		h.signInPage(w, http.StatusUnauthorized, "That is not the admin token.")
		return
	}
	id, _ := h.sessions.create(h.cfg.Now())
	http.SetCookie(w, sessionCookie(r, id, int(h.cfg.SessionTTL/time.Second)))
	h.cfg.Logger.Info("dashboard: signed in", "client", client, "held", held)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// signOut ends the session and deletes its cookie.
func (h *Handler) signOut(w http.ResponseWriter, r *http.Request, s session, signedIn bool) {
	if signedIn {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if !sameOrigin(r) || !s.validCSRF(r.PostFormValue("csrf")) {
			http.Error(w, "cross-site request refused", http.StatusForbidden)
			return
		}
		h.sessions.end(cookieValue(r))
		h.cfg.Logger.Info("dashboard: signed out", "client", admintoken.Client(r))
	}
	http.SetCookie(w, sessionCookie(r, "", -1))
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// sameOrigin reports whether r was sent by a page of the origin it is
// addressed to: its Origin header, or without one its Referer, names
// r.Host, and Sec-Fetch-Site, when sent, says same-origin. A request with
// neither header is refused: every browser sends Origin with a POST.
// Behind a proxy, the proxy must pass the Host the browser used.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	from := r.Header.Get("Origin")
	if from == "" {
		from = r.Header.Get("Referer")
	}
	u, err := url.Parse(from)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}
