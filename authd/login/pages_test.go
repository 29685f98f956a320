package login

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/authd/tkey"
)

// Every catalog has exactly English's keys, none empty.
func TestCatalogsComplete(t *testing.T) {
	cats, err := loadCatalogs()
	if err != nil {
		t.Fatal(err)
	}
	en := cats[auth.English]
	for _, l := range auth.Languages() {
		for k := range en {
			if cats[l][k] == "" {
				t.Errorf("%s: missing %q", l, k)
			}
			if strings.Contains(en[k], "%s") != strings.Contains(cats[l][k], "%s") {
				t.Errorf("%s: %q has a different placeholder", l, k)
			}
		}
		for k := range cats[l] {
			if _, ok := en[k]; !ok {
				t.Errorf("%s: %q is not in en", l, k)
			}
		}
	}
	for _, code := range []string{CodeBadRequest, CodeLoginNotFound, CodeFlowExpired, CodeForbidden, CodeTooManyLogins, CodeProviderUnavailable,
		CodeBadRedirect, CodeTokenRefused, CodeProviderError, CodeNetworkUnavailable, CodeKeyNetwork, CodeSessionWrite, CodeTooManyAttempts,
		CodeMFARequired, CodeInternal} {
		if en["err_"+code] == "" {
			t.Errorf("error code %s has no message", code)
		}
	}
}

// allViews are every page with every optional part on.
func allViews() []*view {
	fs := factors(nil, true)
	for i := range fs {
		fs[i].Mandatory = true
	}
	var out []*view
	out = append(out, &view{Page: "start"}, &view{Page: "email", Email: "a@b.c"}, &view{Page: "code", Email: "a@b.c"}, &view{Page: "code", Social: true, Email: "a@b.c"},
		&view{Page: "mfa_setup", Factors: fs, Mandatory: true, SkipAllowed: true}, &view{Page: "mfa_recover", Factors: fs},
		&view{Page: "phrase", Phrase: strings.Fields(strings.Repeat("abandon ", 24))})
	for _, n := range []string{"bad_email", "wrong_code", "code_expired", "mandatory_missing", "password_short", "passwords_differ", "wrong_password", "wrong_phrase", "err_token_refused"} {
		out = append(out, &view{Page: "email", Notice: n})
	}
	for code := range codeStatus {
		out = append(out, &view{Page: "error", ErrorCode: code, ErrorKey: "err_" + code, BackURL: "https://app.example/"})
	}
	out = append(out, &view{Page: "index", TitleKey: "index_title", Index: &indexView{
		Envs: []indexEnv{{Env: "production", Base: "https://auth.example"}}, Sessions: []string{"POST /store/set"},
		Networks: []indexNetwork{{Name: "sapphire_devnet", Nodes: 5, Threshold: 3}}, Methods: []indexMethod{{Provider: "email_passwordless", Verifier: "v", Dev: true}},
		JWKS: "https://auth.example/jwks.json", Health: "/healthz"}, Demo: &indexDemo{Action: "/demo?lang=en", ClientID: "portico-dev"}},
		&view{Page: "demo", TitleKey: "demo_done_title", BackURL: "/"})
	return out
}

// Every page renders in every language without a missing key.
func TestPagesRenderInAllLanguages(t *testing.T) {
	e := newEnv(t)
	h := e.Handler
	h.missing = map[string]bool{}
	cats, _ := loadCatalogs()
	for _, l := range auth.Languages() {
		for _, v := range allViews() {
			v.brand = brandFor(auth.InitParams{}, "https://app.example/cb")
			v.brand.Lang = l
			v.Action = "/login/x"
			rec := httptest.NewRecorder()
			h.render(rec, httptest.NewRequest("GET", "/login/x", nil), 200, v)
			body := rec.Body.String()
			if rec.Code != 200 || !strings.Contains(body, `<html lang="`+string(l)+`"`) {
				t.Fatalf("%s %s: %d %s", l, v.Page, rec.Code, body)
			}
			if l != auth.English && !strings.Contains(body, cats[l]["secured_by"]) {
				t.Errorf("%s %s: not translated", l, v.Page)
			}
			if strings.Contains(body, "ZgotmplZ") {
				t.Errorf("%s %s: template escaping refused a value", l, v.Page)
			}
		}
	}
	if len(h.missing) > 0 {
		t.Fatalf("translation keys used by the pages but missing: %v", h.missing)
	}
}

