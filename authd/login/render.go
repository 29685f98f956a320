package login

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/porticohq/portico/auth/authwire"
)

//go:embed templates/*.html
var templateFiles embed.FS

// Pages are the page names; each is layout.html plus <page>.html.
var pageNames = []string{"start", "email", "code", "mfa_setup", "mfa_recover", "phrase", "error", "index", "demo"}

func parseTemplates() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, p := range pageNames {
		t, err := template.ParseFS(templateFiles, "templates/layout.html", "templates/"+p+".html")
		if err != nil {
			return nil, err
		}
		out[p] = t
	}
	return out, nil
}

// The default logos: the Portico mark, dark on light backgrounds
// (logoDark) and light on dark ones (logoLight).
const (
	defaultLogoDark  = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCA0OCA0OCI+PHJlY3QgeD0iNCIgeT0iNCIgd2lkdGg9IjQwIiBoZWlnaHQ9IjQwIiByeD0iMTAiIGZpbGw9IiMxNjE4MWQiLz48cGF0aCBkPSJNMTYgMzZWMTJoMTBhOCA4IDAgMCAxIDAgMTZIMjIiIGZpbGw9Im5vbmUiIHN0cm9rZT0iI2ZmZiIgc3Ryb2tlLXdpZHRoPSI0Ii8+PC9zdmc+"
	defaultLogoLight = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCA0OCA0OCI+PHJlY3QgeD0iNCIgeT0iNCIgd2lkdGg9IjQwIiBoZWlnaHQ9IjQwIiByeD0iMTAiIGZpbGw9IiNmZmYiLz48cGF0aCBkPSJNMTYgMzZWMTJoMTBhOCA4IDAgMCAxIDAgMTZIMjIiIGZpbGw9Im5vbmUiIHN0cm9rZT0iIzE2MTgxZCIgc3Ryb2tlLXdpZHRoPSI0Ii8+PC9zdmc+"
)

// colorRE accepts the CSS colours a theme may set: hex, rgb()/hsl() with
// plain numbers, or a colour name.
var colorRE = regexp.MustCompile(`^(#[0-9a-fA-F]{3,8}|(rgb|rgba|hsl|hsla)\([0-9., %]{1,40}\)|[a-zA-Z]{3,20})$`)

// brand is the white label of a login, defaults applied and checked.
type brand struct {
	AppName       string
	AppURL        string
	LogoLight     template.URL
	LogoDark      template.URL
	Mode          string
	Primary       template.CSS
	UseLogoLoader bool
	Lang          authwire.Language
}

// logoURL accepts https/http URLs and data:image URLs; others fall back.
func logoURL(s, def string) template.URL {
	if strings.HasPrefix(s, "data:image/") && !strings.ContainsAny(s, "\"'<> ") {
		return template.URL(s)
	}
	if u, err := url.Parse(s); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		return template.URL(u.String())
	}
	return template.URL(def)
}

// brandFor applies the white label's defaults: appName and appUrl default
// to the app's website (appUrl, else the redirect URL's origin).
func brandFor(opts authwire.InitParams, redirect string) brand {
	var wl authwire.WhiteLabelData
	if opts.WhiteLabel != nil {
		wl = *opts.WhiteLabel
	}
	wl = wl.WithDefaults()
	b := brand{Mode: string(wl.Mode), Lang: wl.DefaultLanguage, UseLogoLoader: wl.UseLogoLoader != nil && *wl.UseLogoLoader}
	if !wl.Mode.Valid() || wl.Mode == "" {
		b.Mode = string(authwire.ModeAuto)
	}
	if !wl.DefaultLanguage.Valid() {
		b.Lang = authwire.English
	}
	b.Primary = template.CSS(authwire.DefaultPrimaryColor)
	if c := wl.Theme["primary"]; colorRE.MatchString(c) {
		b.Primary = template.CSS(c)
	}
	b.LogoLight = logoURL(wl.LogoLight, defaultLogoLight)
	b.LogoDark = logoURL(wl.LogoDark, defaultLogoDark)
	site := ""
	if u, err := url.Parse(wl.AppURL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		site = u.String()
	} else if u, err := url.Parse(redirect); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		site = u.Scheme + "://" + u.Host
	}
	b.AppURL = site
	b.AppName = wl.AppName
	if b.AppName == "" {
		b.AppName = strings.TrimPrefix(strings.TrimPrefix(site, "https://"), "http://")
	}
	if b.AppName == "" {
		b.AppName = opts.ClientID
	}
	return b
}

// langLink is one entry of the language switcher.
type langLink struct {
	Code    string
	Name    string
	URL     string
	Current bool
}

// factorView is one MFA factor on a page.
type factorView struct {
	Kind      string
	Title     string
	Desc      string
	Mandatory bool
}

// view is what a page template sees.
type view struct {
	*translator
	brand
	Page        string
	TitleKey    string
	Nonce       string
	CSRF        string
	Action      string
	Langs       []langLink
	Notice      string
	Email       string
	Social      bool
	Factors     []factorView
	Mandatory   bool
	SkipAllowed bool
	Phrase      []string
	ErrorCode   string
	ErrorKey    string
	BackURL     string
	Index       *indexView
	Demo        *indexDemo // the front page's demo login, when it is offered
	// DevCodes says codes are written to the log, not mailed (dev only).
	DevCodes bool
}

// Lang is the page's language code.
func (v *view) Lang() string { return string(v.translator.lang) }

// render writes a page with its security headers.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, v *view) {
	v.Nonce = randomHex(16)
	v.translator = &translator{lang: v.brand.Lang, cat: h.catalogs[v.brand.Lang]}
	if v.translator.cat == nil {
		v.translator = &translator{lang: authwire.English, cat: h.catalogs[authwire.English]}
	}
	if h.missing != nil {
		v.translator.missing = h.missing
	}
	if v.TitleKey == "" {
		v.TitleKey = "loading"
	}
	for _, l := range authwire.Languages() {
		if v.Page == "start" || v.Page == "error" {
			break // their URL cannot be reloaded: no switcher
		}
		q := url.Values{"lang": {string(l)}}
		v.Langs = append(v.Langs, langLink{Code: string(l), Name: languageName(l), URL: r.URL.Path + "?" + q.Encode(), Current: l == v.translator.lang})
	}
	var buf bytes.Buffer
	if err := h.templates[v.Page].ExecuteTemplate(&buf, "layout", v); err != nil {
		h.log.Error("login: render", "page", v.Page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; img-src https: http: data:; style-src 'nonce-"+v.Nonce+"'; script-src 'nonce-"+v.Nonce+"'; base-uri 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
