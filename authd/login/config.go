package login

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd/clients"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/keynet"
	"github.com/porticohq/portico/authd/limit"
	"github.com/porticohq/portico/authd/tkey"
)

// Defaults of Config.
const (
	DefaultFlowTTL  = 10 * time.Minute
	DefaultMaxFlows = 10000
)

// Config is everything the pages need, passed in explicitly.
type Config struct {
	// BaseURLs are the pages' public base URLs (the sdkUrl an SDK is given)
	// per build environment; a login continues on the base URL of its
	// payload's buildEnv. Production is required; staging and testing
	// default to it plus "/staging" and "/testing". All must be distinct.
	BaseURLs map[authwire.BuildEnv]string
	// OIDC are the OpenID Connect providers (Google and others).
	OIDC []OIDCProvider
	// Verifiers are the custom JWT verifiers (typeOfLogin "jwt"): a login
	// with that verifier in its loginConfig sends its token in
	// extraLoginOptions.id_token.
	Verifiers []idtoken.Config
	// Passwordless, if set, enables email passwordless login (dev only:
	// the code is written to the log).
	Passwordless *Passwordless
	// Networks are the key network clients by network name (the
	// InitParams network value).
	Networks map[string]*keynet.Client
	// Sessions is the session server the SDK uses.
	Sessions *sessionapi.Client
	// Clients is the client registry: a login for a client id that is not
	// in it, or to a redirect URL not registered for it, is refused
	// (required; clients.AnyClient is the development mode that accepts
	// everything).
	Clients clients.Registry
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// HTTPClient talks to identity providers; a client with a 30 s
	// timeout if nil.
	HTTPClient *http.Client
	// FlowTTL is how long a login may take (DefaultFlowTTL if zero).
	FlowTTL time.Duration
	// MaxFlows bounds the logins in progress (DefaultMaxFlows if zero).
	MaxFlows int
	// SecureCookies sets the Secure attribute on the login cookie (use it
	// behind TLS).
	SecureCookies bool
	// Limits bound what a client IP, an email address and a user can do;
	// zero fields take the defaults.
	Limits Limits
	// Shared, if set, counts the limits' windows and failures across the
	// instances that share it (Redis, issue 37); FlowsPerClient and the
	// Argon2id runs stay per instance.
	Shared limit.Shared
	// ClientIPHeader, if set, is the header a reverse proxy puts the
	// client's address in; the limits key on it. Only behind such a proxy.
	ClientIPHeader string
	// PasswordKDF are the Argon2id parameters of new MFA password shares;
	// tkey.DefaultKDF() if zero.
	PasswordKDF tkey.KDF
}

// OIDCProvider is an OpenID Connect identity provider.
type OIDCProvider struct {
	// Name is the loginProvider value it serves ("google", "github", …).
	Name string `json:"name"`
	// Verifier is the verifier name the key nodes know it by; Name if
	// empty. A loginConfig entry for the provider may name it instead.
	Verifier string `json:"verifier,omitempty"`
	// DiscoveryURL is the issuer or its /.well-known/openid-configuration.
	DiscoveryURL string `json:"discoveryUrl"`
	// ClientID is the OAuth client's id.
	ClientID string `json:"clientId"`
	// ClientSecret is the OAuth client's secret.
	ClientSecret string `json:"clientSecret,omitempty"`
	// Scopes are asked for besides openid; "email profile" if empty.
	Scopes []string `json:"scopes,omitempty"`
	// VerifierIDField is the claim that is the user's id; "sub" if empty.
	VerifierIDField string `json:"verifierIdField,omitempty"`
	// IsVerifierIDCaseSensitive false lower-cases the id; unset means true.
	IsVerifierIDCaseSensitive *bool `json:"isVerifierIdCaseSensitive,omitempty"`
}

func (p OIDCProvider) verifier() string {
	if p.Verifier != "" {
		return p.Verifier
	}
	return p.Name
}

// VerifierConfig is the provider as a key node verifier.
func (p OIDCProvider) VerifierConfig() idtoken.Config {
	return idtoken.Config{Verifier: p.verifier(), TypeOfLogin: p.Name, DiscoveryURL: p.DiscoveryURL, ClientID: p.ClientID,
		VerifierIDField: p.VerifierIDField, IsVerifierIDCaseSensitive: p.IsVerifierIDCaseSensitive}
}

