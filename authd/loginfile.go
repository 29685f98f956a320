package authd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/login"
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
	// Passwordless turns the dev-only email passwordless provider on or
	// off; nil means on.
	Passwordless *bool `json:"passwordless,omitempty"`
	// OIDC are the OpenID Connect providers.
	OIDC []login.OIDCProvider `json:"oidc,omitempty"`
	// Verifiers are the custom JWT verifiers.
	Verifiers []idtoken.Config `json:"verifiers,omitempty"`
}

// passwordless reports whether the passwordless provider is on.
func (f LoginFile) passwordless() bool { return f.Passwordless == nil || *f.Passwordless }

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
