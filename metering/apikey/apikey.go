// Package apikey handles the API keys that clients put in the URL path: their
// format, their generation, their hashed form, and a fixed set of keys from
// config. Keys are never stored or compared in plain text; a set holds SHA-256
// digests and compares them in constant time.
package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/porticohq/portico"
)

// Length bounds of a key. Generated keys are 32 hex characters, the form
// hosted providers use; longer keys are accepted so operators can import
// keys from elsewhere.
const (
	MinLength = 32
	MaxLength = 64
)

// Hash is the SHA-256 digest of a key, the only form in which keys are kept.
type Hash [sha256.Size]byte

// String returns the digest in hex, the form used in config files.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Sum hashes a key.
func Sum(key string) Hash { return sha256.Sum256([]byte(key)) }

// ParseHash reads a digest written by Hash.String.
func ParseHash(s string) (Hash, error) {
	var h Hash
	b, err := hex.DecodeString(strings.TrimPrefix(s, "sha256:"))
	if err != nil || len(b) != len(h) {
		return h, fmt.Errorf("apikey: hash must be %d hex characters", 2*len(h))
	}
	copy(h[:], b)
	return h, nil
}

// Valid reports whether s has the form of a key: MinLength to MaxLength
// characters from [0-9A-Za-z_-]. It looks at the form only.
func Valid(s string) bool {
	if len(s) < MinLength || len(s) > MaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Generate returns a new random key of 32 hex characters (128 bits).
func Generate() string {
	var b [16]byte
	// crypto/rand.Read never fails on supported platforms.
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Check validates the form of key and returns portico.ErrKeyMissing or
// portico.ErrKeyMalformed when it cannot be a key.
func Check(key string) error {
	if key == "" {
		return portico.ErrKeyMissing
	}
	if !Valid(key) {
		return portico.ErrKeyMalformed
	}
	return nil
}

// Identity is what the gateway knows about the holder of an accepted key.
// It never holds the key itself.
type Identity struct {
	// Name is the key's label, safe to log.
	Name string
	// ID is the key's id in the key store; 0 for keys outside it.
	ID int64
	// DailyCredits is the balance granted each UTC day.
	DailyCredits int64
	// RatePerSecond bounds the credits spent per second; 0 means no bound.
	RatePerSecond int64
	// Methods, Networks and Origins restrict the key; empty means no
	// restriction.
	Methods, Networks, Origins []string
	// Rules are the key's own settings beyond these (secret, JWT, more
	// allowlists, bounds on calls); nil for a key that has none.
	Rules *Rules
	// Version tells identities of one key apart cheaply: two with the
	// same Version (not 0) carry the same settings, so an open WebSocket
	// that checks its key on every message re-derives nothing while it is
	// unchanged. An authenticator that reads keys from a store gives each
	// identity it reads a new one; 0 means none is known, and the
	// settings are looked at every time.
	Version uint64
}

// Entry is one key of a Set, held as its digest.
type Entry struct {
	Name string
	Hash Hash
}

// Set is a fixed list of keys, such as the keys in a config file.
type Set struct {
	entries map[Hash]Entry
}

// NewSet builds a set from entries. Later entries with the same digest
// replace earlier ones.
func NewSet(entries ...Entry) *Set {
	s := &Set{entries: make(map[Hash]Entry, len(entries))}
	for _, e := range entries {
		s.entries[e.Hash] = e
	}
	return s
}

// Len returns the number of keys in the set.
func (s *Set) Len() int { return len(s.entries) }

// Authenticate checks key and returns the identity it belongs to. Errors are
// portico.ErrKeyMissing, portico.ErrKeyMalformed and portico.ErrKeyUnknown.
//
// The map lookup is keyed by the digest, so its timing says nothing about
// the key; the final comparison is constant-time as well, so that no code
// path compares key material with ==.
func (s *Set) Authenticate(_ context.Context, key string) (Identity, error) {
	if err := Check(key); err != nil {
		return Identity{}, err
	}
	h := Sum(key)
	e, ok := s.entries[h]
	if !ok || subtle.ConstantTimeCompare(e.Hash[:], h[:]) != 1 {
		return Identity{}, portico.ErrKeyUnknown
	}
	return Identity{Name: e.Name}, nil
}