// VerifierConfigs are every verifier the pages use: the key nodes must be
// given the same list, since each node checks the token itself.
func (c *Config) VerifierConfigs() []idtoken.Config {
	var out []idtoken.Config
	for _, p := range c.OIDC {
		out = append(out, p.VerifierConfig())
	}
	out = append(out, c.Verifiers...)
	if c.Passwordless != nil {
		out = append(out, c.Passwordless.VerifierConfig())
	}
	return out
}

// ConfigError names a bad field of Config.
type ConfigError struct {
	// Field is the JSON path of the bad field ("baseUrls.staging", "oidc[0].clientId").
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *ConfigError) Error() string { return "login: config: " + e.Field + ": " + e.Reason }

// DefaultBaseURLs gives the three environments' base URLs under one
// origin: production at base, staging and testing below it.
func DefaultBaseURLs(base string) map[authwire.BuildEnv]string {
	base = strings.TrimRight(base, "/")
	return map[authwire.BuildEnv]string{authwire.Production: base, authwire.Staging: base + "/staging", authwire.Testing: base + "/testing"}
}

// withDefaults fills the zero fields and validates.
func (c Config) withDefaults() (Config, error) {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if c.FlowTTL == 0 {
		c.FlowTTL = DefaultFlowTTL
	}
	if c.MaxFlows == 0 {
		c.MaxFlows = DefaultMaxFlows
	}
	c.Limits = c.Limits.withDefaults()
	if c.PasswordKDF == (tkey.KDF{}) {
		c.PasswordKDF = tkey.DefaultKDF()
	}
	prod := c.BaseURLs[authwire.Production]
	if prod == "" {
		return c, &ConfigError{Field: "baseUrls.production", Reason: "required"}
	}
	urls := DefaultBaseURLs(prod)
	for env, u := range c.BaseURLs {
		if !env.Valid() || env == "" {
			return c, &ConfigError{Field: "baseUrls", Reason: fmt.Sprintf("unknown build environment %q", env)}
		}
		urls[env] = strings.TrimRight(u, "/")
	}
	seen := map[string]authwire.BuildEnv{}
	for _, env := range []authwire.BuildEnv{authwire.Production, authwire.Staging, authwire.Testing} {
		u, err := url.Parse(urls[env])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return c, &ConfigError{Field: "baseUrls." + string(env), Reason: "not an http(s) URL without query or fragment"}
		}
		if other, dup := seen[urls[env]]; dup {
			return c, &ConfigError{Field: "baseUrls." + string(env), Reason: "the same as baseUrls." + string(other) + " (each build environment needs its own URL)"}
		}
		seen[urls[env]] = env
	}
	c.BaseURLs = urls
	if c.Sessions == nil {
		return c, &ConfigError{Field: "sessions", Reason: "required"}
	}
	if c.Clients == nil {
		return c, &ConfigError{Field: "clients", Reason: "required (a client registry; clients.AnyClient only for development)"}
	}
	if len(c.Networks) == 0 {
		return c, &ConfigError{Field: "networks", Reason: "at least one key network client is required"}
	}
	names := map[string]bool{}
	for i, p := range c.OIDC {
		f := fmt.Sprintf("oidc[%d]", i)
		switch {
		case p.Name == "":
			return c, &ConfigError{Field: f + ".name", Reason: "required"}
		case p.ClientID == "":
			return c, &ConfigError{Field: f + ".clientId", Reason: "required"}
		case names[p.verifier()]:
			return c, &ConfigError{Field: f + ".verifier", Reason: fmt.Sprintf("%q configured twice", p.verifier())}
		}
		if u, err := url.Parse(p.DiscoveryURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, &ConfigError{Field: f + ".discoveryUrl", Reason: "not an http(s) URL"}
		}
		names[p.verifier()] = true
	}
	for i, v := range c.Verifiers {
		if err := v.Validate(); err != nil {
			return c, &ConfigError{Field: fmt.Sprintf("verifiers[%d]", i), Reason: err.Error()}
		}
		if names[v.Verifier] {
			return c, &ConfigError{Field: fmt.Sprintf("verifiers[%d].verifier", i), Reason: fmt.Sprintf("%q configured twice", v.Verifier)}
		}
		names[v.Verifier] = true
	}
	return c, nil
}
