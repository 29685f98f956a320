package login

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/authd/idtoken"
)

func constantEqual(a, b string) bool {
	return len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// sendCode makes a one-time code for email and delivers it, within the
// limits: none while wrong codes lock the address for this client IP (or
// for everyone, past the ceiling), at most CodesPerEmail per address and
// client IP, CodesCeiling per address and CodesPerClient per client IP an
// hour. It returns the notice to show when it sends nothing. A new code
// keeps the login's count of wrong codes.
func (h *Handler) sendCode(ctx context.Context, f *flow, o *otp, email string) string {
	switch {
	case h.lim.codeLocked(email, f.client):
		return "code_locked"
	case !h.lim.codeSendable(email, f.client):
		return "too_many_codes"
	}
	attempts := o.Attempts
	var code string
	*o, code = newCode(email, f.ID, h.cfg.Now(), h.cfg.Passwordless.codeTTL())
	o.Attempts = attempts
	if err := h.cfg.Passwordless.deliver(ctx, h.log, email, code, f.Lang, f.ID[:8]); err != nil {
		h.log.Error("login: cannot send the code", "login", f.ID[:8], "err", err)
		*o = otp{Attempts: attempts}
		return "send_failed"
	}
	return ""
}

// checkCode checks a code against the login's and the address's limits:
// an address locked for the login's client IP is refused without looking
// at the code; a wrong code counts for the address and client IP
// (backoff), towards the address's ceiling, and for the login (which ends
// after MaxAttempts); the right one clears the address and client IP's
// count.
func (h *Handler) checkCode(w http.ResponseWriter, r *http.Request, f *flow, o *otp) bool {
	if h.lim.codeLocked(o.Email, f.client) {
		f.Notice = "code_locked"
		h.show(w, r, f)
		return false
	}
	ok, notice, wrong, end := o.check(f.ID, r.PostForm.Get("code"), h.cfg.Now(), h.cfg.Passwordless.maxAttempts())
	if wrong {
		if h.lim.codeFailed(o.Email, f.client) && !end {
			notice = "code_locked"
		}
	}
	if end {
		h.failFlow(w, r, f, fail(CodeTooManyAttempts, errors.New("too many wrong codes")))
		return false
	}
	if !ok {
		f.Notice = notice
		h.show(w, r, f)
		return false
	}
	h.lim.codeFails.Reset(emailClient(o.Email, f.client))
	return true
}

// postEmail takes the email address and sends a code.
func (h *Handler) postEmail(w http.ResponseWriter, r *http.Request, f *flow) {
	email, ok := normalizeEmail(r.PostForm.Get("email"))
	if !ok {
		f.Step, f.Notice = stepEmail, "bad_email"
		h.show(w, r, f)
		return
	}
	if notice := h.sendCode(r.Context(), f, &f.Code, email); notice != "" {
		f.Notice = notice
		h.show(w, r, f)
		return
	}
	f.Step = stepCode
	http.Redirect(w, r, f.pageURL(), http.StatusSeeOther)
}

// postCode checks the code; the right one signs the user in with a token
// minted for the email address.
func (h *Handler) postCode(w http.ResponseWriter, r *http.Request, f *flow) {
	if !h.checkCode(w, r, f, &f.Code) {
		return
	}
	email := f.Code.Email
	f.Code = otp{}
	token, err := h.cfg.Passwordless.mint(email, h.cfg.Now())
	if err != nil {
		h.failFlow(w, r, f, fail(CodeInternal, err))
		return
	}
	id, err := h.verify(r.Context(), PasswordlessVerifier, token)
	if err != nil {
		h.failFlow(w, r, f, err)
		return
	}
	id.TypeOfLogin = string(authwire.TypePasswordless)
	f.Identity = id
	h.afterIdentity(w, r, f)
}

// verify checks a token for a verifier, as each key node will.
func (h *Handler) verify(ctx context.Context, verifier, token string) (*identity, error) {
	got, err := h.verifiers.Verify(ctx, verifier, token)
	if err != nil {
		var te *idtoken.TokenError
		if errors.As(err, &te) && errors.Is(err, idtoken.ErrUnknownVerifier) {
			return nil, fail(CodeProviderUnavailable, err)
		}
		return nil, fail(CodeTokenRefused, err)
	}
	nonce, _ := got.Claims["nonce"].(string)
	return &identity{Verifier: verifier, VerifierID: got.VerifierID, IDToken: token, Name: got.Name, Email: got.Email, Picture: got.Picture, nonce: nonce}, nil
}

// jwtLogin is a custom JWT login: the app got the token from its own
// identity system and passes it in extraLoginOptions.id_token; the
// verifier is the loginConfig entry's.
func (h *Handler) jwtLogin(w http.ResponseWriter, r *http.Request, f *flow, lc authwire.LoginConfig) {
	xo := f.Payload.Params.ExtraLoginOptions
	if xo == nil || xo.IDToken == "" {
		h.failFlow(w, r, f, fail(CodeBadRequest, errors.New("a jwt login needs extraLoginOptions.id_token")))
		return
	}
	verifier := lc.Verifier
	if verifier == "" {
		if len(h.cfg.Verifiers) != 1 {
			h.failFlow(w, r, f, fail(CodeProviderUnavailable, errors.New("a jwt login needs loginConfig.jwt.verifier")))
			return
		}
		verifier = h.cfg.Verifiers[0].Verifier
	}
	if !h.isJWTVerifier(verifier) {
		h.failFlow(w, r, f, fail(CodeProviderUnavailable, fmt.Errorf("verifier %q is not a configured custom JWT verifier", verifier)))
		return
	}
	if err := h.checkJWTOptions(verifier, xo); err != nil {
		h.failFlow(w, r, f, fail(CodeBadRequest, err))
		return
	}
	id, err := h.verify(r.Context(), verifier, xo.IDToken)
	if err != nil {
		h.failFlow(w, r, f, err)
		return
	}
	id.TypeOfLogin = string(authwire.TypeJWT)
	f.Identity = id
	h.afterIdentity(w, r, f)
}

func (h *Handler) isJWTVerifier(name string) bool {
	_, ok := h.jwtVerifier(name)
	return ok
}

func (h *Handler) jwtVerifier(name string) (idtoken.Config, bool) {
	for _, v := range h.cfg.Verifiers {
		if v.Verifier == name {
			return v, true
		}
	}
	return idtoken.Config{}, false
}

// checkJWTOptions refuses a login whose extraLoginOptions ask for token
// checks other than the verifier's: the verifier's config is what every
// key node applies, so a client cannot choose its own id claim or leeway.
func (h *Handler) checkJWTOptions(verifier string, xo *authwire.ExtraLoginOptions) error {
	v, _ := h.jwtVerifier(verifier)
	field := v.VerifierIDField
	if field == "" {
		field = "sub"
	}
	if xo.VerifierIDField != "" && xo.VerifierIDField != field {
		return fmt.Errorf("extraLoginOptions.verifierIdField %q differs from the verifier's %q", xo.VerifierIDField, field)
	}
	sensitive := v.IsVerifierIDCaseSensitive == nil || *v.IsVerifierIDCaseSensitive
	if xo.IsVerifierIDCaseSensitive != nil && *xo.IsVerifierIDCaseSensitive != sensitive {
		return fmt.Errorf("extraLoginOptions.isVerifierIdCaseSensitive %v differs from the verifier's %v", *xo.IsVerifierIDCaseSensitive, sensitive)
	}
	if xo.Leeway != nil && *xo.Leeway > v.Leeway {
		return fmt.Errorf("extraLoginOptions.leeway %d is more than the verifier's %d", *xo.Leeway, v.Leeway)
	}
	return nil
}

// userName is the name shown in userInfo: the token's name, else the
// email's local part, else the verifier id.
func (id *identity) userName() string {
	switch {
	case id.Name != "":
		return id.Name
	case id.Email != "":
		local, _, _ := strings.Cut(id.Email, "@")
		return local
	}
	return id.VerifierID
}
