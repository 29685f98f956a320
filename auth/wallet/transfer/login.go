package transfer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"

	"github.com/porticohq/portico/auth"
)

// The login pages' forms, which work without script (docs/auth.md).
var (
	walletCSRF = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	walletForm = regexp.MustCompile(`action="(/login/[0-9a-f]+)/email"`)
)

// walletRedirect is where the pages send the user back: a loopback
// callback the dev client accepts; nothing listens there, the URL is
// handed to the SDK.
const walletRedirect = "http://127.0.0.1:1/callback/portico-wallet"

// TerminalLogin fills the login pages' email and code forms, as a
// browser without script would, asking for the code mailed to email on
// out and reading it from in; then it completes the login with the SDK.
func TerminalLogin(ctx context.Context, sdk *auth.SDK, params auth.LoginParams, email string, in io.Reader, out io.Writer) (*auth.State, error) {
	params.RedirectURL = walletRedirect
	pending, err := sdk.LoginURL(ctx, params)
	if err != nil {
		return nil, err
	}
	page, frag, _ := strings.Cut(pending.URL, "#")
	q, _ := url.ParseQuery(frag)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), walletRedirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	post := func(u string, form url.Values) (*http.Response, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
		if err != nil {
			return nil, "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := hc.Do(req)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp, string(b), err
	}
	_, body, err := post(page, url.Values{"b64Params": {q.Get("b64Params")}})
	if err != nil {
		return nil, err
	}
	csrf, form := walletCSRF.FindStringSubmatch(body), walletForm.FindStringSubmatch(body)
	if csrf == nil || form == nil {
		return nil, errors.New("the login pages offer no email login (is passwordless on?)")
	}
	base := strings.TrimSuffix(page, "/start")
	if _, _, err := post(base+form[1]+"/email", url.Values{"csrf": {csrf[1]}, "email": {email}}); err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "a login code was sent to %s (the dev setup prints it in portico's log); code: ", email)
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return nil, fmt.Errorf("reading the code: %w", err)
	}
	resp, body, err := post(base+form[1]+"/code", url.Values{"csrf": {csrf[1]}, "code": {strings.TrimSpace(line)}})
	if err != nil {
		return nil, err
	}
	cb := resp.Header.Get("Location")
	if !strings.HasPrefix(cb, walletRedirect+"#") {
		return nil, fmt.Errorf("the login pages did not log in (%s): %.200s", resp.Status, body)
	}
	return pending.Complete(ctx, cb)
}
