package login

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/mail"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/authd/idtoken"
)

// PasswordlessVerifier is the verifier name of email passwordless logins,
// and PasswordlessAudience the aud of the tokens the pages mint for them.
const (
	PasswordlessVerifier = "portico-passwordless"
	PasswordlessAudience = "portico-login"
)

// Defaults of Passwordless.
const (
	DefaultCodeTTL     = 10 * time.Minute
	DefaultMaxAttempts = 5
)

// Mailer sends one-time codes by email.
type Mailer interface {
	// SendCode mails code to the address, in the login's language.
	SendCode(ctx context.Context, to, code string, lang authwire.Language) error
}

// Passwordless is the embedded email passwordless provider: a 6-digit
// code is mailed (Mailer), or in the dev-only mode written to the server
// log (DevLogCodes). Once the code is right, the pages mint an id token
// for the email address, signed by a key made at start; the key nodes
// check it against VerifierConfig's inline JWK set like any custom JWT.
// So the login server can obtain the network key of any email user: it
// is trusted with every passwordless account (docs/auth-keys.md).
type Passwordless struct {
	// Issuer is the iss of the minted tokens.
	Issuer string
	// CodeTTL is how long a code is valid (DefaultCodeTTL if zero).
	CodeTTL time.Duration
	// MaxAttempts is how many wrong codes end the login
	// (DefaultMaxAttempts if zero).
	MaxAttempts int
	// Mailer sends the codes. Without one, codes are only written to the
	// log, and only when DevLogCodes is set.
	Mailer Mailer
	// DevLogCodes writes codes to the log at WARN, marked DEV ONLY,
	// instead of mailing them: whoever reads the log can sign in as
	// anyone. Development only.
	DevLogCodes bool

	key *ecdsa.PrivateKey
	kid string
}

// NewPasswordless makes the provider with a fresh signing key. Keys do not
// depend on it (a user's key is bound to the verifier and the email), so
// a restart with a new key changes nothing for users.
func NewPasswordless(issuer string) (*Passwordless, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &Passwordless{Issuer: issuer, key: k, kid: "pl-" + randomHex(4)}, nil
}

func (p *Passwordless) codeTTL() time.Duration {
	if p.CodeTTL > 0 {
		return p.CodeTTL
	}
	return DefaultCodeTTL
}

func (p *Passwordless) maxAttempts() int {
	if p.MaxAttempts > 0 {
		return p.MaxAttempts
	}
	return DefaultMaxAttempts
}

// deliver sends a code to email: with the Mailer, or, in the dev-only
// mode, by writing it to the log at WARN.
func (p *Passwordless) deliver(ctx context.Context, log *slog.Logger, email, code string, lang authwire.Language, login string) error {
	if p.Mailer != nil {
		return p.Mailer.SendCode(ctx, email, code, lang)
	}
	if p.DevLogCodes {
		log.Warn("DEV ONLY: passwordless code for "+email+": "+code, "devOnly", true, "login", login)
		return nil
	}
	return errors.New("passwordless: no mailer and codes are not logged")
}

// JWKS is the public key set of the minted tokens.
func (p *Passwordless) JWKS() []byte {
	b, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &p.key.PublicKey, KeyID: p.kid, Algorithm: "ES256", Use: "sig"}}})
	return b
}

// VerifierConfig is the verifier the key nodes check the minted tokens
// with: the email is the verifier id, case-insensitive.
func (p *Passwordless) VerifierConfig() idtoken.Config {
	f := false
	return idtoken.Config{Verifier: PasswordlessVerifier, TypeOfLogin: "passwordless", JWKS: p.JWKS(), Issuer: p.Issuer,
		Audience: []string{PasswordlessAudience}, VerifierIDField: "email", IsVerifierIDCaseSensitive: &f, Algorithms: []string{"ES256"}}
}

// mint signs an id token for email, valid for five minutes.
func (p *Passwordless) mint(email string, now time.Time) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: p.key, KeyID: p.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", err
	}
	claims, _ := json.Marshal(map[string]any{
		"iss": p.Issuer, "aud": PasswordlessAudience, "sub": email, "email": email, "email_verified": true,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": randomHex(12),
	})
	jws, err := signer.Sign(claims)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// normalizeEmail checks an address and lower-cases it.
func normalizeEmail(s string) (string, bool) {
	s = strings.TrimSpace(s)
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 || !strings.Contains(s, "@") {
		return "", false
	}
	return strings.ToLower(s), true
}

// newCode makes a 6-digit code for an email address.
func newCode(email, salt string, now time.Time, ttl time.Duration) (otp, string) {
	n, _ := rand.Int(rand.Reader, big.NewInt(1_000_000))
	code := fmt.Sprintf("%06d", n.Int64())
	return otp{Email: email, Hash: codeHash(salt, code), Expires: now.Add(ttl)}, code
}

func codeHash(salt, code string) [32]byte { return sha256.Sum256([]byte(salt + "|" + code)) }

// check compares a submitted code. A wrong code counts as an attempt
// (wrong); end says the login's attempts are used up.
func (o *otp) check(salt, code string, now time.Time, max int) (ok bool, notice string, wrong, end bool) {
	if o.Email == "" {
		return false, "wrong_code", false, false
	}
	if now.After(o.Expires) {
		return false, "code_expired", false, false
	}
	h := codeHash(salt, strings.TrimSpace(code))
	if subtle.ConstantTimeCompare(h[:], o.Hash[:]) == 1 {
		return true, "", false, false
	}
	o.Attempts++
	if o.Attempts >= max {
		return false, "", true, true
	}
	return false, "wrong_code", true, false
}
