package login

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/porticohq/portico/auth"
)

// chromiumPath finds Chromium: $PORTICO_CHROMIUM, /usr/bin/chromium (what
// scripts/install-chromium.sh installs), or chromium on $PATH. Without it
// the test is skipped, or fails under PORTICO_TEST_STRICT (make test).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("PORTICO_CHROMIUM"), "/usr/bin/chromium"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	msg := "Chromium not found (run scripts/install-chromium.sh, or set PORTICO_CHROMIUM)"
	if os.Getenv("PORTICO_TEST_STRICT") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// artifactsDir is where screenshots go: $PORTICO_ARTIFACTS, else
// testdata/artifacts (ignored by git).
func artifactsDir(t *testing.T) string {
	dir := os.Getenv("PORTICO_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newChromium starts a headless Chromium with a fresh profile.
func newChromium(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	profile, err := os.MkdirTemp("", "portico-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(520, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelB()
		cancelA()
		// Chromium's helpers may still write to the profile for a moment.
		for range 50 {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// browserLogin runs sdk.Login with Chromium as the browser; drive gets
// the login URL and plays the user.
func browserLogin(t *testing.T, b browserSDK, params auth.LoginParams, drive func(ctx context.Context, loginURL string) error, cctx context.Context) (*auth.State, time.Duration) {
	t.Helper()
	urls := make(chan string, 1)
	errs := make(chan error, 1)
	go func() {
		u, ok := <-urls
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(cctx, 60*time.Second)
		defer cancel()
		errs <- drive(ctx, u)
	}()
	start := time.Now()
	b.opener.ch = urls
	st, err := b.SDK.Login(context.Background(), params)
	b.opener.ch = nil
	took := time.Since(start)
	close(urls)
	select {
	case derr := <-errs:
		if derr != nil {
			t.Fatalf("browser: %v", derr)
		}
	case <-time.After(5 * time.Second):
	}
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return st, took
}

// opener is an SDK's browser: it hands the login URL to the test's driver.
type opener struct{ ch chan<- string }

func (o *opener) open(u string) error {
	if o.ch == nil {
		return errors.New("no browser")
	}
	o.ch <- u
	return nil
}

// browserSDK is an SDK and its browser opener.
type browserSDK struct {
	SDK    *auth.SDK
	opener *opener
}

// newBrowserSDK makes an SDK whose browser is Chromium, driven by the test.
func (e *env) newBrowserSDK(t *testing.T, p auth.InitParams) browserSDK {
	t.Helper()
	o := &opener{}
	p.ClientID = "BPi5PB_UiIZ-cPz1GtV5i1I2iOSOHuimiXBI0e-Oe_u6X3oVAbCiAZOTEBtTXw4tsluTITPqA8zMsfxIKMjiqNQ"
	if p.Network == "" {
		p.Network = auth.SapphireDevnet
	}
	p.SDKURL = e.URL
	sdk, err := auth.New(context.Background(), p, auth.WithStorage(&auth.FileStorage{Dir: t.TempDir()}),
		auth.WithSessionServer(e.URL+"/"), auth.WithBrowser(o.open), auth.WithLoginTimeout(90*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return browserSDK{SDK: sdk, opener: o}
}

func screenshot(ctx context.Context, dir, name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		var png []byte
		if err := chromedp.CaptureScreenshot(&png).Do(ctx); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), png, 0o644)
	})
}

// passwordlessDriver types the email and the code from the server log;
// shot, if set, names the screenshot taken of the email page.
func (e *env) passwordlessDriver(t *testing.T, email, dir, shot string) func(ctx context.Context, u string) error {
	return func(ctx context.Context, u string) error {
		acts := []chromedp.Action{chromedp.Navigate(u), chromedp.WaitVisible("#email", chromedp.ByID)}
		if shot != "" {
			acts = append(acts, screenshot(ctx, dir, shot))
		}
		if err := chromedp.Run(ctx, acts...); err != nil {
			return fmt.Errorf("start: %w", err)
		}
		return e.emailSteps(t, email)(ctx)
	}
}

// emailSteps types the email on the email page, then the code from the
// server log. (A login payload starts one login: a driver never loads the
// login URL twice.)
func (e *env) emailSteps(t *testing.T, email string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if err := chromedp.Run(ctx, chromedp.SendKeys("#email", email, chromedp.ByID), chromedp.Click("#send", chromedp.ByID),
			chromedp.WaitVisible("#code", chromedp.ByID)); err != nil {
			return fmt.Errorf("email step: %w", err)
		}
		code := e.Log.lastCode(t, email)
		return chromedp.Run(ctx, chromedp.SendKeys("#code", code, chromedp.ByID), chromedp.Click("#verify", chromedp.ByID),
			chromedp.WaitReady("body"))
	}
}

// The SDK logs in through the real pages in headless Chromium: email
// passwordless and OIDC, with screenshots in light, dark and Japanese.
func TestBrowserLogin(t *testing.T) {
	cctx := newChromium(t)
	e := newEnv(t)
	dir := artifactsDir(t)
	none := auth.LoginParams{LoginProvider: auth.EmailPasswordless, MfaLevel: auth.MFANone}

	light := e.newBrowserSDK(t, auth.InitParams{WhiteLabel: &auth.WhiteLabelData{AppName: "Acme Wallet", Mode: auth.ModeLight, Theme: map[string]string{"primary": "#7b1fa2"}}})
	st, took := browserLogin(t, light, none, e.passwordlessDriver(t, "zoe@example.com", dir, "login-light.png"), cctx)
	t.Logf("passwordless login through Chromium (first, with key assignment): %v", took)
	if !hex64.MatchString(st.PrivKey) || !hex64.MatchString(st.CoreKitKey) || len(st.Ed25519PrivKey) != 128 || st.UserInfo.VerifierID != "zoe@example.com" {
		t.Fatalf("state: %+v", st)
	}

	dark := e.newBrowserSDK(t, auth.InitParams{WhiteLabel: &auth.WhiteLabelData{AppName: "Acme Wallet", Mode: auth.ModeDark}})
	st2, took := browserLogin(t, dark, none, e.passwordlessDriver(t, "zoe@example.com", dir, "login-dark.png"), cctx)
	t.Logf("passwordless login through Chromium (again): %v", took)
	if st2.CoreKitKey != st.CoreKitKey || st2.PrivKey != st.PrivKey {
		t.Error("the second login gave another key")
	}

	ja := e.newBrowserSDK(t, auth.InitParams{Network: auth.SapphireMainnet, WhiteLabel: &auth.WhiteLabelData{DefaultLanguage: auth.Japanese}})
	st3, _ := browserLogin(t, ja, none, e.passwordlessDriver(t, "zoe@example.com", dir, "login-ja.png"), cctx)
	if st3.CoreKitKey == st.CoreKitKey {
		t.Error("another network gave the same key")
	}

	// auto follows the browser: with prefers-color-scheme dark, the page is dark.
	auto := e.newBrowserSDK(t, auth.InitParams{})
	var bg string
	_, _ = browserLogin(t, auto, none, func(ctx context.Context, u string) error {
		err := chromedp.Run(ctx, emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}),
			chromedp.Navigate(u), chromedp.WaitVisible("#email", chromedp.ByID),
			chromedp.Evaluate(`getComputedStyle(document.body).backgroundColor`, &bg), screenshot(ctx, dir, "login-auto-dark.png"),
			emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "light"}}))
		if err != nil {
			return err
		}
		return e.emailSteps(t, "yan@example.com")(ctx)
	}, cctx)
	if bg != "rgb(15, 17, 21)" {
		t.Errorf("mode auto with a dark browser: background %s, want the dark theme's", bg)
	}

	// OIDC against the in-test issuer: Chromium follows the provider's
	// redirects on its own.
	oidcSDK := e.newBrowserSDK(t, auth.InitParams{})
	st4, took := browserLogin(t, oidcSDK, auth.LoginParams{LoginProvider: auth.Google, MfaLevel: auth.MFANone,
		ExtraLoginOptions: &auth.ExtraLoginOptions{AdditionalParams: map[string]string{"hd": "example.com"}}},
		func(ctx context.Context, u string) error { return chromedp.Run(ctx, chromedp.Navigate(u)) }, cctx)
	t.Logf("OIDC login through Chromium: %v", took)
	if st4.UserInfo.TypeOfLogin != "google" || st4.UserInfo.VerifierID != "alice" || st4.CoreKitKey == st.CoreKitKey {
		t.Errorf("OIDC state: %+v", st4.UserInfo)
	}
	if e.Issuer.auth().Get("hd") != "example.com" {
		t.Error("additionalParams did not reach the provider")
	}
	for _, f := range []string{"login-light.png", "login-dark.png", "login-ja.png", "login-auto-dark.png"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() < 1000 {
			t.Errorf("screenshot %s: %v", f, err)
		}
	}
}

