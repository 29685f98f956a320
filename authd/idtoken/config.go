package idtoken

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// AllowedAlgorithms returns the only signature algorithms ever accepted,
// all asymmetric. A Config may narrow them with Algorithms.
func AllowedAlgorithms() []string {
	return []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
}

// MaxTokenBytes bounds the size of a token; longer ones are refused unread.
const MaxTokenBytes = 16 << 10

// MaxLeeway bounds Config.Leeway.
const MaxLeeway = 3600

// Config is one verifier, as in a loginConfig entry plus what the server
// needs to check tokens. Exactly one of DiscoveryURL (OpenID Connect) or
// the custom JWT keys (JWKSURL, JWKS, PEM) is set.
type Config struct {
	// Verifier is the verifier name tokens are checked for (loginConfig's
	// "verifier").
	Verifier string `json:"verifier"`
	// TypeOfLogin is the loginConfig typeOfLogin ("jwt", "google", ...).
	// It is informational: the keys or DiscoveryURL choose how to verify.
	TypeOfLogin string `json:"typeOfLogin,omitempty"`

	// JWKSURL is where the custom JWT verifier fetches its JWK set.
	JWKSURL string `json:"jwksUrl,omitempty"`
	// JWKS is an inline JWK set ({"keys": [...]}).
	JWKS json.RawMessage `json:"jwks,omitempty"`
	// PEM holds inline public keys or certificates, PEM-encoded.
	PEM string `json:"pem,omitempty"`
	// Issuer is the required iss of a custom JWT. For OIDC, if set, it must
	// match the discovered issuer.
	Issuer string `json:"issuer,omitempty"`
	// Audience lists accepted aud values of a custom JWT; a token must name
	// at least one.
	Audience []string `json:"audience,omitempty"`

	// DiscoveryURL is an OpenID Connect issuer URL or its
	// /.well-known/openid-configuration URL.
	DiscoveryURL string `json:"discoveryUrl,omitempty"`
	// ClientID is the OIDC client id, the required aud of its ID tokens.
	ClientID string `json:"clientId,omitempty"`

	// Leeway is the clock skew allowed on exp, nbf and iat, in seconds.
	Leeway int `json:"leeway,omitempty"`
	// VerifierIDField is the claim holding the verifier id; "sub" if empty.
	VerifierIDField string `json:"verifierIdField,omitempty"`
	// IsVerifierIDCaseSensitive, when false, lower-cases the verifier id.
	// Unset means true.
	IsVerifierIDCaseSensitive *bool `json:"isVerifierIdCaseSensitive,omitempty"`
	// Algorithms narrows AllowedAlgorithms; empty means all of them.
	Algorithms []string `json:"algorithms,omitempty"`
}

// IsOIDC reports whether the entry is an OpenID Connect verifier.
func (c *Config) IsOIDC() bool { return c.DiscoveryURL != "" }

// idField returns the verifier id claim name.
func (c *Config) idField() string {
	if c.VerifierIDField == "" {
		return "sub"
	}
	return c.VerifierIDField
}

func (c *Config) caseSensitive() bool {
	return c.IsVerifierIDCaseSensitive == nil || *c.IsVerifierIDCaseSensitive
}

// algorithms returns the accepted algorithms.
func (c *Config) algorithms() []string {
	if len(c.Algorithms) == 0 {
		return AllowedAlgorithms()
	}
	return slices.Clone(c.Algorithms)
}

func (c *Config) bad(field, reason string) error {
	return &ConfigError{Verifier: c.Verifier, Field: field, Reason: reason}
}

func checkURL(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (p.Scheme == "https" || p.Scheme == "http") && p.Host != ""
}

// Validate checks the entry and names the first bad field.
func (c *Config) Validate() error {
	if c.Verifier == "" {
		return c.bad("verifier", "empty")
	}
	if c.Leeway < 0 || c.Leeway > MaxLeeway {
		return c.bad("leeway", "must be 0 to 3600 seconds")
	}
	for _, a := range c.Algorithms {
		if !slices.Contains(AllowedAlgorithms(), a) {
			return c.bad("algorithms", a+" is not an allowed asymmetric algorithm (allowed: "+strings.Join(AllowedAlgorithms(), ", ")+")")
		}
	}
	custom := c.JWKSURL != "" || len(c.JWKS) > 0 || c.PEM != ""
	switch {
	case c.IsOIDC() && custom:
		return c.bad("discoveryUrl", "set together with custom JWT keys (jwksUrl, jwks, pem): choose one")
	case c.IsOIDC():
		if !checkURL(c.DiscoveryURL) {
			return c.bad("discoveryUrl", "not an http(s) URL")
		}
		if c.ClientID == "" {
			return c.bad("clientId", "required for an OpenID Connect verifier (it is the token audience)")
		}
	case custom:
		if c.JWKSURL != "" && !checkURL(c.JWKSURL) {
			return c.bad("jwksUrl", "not an http(s) URL")
		}
		if c.Issuer == "" {
			return c.bad("issuer", "required")
		}
		if len(c.Audience) == 0 || slices.Contains(c.Audience, "") {
			return c.bad("audience", "at least one non-empty audience is required")
		}
	default:
		return c.bad("jwksUrl", "no keys: set jwksUrl, jwks or pem, or discoveryUrl for OpenID Connect")
	}
	return nil
}

// Options are what verifiers share: where they fetch keys and their clock.
type Options struct {
	// HTTPClient fetches JWK sets and discovery documents;
	// http.DefaultClient if nil.
	HTTPClient *http.Client
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// MinRefresh is the least time between two fetches of a JWK set caused
	// by unknown key ids (so that forged kids cannot make us hammer the
	// issuer); 30 s if zero.
	MinRefresh time.Duration
	// MaxKeyAge is how long a fetched JWK set is used before it is fetched
	// again; 1 h if zero.
	MaxKeyAge time.Duration
}

func (o Options) withDefaults() Options {
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MinRefresh == 0 {
		o.MinRefresh = 30 * time.Second
	}
	if o.MaxKeyAge == 0 {
		o.MaxKeyAge = time.Hour
	}
	return o
}
