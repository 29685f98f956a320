package login

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd/clients"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/keynet"
	"github.com/porticohq/portico/authd/sessionserver"
)

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var codeRE = regexp.MustCompile(`DEV ONLY: passwordless code for (\S+): (\d{6})`)

// lastCode is the newest code the log shows for email.
func (b *logBuffer) lastCode(t testing.TB, email string) string {
	t.Helper()
	code := ""
	for _, m := range codeRE.FindAllStringSubmatch(b.String(), -1) {
		if m[1] == email {
			code = m[2]
		}
	}
	if code == "" {
		t.Fatalf("no code for %s in the log:\n%s", email, b)
	}
	return code
}

// clock is a settable test clock.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}
func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// issuer plays an external OpenID Connect provider (and a custom JWT
// issuer) on 127.0.0.1: discovery, JWKS, authorize (approves at once, as
// the user "alice"), token.
type issuer struct {
	srv      *httptest.Server
	key      *rsa.PrivateKey
	clientID string
	secret   string
	mu       sync.Mutex
	codes    map[string]url.Values // code → the authorize request
	lastAuth url.Values
	subject  string
}

func newIssuer(t testing.TB) *issuer {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: k, clientID: "portico-test-client", secret: "s3cret", codes: map[string]url.Values{}, subject: "alice"}
	mux := http.NewServeMux()
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		u := is.srv.URL
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": u, "authorization_endpoint": u + "/authorize", "token_endpoint": u + "/token",
			"jwks_uri": u + "/jwks", "id_token_signing_alg_values_supported": []string{"RS256"}, "response_types_supported": []string{"code"},
			"subject_types_supported": []string{"public"}})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		is.mu.Lock()
		is.lastAuth = q
		code := randomHex(8)
		is.codes[code] = q
		is.mu.Unlock()
		if q.Get("client_id") != is.clientID || q.Get("response_type") != "code" {
			http.Error(w, "bad client", 400)
			return
		}
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		is.mu.Lock()
		q, found := is.codes[r.PostForm.Get("code")]
		delete(is.codes, r.PostForm.Get("code"))
		sub := is.subject
		is.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		switch {
		case id != is.clientID || secret != is.secret:
			http.Error(w, `{"error":"invalid_client"}`, 401)
			return
		case !found || q.Get("redirect_uri") != r.PostForm.Get("redirect_uri"):
			http.Error(w, `{"error":"invalid_grant"}`, 400)
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") || q.Get("code_challenge_method") != "S256":
			http.Error(w, `{"error":"invalid_grant","error_description":"PKCE"}`, 400)
			return
		}
		tok := is.sign(t, map[string]any{"iss": is.srv.URL, "aud": is.clientID, "sub": sub, "email": sub + "@example.com",
			"name": "Alice Example", "nonce": q.Get("nonce"), "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}, "RS256")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-" + randomHex(4), "token_type": "Bearer", "expires_in": 3600, "id_token": tok})
	})
	return is
}

// sign makes a JWT with the issuer's key.
func (is *issuer) sign(t testing.TB, claims map[string]any, alg string) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(alg), Key: jose.JSONWebKey{Key: is.key, KeyID: "k1"}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(claims)
	jws, err := s.Sign(b)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := jws.CompactSerialize()
	return out
}

func (is *issuer) jwks() json.RawMessage {
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	return b
}

func (is *issuer) auth() url.Values {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.lastAuth
}

// env is an auth server (session server + pages) with an embedded key
// network, an external OIDC issuer and a custom JWT verifier.
type env struct {
	URL      string
	Handler  *Handler
	Log      *logBuffer
	Issuer   *issuer
	Sessions *sessionapi.Client
	Clock    *clock
	Net      *keynet.Embedded
	// serve makes h the handler the env's server serves from now on (a
	// load balancer sending new logins to another instance).
	serve func(h http.Handler)
}

const jwtVerifier = "test-jwt"

// testClientID is the client the tests' SDKs use unless they name another.
const testClientID = "BPi5PB_UiIZ-cPz1GtV5i1I2iOSOHuimiXBI0e-Oe_u6X3oVAbCiAZOTEBtTXw4tsluTITPqA8zMsfxIKMjiqNQ"

