package authd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/login"
	"github.com/porticohq/portico/authd/mailer"
)

// LoginFile is the login config file (portico auth serve --login-config):
// the sign-in providers of the login pages and their base URLs. Its zero
// value is the default: the passwordless provider on, no OIDC provider or
// JWT verifier, the base URLs derived from the public URL.
type LoginFile struct {
	// BaseURLs override the pages' base URL per build environment; the
	// default is the public URL for production and the public URL plus
	// "/staging" and "/testing".
	BaseURLs map[authwire.BuildEnv]string `json:"baseUrls,omitempty"`
	// Passwordless turns the email passwordless provider on or off. nil
	// means on when codes can be delivered: by SMTP, or logged in the
	// dev-only mode (Config.DevLogCodes); true without either is an error.
	Passwordless *bool `json:"passwordless,omitempty"`
	// SMTP is the server the passwordless codes are mailed through.
	SMTP *mailer.SMTPConfig `json:"smtp,omitempty"`
	// OIDC are the OpenID Connect providers.
	OIDC []login.OIDCProvider `json:"oidc,omitempty"`
	// Verifiers are the custom JWT verifiers.
	Verifiers []idtoken.Config `json:"verifiers,omitempty"`
}

// passwordless reports whether the passwordless provider is on, given
// whether codes are logged (dev only); an error if it is asked for and
// codes cannot be delivered.
func (f LoginFile) passwordless(devLogCodes bool) (bool, error) {
	deliverable := f.SMTP != nil || devLogCodes
	switch {
	case f.Passwordless == nil:
		return deliverable, nil
	case *f.Passwordless && !deliverable:
		return false, &ConfigError{Field: "Login.passwordless", Reason: "needs smtp in the login config (or, for development only, codes written to the log)"}
	}
	return *f.Passwordless, nil
}

// LoadLoginFile reads a login config file strictly (an unknown field is an
// error), with ${NAME} replaced by the environment variable NAME. An empty
// path gives the zero LoginFile.
func LoadLoginFile(path string) (LoginFile, error) {
	var f LoginFile
	if path == "" {
		return f, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(os.Expand(string(b), os.Getenv))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("login config %s: %w", path, err)
	}
	return f, nil
}