func TestWhiteLabel(t *testing.T) {
	yes := true
	cases := []struct {
		name string
		wl   *auth.WhiteLabelData
		want []string
		not  []string
	}{
		{"defaults", nil, []string{`data-mode="auto"`, "--primary:#0364FF", `lang="en"`, "Sign in to app.example", defaultLogoDark, defaultLogoLight,
			"prefers-color-scheme: dark", `class="spinner"`}, []string{`class="logo-loader`}},
		{"overrides", &auth.WhiteLabelData{AppName: "Acme Wallet", LogoLight: "https://cdn.acme.example/logo-white.svg", LogoDark: "https://cdn.acme.example/logo-black.svg",
			DefaultLanguage: auth.German, Mode: auth.ModeDark, Theme: map[string]string{"primary": "#ff00aa"}, AppURL: "https://acme.example", UseLogoLoader: &yes},
			[]string{`data-mode="dark"`, "--primary:#ff00aa", `lang="de"`, "Bei Acme Wallet anmelden", `class="logo-on-light" src="https://cdn.acme.example/logo-black.svg"`,
				`class="logo-on-dark" src="https://cdn.acme.example/logo-white.svg"`, `href="https://acme.example"`, "logo-loader"}, []string{`class="spinner"`}},
		{"light", &auth.WhiteLabelData{Mode: auth.ModeLight, DefaultLanguage: auth.Japanese}, []string{`data-mode="light"`, `lang="ja"`, "にサインイン"}, nil},
		{"unsafe values fall back", &auth.WhiteLabelData{LogoDark: "javascript:alert(1)", Theme: map[string]string{"primary": "red;}body{display:none"}},
			[]string{"--primary:#0364FF", defaultLogoDark}, []string{"javascript:", "red;}body"}},
	}
	e := newEnv(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sdk := e.sdk(t, auth.InitParams{WhiteLabel: c.wl})
			p, err := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: "https://app.example/cb"})
			if err != nil {
				t.Fatal(err)
			}
			b := newBrowser(t, "https://app.example/")
			b.open(p.URL)
			for _, w := range c.want {
				w = strings.ReplaceAll(w, "+", "&#43;") // as html/template writes it in attributes
				if !strings.Contains(b.Page, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(b.Page, w) {
					t.Errorf("page has %q", w)
				}
			}
			// The language switcher changes the language for the rest of the login.
			b.do(mustGet(b.URL + "?lang=ko"))
			if !strings.Contains(b.Page, `lang="ko"`) || !strings.Contains(b.Page, "로그인") {
				t.Errorf("?lang=ko: %s", b.Page[:200])
			}
		})
	}
}

func TestBaseURLs(t *testing.T) {
	d := DefaultBaseURLs("http://127.0.0.1:8550/")
	seen := map[string]bool{}
	for _, env := range []auth.BuildEnv{auth.Production, auth.Staging, auth.Testing} {
		if d[env] == "" || seen[d[env]] {
			t.Fatalf("base URLs not distinct: %v", d)
		}
		seen[d[env]] = true
	}
	e := newEnv(t)
	for _, env := range []auth.BuildEnv{auth.Production, auth.Staging, auth.Testing} {
		sdk := e.sdk(t, auth.InitParams{BuildEnv: env, SDKURL: e.Handler.cfg.BaseURLs[env]})
		p, err := sdk.LoginURL(context.Background(), auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: appCallback})
		if err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, appCallback)
		b.open(p.URL)
		want := e.Handler.cfg.BaseURLs[env] + "/login/"
		if !strings.HasPrefix(b.URL, want) || !strings.Contains(b.Page, `action="`+strings.TrimPrefix(want, e.URL)) {
			t.Errorf("%s: login continues at %s, want %s…", env, b.URL, want)
		}
	}
	_, err := newEnvConfigErr(t, func(c *Config) {
		c.BaseURLs = map[auth.BuildEnv]string{auth.Production: "http://a/", auth.Staging: "http://a"}
	})
	if err == nil || !strings.Contains(err.Error(), "baseUrls.staging") {
		t.Errorf("duplicate base URLs: %v", err)
	}
}

// newEnvConfigErr builds a Handler from a modified minimal config.
func newEnvConfigErr(t *testing.T, mod func(*Config)) (*Handler, error) {
	e := newEnv(t)
	cfg := e.Handler.cfg
	mod(&cfg)
	return New(cfg)
}

func TestFactorsOrder(t *testing.T) {
	p := func(i int) *int { return &i }
	got := factors(&auth.MfaSettings{PasswordFactor: &auth.MfaSetting{Enable: true, Priority: p(0)}, SocialBackupFactor: &auth.MfaSetting{Enable: false}}, true)
	var kinds []string
	for _, f := range got {
		kinds = append(kinds, f.Kind)
	}
	if want := []string{tkey.KindPassword, tkey.KindDevice, tkey.KindBackup}; !slices.Equal(kinds, want) {
		t.Errorf("factors %v, want %v", kinds, want)
	}
	if !got[1].Mandatory {
		t.Error("the device factor is mandatory by default")
	}
}

func TestStartErrors(t *testing.T) {
	e := newEnv(t)
	b := newBrowser(t, appCallback)
	for name, c := range map[string]struct {
		b64  string
		want int
	}{
		"not base64":    {"%%%", 400},
		"no loginId":    {"e30", 400},
		"unknown login": {"eyJsb2dpbklkIjoiMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMSJ9", 404},
	} {
		if _, st := b.post(e.URL+"/start", map[string][]string{"b64Params": {c.b64}}); st != c.want || !strings.Contains(b.Page, `id="error"`) {
			t.Errorf("%s: %d, want %d", name, st, c.want)
		}
	}
	// An unknown login id or a foreign cookie.
	if _, st := b.do(mustGet(e.URL + "/login/deadbeef")); st != 410 {
		t.Errorf("unknown login: %d", st)
	}
	_ = json.Valid
}

// docs/auth.md lists every error code with its status and English message.
func TestErrorCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "auth.md"))
	if err != nil {
		t.Fatal(err)
	}
	cats, _ := loadCatalogs()
	for code, status := range codeStatus {
		row := fmt.Sprintf("| `%s` | %d | %s |", code, status, cats[auth.English]["err_"+code])
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/auth.md lacks the row %s", row)
		}
	}
}
