package dashboard

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// csrfHeader carries the session's CSRF token on the dashboard's API
// calls that change something.
const csrfHeader = "X-CSRF-Token"

// adminPrefix is where the admin API answers.
const adminPrefix = "/admin/v1/"

// api hands a signed-in request for /dashboard/api/v1/{rest} to the admin
// API as /admin/v1/{rest}, with the admin token as bearer. Only the body,
// its type and the query go along: the browser's cookies and headers stay
// here. rest is still escaped, so a key named a/b stays one segment.
func (h *Handler) api(w http.ResponseWriter, r *http.Request, s session, rest string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if !sameOrigin(r) || !s.validCSRF(r.Header.Get(csrfHeader)) {
			apiError(w, http.StatusForbidden, "cross-site request refused: changes need the dashboard's page and its CSRF token")
			return
		}
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg, err := url.PathUnescape(seg); err != nil || seg == "." || seg == ".." {
			apiError(w, http.StatusBadRequest, "path: no . or .. segments, no bad escapes")
			return
		}
	}
	u, err := url.Parse(adminPrefix + rest)
	if err != nil {
		apiError(w, http.StatusBadRequest, "path: "+err.Error())
		return
	}
	u.RawQuery = r.URL.RawQuery
	req := r.Clone(r.Context())
	req.URL, req.RequestURI = u, u.RequestURI()
	req.Header = http.Header{"Authorization": {"Bearer " + h.cfg.Token}}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	h.cfg.Admin.ServeHTTP(w, req)
}

// apiError answers as the admin API does: {"error": msg}.
func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
