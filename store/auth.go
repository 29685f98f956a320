package store

import (
	"context"
	"crypto/subtle"
	"errors"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// Authenticator checks API keys against the store. Accepted keys are
// cached for a short time (so a revoke or a new balance takes effect
// within that time); unknown keys are looked up every time, so a key made
// by `portico keys create` works at once.
type Authenticator struct {
	store *Store
	cache *otter.Cache[apikey.Hash, apikey.Identity]
	// versions numbers the identities read from the store
	// (apikey.Identity.Version): one read, one version.
	versions atomic.Uint64
}

// NewAuthenticator returns an authenticator over s; ttl bounds how long an
// accepted key's settings are cached (0 means 5s).
func NewAuthenticator(s *Store, ttl time.Duration) *Authenticator {
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	return &Authenticator{store: s, cache: otter.Must(&otter.Options[apikey.Hash, apikey.Identity]{
		MaximumSize:      100_000,
		ExpiryCalculator: otter.ExpiryWriting[apikey.Hash, apikey.Identity](ttl),
	})}
}

// Authenticate checks key and returns who holds it. Errors are
// portico.ErrKeyMissing, ErrKeyMalformed and ErrKeyUnknown, or a store
// error.
//
// The lookup is by digest, so its timing tells nothing about the key; the
// digest found is compared with the key's in constant time.
func (a *Authenticator) Authenticate(ctx context.Context, key string) (apikey.Identity, error) {
	if err := apikey.Check(key); err != nil {
		return apikey.Identity{}, err
	}
	h := apikey.Sum(key)
	if id, ok := a.cache.GetIfPresent(h); ok {
		return id, nil
	}
	k, err := a.store.ByHash(ctx, h)
	if errors.Is(err, ErrNotFound) || (err == nil && (!k.Active() || subtle.ConstantTimeCompare(k.Hash[:], h[:]) != 1)) {
		return apikey.Identity{}, portico.ErrKeyUnknown
	}
	if err != nil {
		return apikey.Identity{}, err
	}
	id := Identity(k)
	id.Version = a.versions.Add(1)
	a.cache.Set(h, id)
	return id, nil
}

// Identity is what the gateway needs to know of a key.
func Identity(k Key) apikey.Identity {
	return apikey.Identity{
		Name: k.Name, ID: k.ID, DailyCredits: k.DailyCredits, RatePerSecond: k.RatePerSecond,
		Methods: k.AllowMethods, Networks: k.AllowNetworks, Origins: k.AllowOrigins,
		Rules: identityRules(k),
	}
}
