package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/porticohq/portico/auth"
)

// authServeLogged runs `portico auth serve args…` until the test ends and
// returns its base URL and its log (stderr).
func authServeLogged(t *testing.T, args ...string) (string, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"auth", "serve", "--listen", "127.0.0.1:0"}, args...), stdout, stderr)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("auth serve: %v\n%s", err, stderr)
			}
		case <-time.After(15 * time.Second):
			t.Error("auth serve did not stop")
		}
	}
	t.Cleanup(stop)
	re := regexp.MustCompile(`login pages at (http://\S+)/start`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			return m[1], stderr
		}
		select {
		case err := <-done:
			t.Fatalf("auth serve exited: %v\n%s", err, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("auth serve did not start\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var (
	pageCodeRE = regexp.MustCompile(`DEV ONLY: passwordless code for (\S+): (\d{6})`)
	pageCSRFRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	pageFormRE = regexp.MustCompile(`action="(/login/[0-9a-f]+)/email"`)
)

const appRedirect = "http://127.0.0.1:1/cb"

// pagesClient plays a browser without script on the login pages: it stops
// at the redirect to the app and returns that URL.
func pagesClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), appRedirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

func postForm(t *testing.T, hc *http.Client, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	resp, err := hc.PostForm(u, form)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// pagesLogin logs sdk in through the pages (passwordless: email, then the
// code from the server's log; jwt: straight through) and completes it.
func pagesLogin(t *testing.T, sdk *auth.SDK, base string, logs *lockedBuffer, params auth.LoginParams, email string) *auth.State {
	t.Helper()
	params.RedirectURL = appRedirect
	p, err := sdk.LoginURL(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	page, frag, _ := strings.Cut(p.URL, "#")
	q, _ := url.ParseQuery(frag)
	hc := pagesClient()
	resp, body := postForm(t, hc, page, url.Values{"b64Params": {q.Get("b64Params")}})
	if email != "" {
		csrf, form := pageCSRFRE.FindStringSubmatch(body), pageFormRE.FindStringSubmatch(body)
		if csrf == nil || form == nil {
			t.Fatalf("email page: %s", body)
		}
		postForm(t, hc, base+form[1]+"/email", url.Values{"csrf": {csrf[1]}, "email": {email}})
		code := ""
		for _, m := range pageCodeRE.FindAllStringSubmatch(logs.String(), -1) {
			if m[1] == email {
				code = m[2]
			}
		}
		resp, body = postForm(t, hc, base+form[1]+"/code", url.Values{"csrf": {csrf[1]}, "code": {code}})
	}
	cb := resp.Header.Get("Location")
	if !strings.HasPrefix(cb, appRedirect+"#") {
		t.Fatalf("not sent back to the app: %s %s", resp.Status, body)
	}
	st, err := sdk.CompleteLogin(context.Background(), cb)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// `portico auth serve` logs the SDK in through its own pages and key
// network, with providers from --login-config, and keeps keys across a
// restart on the same --data-dir.
func TestAuthServePagesLogin(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	t.Setenv("TEST_JWT_ISSUER", "https://issuer.test")
	cfgFile := filepath.Join(t.TempDir(), "login.json")
	cfg := `{"passwordless": true, "verifiers": [{"verifier": "app-jwt", "typeOfLogin": "jwt", "jwks": ` + string(jwks) +
		`, "issuer": "${TEST_JWT_ISSUER}", "audience": ["my-app"], "verifierIdField": "email", "isVerifierIdCaseSensitive": false}]}`
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	runOK(t, "auth", "clients", "add", "cG9ydGljbw", "--redirect-url", "http://127.0.0.1/cb", "--data-dir", dataDir)
	args := []string{"--data-dir", dataDir, "--login-config", cfgFile, "--networks", "sapphire_devnet", "--dev-log-codes"}
	base, logs := authServeLogged(t, args...)
	newSDK := func(base string) *auth.SDK {
		sdk, err := auth.New(context.Background(), auth.InitParams{ClientID: "cG9ydGljbw", Network: auth.SapphireDevnet, SDKURL: base},
			auth.WithStorage(&auth.FileStorage{Dir: t.TempDir()}))
		if err != nil {
			t.Fatal(err)
		}
		return sdk
	}
	none := auth.LoginParams{LoginProvider: auth.EmailPasswordless, MfaLevel: auth.MFANone}
	st := pagesLogin(t, newSDK(base), base, logs, none, "pat@example.com")
	if len(st.PrivKey) != 64 || st.UserInfo.VerifierID != "pat@example.com" {
		t.Fatalf("state %+v", st)
	}
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, nil)
	claims, _ := json.Marshal(map[string]any{"iss": "https://issuer.test", "aud": "my-app", "sub": "u1", "email": "Pat@Example.com", "exp": time.Now().Add(time.Hour).Unix()})
	jws, _ := signer.Sign(claims)
	tok, _ := jws.CompactSerialize()
	jst := pagesLogin(t, newSDK(base), base, logs, auth.LoginParams{LoginProvider: auth.JWT, MfaLevel: auth.MFANone,
		ExtraLoginOptions: &auth.ExtraLoginOptions{IDToken: tok}}, "")
	if jst.UserInfo.Verifier != "app-jwt" || jst.UserInfo.VerifierID != "pat@example.com" || jst.CoreKitKey == st.CoreKitKey {
		t.Fatalf("jwt state %+v", jst.UserInfo)
	}

	// Restart on the same data dir: the same user has the same key.
	base2, logs2 := authServeLogged(t, args...)
	if again := pagesLogin(t, newSDK(base2), base2, logs2, none, "pat@example.com"); again.CoreKitKey != st.CoreKitKey {
		t.Fatal("another key after a restart")
	}
}

// `portico serve` starts the auth server on its own port unless --no-auth;
// the URL it prints answers with the front page.
func TestServeStartsAuth(t *testing.T) {
	for _, noAuth := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
		args := []string{"serve", "--listen", "127.0.0.1:0"}
		if noAuth {
			args = append(args, "--no-auth")
		}
		done := make(chan error, 1)
		go func() { done <- run(ctx, args, stdout, stderr) }()
		re := regexp.MustCompile(`(?m)^auth: (http://\S+)/ \(login pages, session server\)$`)
		deadline := time.Now().Add(60 * time.Second)
		var m []string
		// With auth, wait for its lines (it starts beside the gateway);
		// without, wait for the gateway to be up and look once more.
		for time.Now().Before(deadline) && m == nil && (!noAuth || !strings.Contains(stdout.String(), "ws://")) {
			m = re.FindStringSubmatch(stdout.String())
			time.Sleep(20 * time.Millisecond)
		}
		for time.Now().Before(deadline) && !noAuth && !strings.Contains(stdout.String(), "auth: dev client id") {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		m = re.FindStringSubmatch(stdout.String())
		if noAuth {
			if m != nil {
				t.Errorf("--no-auth started the auth server:\n%s", stdout)
			}
		} else {
			if m == nil {
				t.Fatalf("no auth line:\n%s\n%s", stdout, stderr)
			}
			// It registers the dev client it prints.
			if !strings.Contains(stdout.String(), "auth: dev client id portico-dev") {
				t.Errorf("no dev client line:\n%s", stdout)
			}
			// The auth server logs through the gateway's logger.
			if !strings.Contains(stderr.String(), `msg="no data dir or PostgreSQL: sessions are kept in memory and lost on exit" component=auth`) {
				t.Errorf("no auth warning through the gateway's logger:\n%s", stderr)
			}
			for _, path := range []string{"/", "/start", "/healthz"} {
				resp, err := http.Get(m[1] + path)
				if err != nil || resp.StatusCode != 200 {
					t.Errorf("GET %s: %v %v", path, err, resp)
				}
				if resp != nil {
					resp.Body.Close()
				}
			}
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
		}
	}
}