// MFA in the browser: mandatory setup with a password (German pages),
// the recovery phrase, then a login that the saved device share lets
// straight through.
func TestBrowserMFA(t *testing.T) {
	cctx := newChromium(t)
	e := newEnv(t)
	dir := artifactsDir(t)
	lc := map[string]auth.LoginConfig{"email_passwordless": {Verifier: PasswordlessVerifier, TypeOfLogin: auth.TypePasswordless, ClientID: "x"}}
	b := e.newBrowserSDK(t, auth.InitParams{LoginConfig: lc, WhiteLabel: &auth.WhiteLabelData{DefaultLanguage: auth.German, AppName: "Acme Wallet"}})
	const email = "mia@example.com"
	st, took := browserLogin(t, b, auth.LoginParams{LoginProvider: auth.EmailPasswordless, MfaLevel: auth.MFAMandatory}, func(ctx context.Context, u string) error {
		if err := e.passwordlessDriver(t, email, dir, "")(ctx, u); err != nil {
			return err
		}
		return chromedp.Run(ctx, chromedp.WaitVisible("#enable", chromedp.ByID), screenshot(ctx, dir, "mfa-setup-de.png"),
			chromedp.SendKeys("#password", "correct horse battery", chromedp.ByID), chromedp.SendKeys("#password2", "correct horse battery", chromedp.ByID),
			chromedp.Click("#enable", chromedp.ByID), chromedp.WaitVisible("#phrase", chromedp.ByID), screenshot(ctx, dir, "mfa-phrase-de.png"),
			chromedp.Click("#saved", chromedp.ByID), chromedp.WaitReady("body"))
	}, cctx)
	t.Logf("login with MFA setup through Chromium: %v", took)
	if st.UserInfo.IsMfaEnabled == nil || !*st.UserInfo.IsMfaEnabled || !hex64.MatchString(st.UserInfo.DappShare) {
		t.Fatalf("userInfo %+v", st.UserInfo)
	}
	st2, took := browserLogin(t, b, auth.LoginParams{LoginProvider: auth.EmailPasswordless}, e.passwordlessDriver(t, email, dir, ""), cctx)
	t.Logf("login with the saved device share through Chromium: %v", took)
	if st2.CoreKitKey != st.CoreKitKey {
		t.Fatal("another key with the device share")
	}
}
