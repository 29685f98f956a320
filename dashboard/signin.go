package dashboard

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxFormBytes bounds the sign-in and sign-out forms.
const maxFormBytes = 4 << 10

// signIn checks the token of the sign-in form and starts a session.
func (h *Handler) signIn(w http.ResponseWriter, r *http.Request, now time.Time) {
	if !sameOrigin(r) {
		h.signInPage(w, http.StatusForbidden, "Sign in from the dashboard's own page.")
		return
	}
	client := clientOf(r)
	// Every attempt takes from the client's budget up front, so that
	// concurrent guesses cannot overrun it; a good one gives it back.
	if wait, ok := h.signIns.take(client, now); !ok {
		h.cfg.Logger.Warn("dashboard: sign-in refused, too many failures", "client", client)
		tooMany(w, wait)
		h.signInPage(w, http.StatusTooManyRequests,
			fmt.Sprintf("Too many failed sign-ins from your address: try again in %s.", wait.Round(time.Second)))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	got := sha256.Sum256([]byte(r.PostFormValue("token")))
	if subtle.ConstantTimeCompare(got[:], h.token[:]) != 1 {
		h.cfg.Logger.Warn("dashboard: sign-in failed", "client", client)
		h.signInPage(w, http.StatusUnauthorized, "That is not the admin token.")
		return
	}
	h.signIns.refund(client, now)
	id, _ := h.sessions.create(now)
	http.SetCookie(w, sessionCookie(r, id, int(h.cfg.SessionTTL/time.Second)))
	h.cfg.Logger.Info("dashboard: signed in", "client", client)
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
		h.cfg.Logger.Info("dashboard: signed out", "client", clientOf(r))
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
