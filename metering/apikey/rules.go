package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
	"time"

	"github.com/porticohq/portico"
)

// Rules are a key's own settings beyond its credits and its method,
// network and origin lists (issue 26, docs/keys.md): a secret, JWTs, more
// allowlists, bounds on calls. An Identity without any of them has nil
// Rules, and the gateway does no work for it.
type Rules struct {
	// Secrets are the digests a request's secret may match: the current
	// one and, during a rotation's grace period, the previous one.
	Secrets []SecretDigest
	// JWT, when set, requires a bearer token signed by one of its keys.
	JWT *JWT
	// Addresses allow only calls whose target contract is one of them
	// (lower-case 0x hex); empty allows every target.
	Addresses []string
	// UserAgents allow only requests whose User-Agent contains one of
	// them (case-insensitive); empty allows every User-Agent.
	UserAgents []string
	// MaxConcurrent bounds the key's calls in flight (per instance); 0 is
	// no bound.
	MaxConcurrent int
	// RequestsPerSecond bounds the key's calls per second (per instance),
	// apart from credits; 0 is no bound.
	RequestsPerSecond int
	// Logs, when set, overrides the network's bounds on log queries.
	Logs *portico.LogLimits
}

// SecretDigest is the digest of one accepted secret.
type SecretDigest struct {
	Hash Hash
	// Until ends a previous secret's grace period; zero for the current
	// secret, which has no end.
	Until time.Time
}

// SecretLength is the length of a generated secret: 32 random bytes in
// unpadded base64url.
const SecretLength = 43

// GenerateSecret returns a new random key secret (256 bits).
func GenerateSecret() string {
	var b [32]byte
	// crypto/rand.Read never fails on supported platforms.
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// SumSecret is the digest a secret is kept as. It is apart from Sum (a
// prefix) so that a secret's digest can never be mistaken for a key's.
// Secrets are 256 random bits, so one SHA-256 suffices; no slow hash is
// needed against guessing.
func SumSecret(secret string) Hash {
	const prefix = "portico key secret\x00"
	var buf [len(prefix) + 64]byte // a generated secret fits: no allocation
	return sha256.Sum256(append(append(buf[:0], prefix...), secret...))
}

// CheckSecret checks a request's secret against the key's digests at now:
// portico.ErrSecretMissing when there is none, ErrSecretWrong when it
// matches no digest in force. Every digest is compared, in constant time.
func (r *Rules) CheckSecret(secret string, now time.Time) error {
	if secret == "" {
		return portico.ErrSecretMissing
	}
	got := SumSecret(secret)
	ok := 0
	for _, d := range r.Secrets {
		match := subtle.ConstantTimeCompare(d.Hash[:], got[:])
		if !d.Until.IsZero() && now.After(d.Until) {
			match = 0
		}
		ok |= match
	}
	if ok != 1 {
		return portico.ErrSecretWrong
	}
	return nil
}

// UserAgentAllowed reports whether ua passes the User-Agent list: it
// contains one of the entries, ignoring case, or the list is empty.
func (r *Rules) UserAgentAllowed(ua string) bool {
	if len(r.UserAgents) == 0 {
		return true
	}
	for _, e := range r.UserAgents {
		if containsFold(ua, e) {
			return true
		}
	}
	return false
}

// containsFold reports whether sub is within s, ignoring case, without
// allocating.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// AddressAllowed reports whether a call's target address is on the
// list (hex compared without regard to case), or the list is empty.
func (r *Rules) AddressAllowed(addr string) bool {
	if len(r.Addresses) == 0 {
		return true
	}
	for _, a := range r.Addresses {
		if strings.EqualFold(a, addr) {
			return true
		}
	}
	return false
}

// Limited reports whether the key bounds its calls in flight or per
// second.
func (r *Rules) Limited() bool { return r.MaxConcurrent > 0 || r.RequestsPerSecond > 0 }

// ValidAddress reports whether s is a 20-byte 0x hex address.
func ValidAddress(s string) bool {
	if len(s) != 42 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return false
	}
	for i := 2; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