// testClients registers the tests' client ids, each with the app
// callback, the SDK's loopback callbacks and the pages_test app.
func testClients(t testing.TB) clients.Static {
	t.Helper()
	var cs []clients.Client
	for _, id := range []string{testClientID, "b3RoZXItY2xpZW50"} {
		cs = append(cs, clients.Client{ID: id, RedirectURLs: []string{appCallback, "http://127.0.0.1/callback/", "https://app.example/cb"},
			Origins: []string{"https://app.example", "https://acme.example"}})
	}
	s, err := clients.NewStatic(cs...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newEnv(t testing.TB, mod ...func(*Config)) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{Log: &logBuffer{}, Issuer: newIssuer(t), Clock: newClock()}
	db, err := sessionserver.OpenSQLite(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var handler atomic.Pointer[http.Handler]
	mux := http.NewServeMux()
	sessionserver.New(sessionserver.Config{Store: db, Now: e.Clock.Now}).Register(mux, "/")
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.URL = srv.URL
	e.Sessions = &sessionapi.Client{BaseURL: srv.URL + "/"}
	pl, err := NewPasswordless(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	pl.DevLogCodes = true
	cfg := Config{
		BaseURLs:     DefaultBaseURLs(srv.URL),
		OIDC:         []OIDCProvider{{Name: "google", Verifier: "test-google", DiscoveryURL: e.Issuer.srv.URL, ClientID: e.Issuer.clientID, ClientSecret: e.Issuer.secret}},
		Verifiers:    []idtoken.Config{{Verifier: jwtVerifier, TypeOfLogin: "jwt", JWKS: e.Issuer.jwks(), Issuer: e.Issuer.srv.URL, Audience: []string{"my-app"}, Leeway: 30}},
		Passwordless: pl,
		Sessions:     e.Sessions,
		Clients:      testClients(t),
		// Tests log the same users in many times; the limits' own tests
		// use the defaults.
		Limits: Limits{CodesPerEmail: 100, CodesPerClient: 1000},
		Logger: slog.New(slog.NewTextHandler(e.Log, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, m := range mod {
		m(&cfg)
	}
	nets := []string{string(auth.SapphireDevnet), string(auth.SapphireMainnet)}
	e.Net, err = keynet.StartEmbedded(ctx, keynet.EmbeddedOptions{Networks: nets, Verifiers: cfg.VerifierConfigs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Net.Close() })
	cfg.Networks = map[string]*keynet.Client{}
	for _, n := range nets {
		if cfg.Networks[n], err = e.Net.Client(n, nil); err != nil {
			t.Fatal(err)
		}
	}
	if e.Handler, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	e.serve = func(h http.Handler) { handler.Store(&h) }
	e.serve(e.Handler)
	return e
}

// sdk makes an SDK for the env, with file storage in a temp dir.
func (e *env) sdk(t testing.TB, p auth.InitParams) *auth.SDK {
	t.Helper()
	if p.ClientID == "" {
		p.ClientID = testClientID
	}
	if p.Network == "" {
		p.Network = auth.SapphireDevnet
	}
	if p.SDKURL == "" {
		p.SDKURL = e.URL
	}
	sdk, err := auth.New(context.Background(), p, auth.WithStorage(&auth.FileStorage{Dir: t.TempDir()}), auth.WithSessionServer(e.URL+"/"))
	if err != nil {
		t.Fatal(err)
	}
	return sdk
}

// browser plays a browser without script: it posts /start's fragment as
// the page's script does, keeps cookies, and stops at the app's redirect.
type browser struct {
	t    testing.TB
	hc   *http.Client
	app  string // the app's redirect URL prefix
	Page string // the last page's HTML
	URL  string // the last page's URL
	// IP, when set, is sent as the client address in the header
	// testIPHeader (an env made with it as Config.ClientIPHeader).
	IP string
}

// testIPHeader carries a browser's client address in the tests that need
// several.
const testIPHeader = "X-Test-Client-IP"

func newBrowser(t testing.TB, app string) *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{t: t, app: app}
	b.hc = &http.Client{Jar: jar, Timeout: 60 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), app) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return b
}

// do sends a request and follows redirects; it returns the app callback
// URL (with fragment) if the pages sent the browser back to the app.
func (b *browser) do(req *http.Request) (callback string, status int) {
	b.t.Helper()
	if b.IP != "" {
		req.Header.Set(testIPHeader, b.IP)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "" && strings.HasPrefix(loc, b.app) {
		return loc, resp.StatusCode
	}
	b.Page, b.URL = string(body), resp.Request.URL.String()
	return "", resp.StatusCode
}

// open loads the login URL and posts its b64Params as /start's script does.
func (b *browser) open(loginURL string) (string, int) {
	b.t.Helper()
	page, frag, _ := strings.Cut(loginURL, "#")
	req, _ := http.NewRequest(http.MethodGet, page, nil)
	if cb, st := b.do(req); cb != "" || st != 200 || !strings.Contains(b.Page, "location.hash") {
		b.t.Fatalf("start page: %d %s", st, b.Page)
	}
	q, _ := url.ParseQuery(frag)
	return b.post(page, url.Values{"b64Params": {q.Get("b64Params")}})
}

var (
	csrfRE   = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	actionRE = regexp.MustCompile(`action="((?:/[^"/]+)*/login/[0-9a-f]+)/`)
)

// submit posts a form of the current page to action (relative to the
// login's path), with the page's csrf token.
func (b *browser) submit(action string, form url.Values) (string, int) {
	b.t.Helper()
	m, a := csrfRE.FindStringSubmatch(b.Page), actionRE.FindStringSubmatch(b.Page)
	if m == nil || a == nil {
		b.t.Fatalf("no form on the page:\n%s", b.Page)
	}
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", m[1])
	u, _ := url.Parse(b.URL)
	return b.post(u.Scheme+"://"+u.Host+a[1]+"/"+action, form)
}

func (b *browser) post(u string, form url.Values) (string, int) {
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

func regexpMust(s string) *regexp.Regexp { return regexp.MustCompile(s) }
