package dashboard

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"
)

// The pages, styles and script are embedded: the dashboard works with no
// network beyond the gateway itself, and has no build step.
//
//go:embed assets
var assetFS embed.FS

// assets are the parsed pages and the static files with their ETags.
type assets struct {
	pages  *template.Template
	static map[string]staticFile
}

type staticFile struct {
	body []byte
	etag string
	kind string
}

func loadAssets() (*assets, error) {
	pages, err := template.ParseFS(assetFS, "assets/*.html")
	if err != nil {
		return nil, err
	}
	a := &assets{pages: pages, static: map[string]staticFile{}}
	names, err := fs.Glob(assetFS, "assets/static/*")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		body, err := assetFS.ReadFile(name)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(body)
		a.static[path.Base(name)] = staticFile{body: body, etag: `"` + hex.EncodeToString(sum[:8]) + `"`,
			kind: mime.TypeByExtension(path.Ext(name))}
	}
	return a, nil
}

// serve answers a static file. Browsers revalidate each time (no-cache)
// and get 304 while its ETag holds, so a new binary's assets show at once.
func (a *assets) serve(w http.ResponseWriter, r *http.Request, name string) {
	f, ok := a.static[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.kind)
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.body))
}

// render writes the page named name.
func (h *Handler) render(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := h.assets.pages.ExecuteTemplate(&b, name, data); err != nil {
		h.cfg.Logger.Error("dashboard: page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// signInPage shows the sign-in form, with msg when a sign-in failed.
func (h *Handler) signInPage(w http.ResponseWriter, status int, msg string) {
	lasts := h.cfg.SessionTTL.String()
	if ttl := h.cfg.SessionTTL; ttl%time.Hour == 0 {
		lasts = fmt.Sprintf("%d hours", ttl/time.Hour)
	}
	h.render(w, status, "signin.html", struct{ Error, Lasts string }{msg, lasts})
}

// pageConfig is what the dashboard's script is given: the session's CSRF
// token, today by the server's clock (UTC), how many days the charts
// show, and the networks for a new key's endpoint URLs.
type pageConfig struct {
	CSRF     string    `json:"csrf"`
	Today    string    `json:"today"`
	Days     int       `json:"days"`
	Networks []Network `json:"networks"`
}

// chartDays is how many days the usage charts show, today included.
const chartDays = 30

// dashboardPage shows the dashboard for session s.
func (h *Handler) dashboardPage(w http.ResponseWriter, s session, now time.Time) {
	nets := h.cfg.Networks()
	if nets == nil {
		nets = []Network{}
	}
	h.render(w, http.StatusOK, "dashboard.html", struct {
		CSRF   string
		Config pageConfig
	}{s.csrf, pageConfig{CSRF: s.csrf, Today: now.UTC().Format(time.DateOnly), Days: chartDays, Networks: nets}})
}
