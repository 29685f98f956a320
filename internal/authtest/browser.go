package authtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Browser plays a browser without script on the real login pages
// (authd/login): it posts /start's fragment as the page's script does,
// keeps cookies, fills the forms, and stops at the redirect to the app.
type Browser struct {
	// App is the app's redirect URL prefix: a redirect there ends a login.
	App string
	// Page and URL are the last page's HTML and address.
	Page, URL string

	hc *http.Client
}

// NewBrowser makes a browser that stops at redirects to app.
func NewBrowser(app string) *Browser {
	jar, _ := cookiejar.New(nil)
	b := &Browser{App: app}
	b.hc = &http.Client{Jar: jar, Timeout: 60 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), b.App) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return b
}

// do sends a request, following redirects, and returns the app callback
// URL if the pages sent the browser back to the app.
func (b *Browser) do(req *http.Request) (string, int, error) {
	resp, err := b.hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); loc != "" && strings.HasPrefix(loc, b.App) {
		return loc, resp.StatusCode, nil
	}
	b.Page, b.URL = string(body), resp.Request.URL.String()
	return "", resp.StatusCode, nil
}

// Start loads a login URL and posts its b64Params as /start's script does.
func (b *Browser) Start(loginURL string) (callback string, status int, err error) {
	page, frag, _ := strings.Cut(loginURL, "#")
	q, _ := url.ParseQuery(frag)
	return b.post(page, url.Values{"b64Params": {q.Get("b64Params")}})
}

var (
	csrfRE   = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	actionRE = regexp.MustCompile(`action="((?:/[^"/]+)*/login/[0-9a-f]+)/`)
)

// Submit posts a form of the current page to action (relative to the
// login's path), with the page's CSRF token.
func (b *Browser) Submit(action string, form url.Values) (callback string, status int, err error) {
	m, a := csrfRE.FindStringSubmatch(b.Page), actionRE.FindStringSubmatch(b.Page)
	if m == nil || a == nil {
		return "", 0, errors.New("authtest: no form on the page")
	}
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", m[1])
	u, _ := url.Parse(b.URL)
	return b.post(u.Scheme+"://"+u.Host+a[1]+"/"+action, form)
}

func (b *Browser) post(u string, form url.Values) (string, int, error) {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// Passwordless runs an email login: the email, then the code that code
// returns for it (read from a mailbox or a log), and returns the app
// callback URL.
func (b *Browser) Passwordless(loginURL, email string, code func(email string) string) (string, error) {
	if cb, st, err := b.Start(loginURL); err != nil || cb != "" || st != http.StatusOK {
		return cb, fmt.Errorf("authtest: start: %d %v", st, err)
	}
	if !strings.Contains(b.Page, `id="code"`) {
		if cb, _, err := b.Submit("email", url.Values{"email": {email}}); err != nil || cb != "" {
			return cb, fmt.Errorf("authtest: email step: %v", err)
		}
	}
	if !strings.Contains(b.Page, `id="code"`) {
		return "", errors.New("authtest: no code page")
	}
	cb, st, err := b.Submit("code", url.Values{"code": {code(email)}})
	if err == nil && cb == "" {
		err = fmt.Errorf("authtest: not sent back to the app (%d)", st)
	}
	return cb, err
}

// FollowCallback does what a browser does with the SDK's loopback
// redirect: it loads the callback page (without the fragment, which
// browsers never send) and, as the page's script does, posts the full URL
// back to it.
func FollowCallback(ctx context.Context, hc *http.Client, callback string) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	page, _, _ := strings.Cut(callback, "#")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "location.href") {
		return fmt.Errorf("authtest: callback page: %s", resp.Status)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, page, strings.NewReader(callback))
	req.Header.Set("Content-Type", "text/plain")
	resp, err = hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
