package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/porticohq/portico/auth/eccrypto"
)

// PendingLogin is a login whose URL has been made but whose callback has
// not arrived yet: the two-step API for servers.
type PendingLogin struct {
	// URL is the login pages' URL to send the user to.
	URL string
	// RedirectURL is where the pages will send the user back to.
	RedirectURL string
	// Expires is when the loginId record expires.
	Expires time.Time

	sdk     *SDK
	loginID string

	mu   sync.Mutex
	done bool
}

// Complete finishes the login from the callback URL the user was
// redirected to, then deletes the loginId record. After Expires it
// returns ErrLoginExpired; once it has succeeded, ErrLoginCompleted.
func (p *PendingLogin) Complete(ctx context.Context, callbackURL string) (*State, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return nil, ErrLoginCompleted
	}
	if p.sdk.now().After(p.Expires) {
		return nil, ErrLoginExpired
	}
	st, err := p.sdk.CompleteLogin(ctx, callbackURL)
	if err != nil {
		return nil, err
	}
	p.done = true
	if key, err := eccrypto.ParsePrivateKeyHex(p.loginID); err == nil {
		if err := p.sdk.sessions.Invalidate(ctx, key); err != nil {
			p.sdk.log.Warn("auth: cannot delete the loginId record", "err", err)
		}
	}
	return st, nil
}

// LoginURL starts a login without a browser or listener: it stores the
// login payload on the session server under a fresh loginId and returns
// the URL to send the user to. params.RedirectURL defaults to
// InitParams.RedirectURL; one of them is required.
func (s *SDK) LoginURL(ctx context.Context, params LoginParams) (*PendingLogin, error) {
	if params.RedirectURL == "" {
		params.RedirectURL = s.params.RedirectURL
	}
	if params.RedirectURL == "" {
		return nil, &FieldError{Field: "redirectUrl", Reason: "is required for LoginURL (in the login or the init params)"}
	}
	return s.startLogin(ctx, params)
}

func (s *SDK) startLogin(ctx context.Context, params LoginParams) (*PendingLogin, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if params.Curve == "" {
		params.Curve = SECP256K1
	}
	if params.DappShare == "" {
		params.DappShare = s.savedDappShare()
	}
	opts := s.params
	if opts.BuildEnv == "" {
		opts.BuildEnv = Production
	}
	opts.SDKURL = s.endpoints.SDKURL
	opts.SessionTime = s.params.EffectiveSessionTime()
	payload, err := json.Marshal(LoginPayload{Options: opts, Params: params, ActionType: "login"})
	if err != nil {
		return nil, fmt.Errorf("auth: encode login payload: %w", err)
	}
	loginKey, err := eccrypto.GenerateKey()
	if err != nil {
		return nil, err
	}
	timeout := int(s.loginTimeout / time.Second)
	if timeout < 1 {
		timeout = 1
	}
	if err := s.sessions.Set(ctx, loginKey, payload, timeout); err != nil {
		return nil, fmt.Errorf("auth: store the login: %w", err)
	}
	loginID := eccrypto.PrivateKeyHex(loginKey)
	b64, _ := json.Marshal(map[string]string{"loginId": loginID})
	return &PendingLogin{
		URL:         s.endpoints.SDKURL + "/start#b64Params=" + base64.RawURLEncoding.EncodeToString(b64),
		RedirectURL: params.RedirectURL,
		Expires:     s.now().Add(time.Duration(timeout) * time.Second),
		sdk:         s,
		loginID:     loginID,
	}, nil
}

// CompleteLogin finishes a login from the URL the pages redirected to
// (either callback form, see ParseCallbackURL): it fetches and decrypts
// the session, and only then saves the session id (and the user's dapp
// share) and sets the state.
func (s *SDK) CompleteLogin(ctx context.Context, callbackURL string) (*State, error) {
	cb, err := ParseCallbackURL(callbackURL)
	if err != nil {
		return nil, err
	}
	st, err := s.fetchSession(ctx, cb.SessionID)
	if err != nil {
		return nil, err
	}
	if err := s.storage.Set(storageSessionID, st.SessionID); err != nil {
		return nil, err
	}
	if err := s.saveDappShare(st.UserInfo); err != nil {
		s.log.Warn("auth: cannot save the dapp share", "err", err)
	}
	s.mu.Lock()
	s.state = st
	s.mu.Unlock()
	return cloneState(st), nil
}

// Login runs a whole login: it stores the login payload, opens the login
// pages in the browser, waits for the redirect on a loopback listener
// (whose page posts the URL fragment back, since fragments never reach a
// server), then fetches the session. It ends with ctx or after the login
// timeout (ErrLoginTimeout). The saved session is replaced only when the
// login succeeds.
func (s *SDK) Login(ctx context.Context, params LoginParams) (*State, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, s.loginTimeout, ErrLoginTimeout)
	defer cancel()

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.callbackAddr)
	if err != nil {
		return nil, fmt.Errorf("auth: loopback listener: %w", err)
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	path := "/callback/" + hex.EncodeToString(nonce[:])
	results := make(chan string, 1)
	srv := &http.Server{Handler: callbackHandler(path, results), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
	}()

	params.RedirectURL = "http://" + ln.Addr().String() + path
	pending, err := s.startLogin(ctx, params)
	if err != nil {
		return nil, err
	}
	if err := s.openBrowser(pending.URL); err != nil {
		return nil, fmt.Errorf("auth: open the browser (visit %s): %w", pending.URL, err)
	}
	select {
	case href := <-results:
		return pending.Complete(ctx, href)
	case <-ctx.Done():
		if err := context.Cause(ctx); errors.Is(err, ErrLoginTimeout) {
			return nil, ErrLoginTimeout
		}
		return nil, ctx.Err()
	}
}

// callbackScript runs in the redirect page: it posts the whole URL,
// fragment included, back to the listener and then drops the fragment from
// the address bar.
const callbackScript = `fetch(location.pathname,{method:"POST",headers:{"Content-Type":"text/plain"},body:location.href})` +
	`.then(function(r){return r.text()}).then(function(t){document.getElementById("m").textContent=t;history.replaceState(null,"",location.pathname)})` +
	`.catch(function(e){document.getElementById("m").textContent="Could not reach the app: "+e})`

// callbackHandler serves the redirect page at path and takes the posted URL.
func callbackHandler(path string, results chan<- string) http.Handler {
	sum := sha256.Sum256([]byte(callbackScript))
	csp := "default-src 'none'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; connect-src 'self'"
	page := `<!doctype html><html><head><meta charset="utf-8"><title>Login</title></head>` +
		`<body><p id="m">Finishing login…</p><script>` + callbackScript + `</script></body></html>`
	mux := http.NewServeMux()
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Security-Policy", csp)
			_, _ = io.WriteString(w, page)
		case http.MethodPost:
			body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
			if err != nil || !strings.HasPrefix(string(body), "http://") {
				http.Error(w, "bad callback", http.StatusBadRequest)
				return
			}
			select {
			case results <- string(body):
				_, _ = io.WriteString(w, "Login complete. You can close this window.")
			default:
				http.Error(w, "This login has already completed.", http.StatusConflict)
			}
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	})
	return mux
}
