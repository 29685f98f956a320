package idtoken

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// MinRSABits is the smallest RSA modulus accepted.
const MinRSABits = 2048

// maxJWKSBytes bounds a fetched JWK set.
const maxJWKSBytes = 1 << 20

// keyFits reports whether key is of the type alg needs.
func keyFits(alg string, key any) bool {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		k, ok := key.(*rsa.PublicKey)
		return ok && k.N.BitLen() >= MinRSABits
	case "ES256", "ES384", "ES512":
		k, ok := key.(*ecdsa.PublicKey)
		if !ok {
			return false
		}
		want := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[alg]
		return k.Curve == want
	case "EdDSA":
		k, ok := key.(ed25519.PublicKey)
		return ok && len(k) == ed25519.PublicKeySize
	}
	return false
}

// candidates returns the keys that may have signed a token with this kid
// and alg: those with the kid (when none has it, those without a kid, such
// as PEM keys; when the token names no kid, all), meant for signatures,
// declaring no other alg, of the type alg needs.
func candidates(keys []jose.JSONWebKey, kid, alg string) []jose.JSONWebKey {
	pick := func(want string) []jose.JSONWebKey {
		var out []jose.JSONWebKey
		for _, k := range keys {
			if (kid != "" && k.KeyID != want) || (k.Use != "" && k.Use != "sig") || (k.Algorithm != "" && k.Algorithm != alg) {
				continue
			}
			if keyFits(alg, k.Key) {
				out = append(out, k)
			}
		}
		return out
	}
	if out := pick(kid); len(out) > 0 || kid == "" {
		return out
	}
	return pick("")
}

// parseJWKS reads a JWK set, keeping the public half of each key it
// understands and skipping the others (a set may hold key types we do not
// use). It fails only if the document is not a JWK set.
func parseJWKS(b []byte) ([]jose.JSONWebKey, error) {
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("not a JWK set: %w", err)
	}
	if raw.Keys == nil {
		return nil, fmt.Errorf("not a JWK set: no \"keys\"")
	}
	var keys []jose.JSONWebKey
	for _, r := range raw.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(r); err != nil || !k.Valid() {
			continue
		}
		keys = append(keys, k.Public())
	}
	return keys, nil
}

// parsePEM reads public keys and certificates.
func parsePEM(b []byte) ([]jose.JSONWebKey, error) {
	var keys []jose.JSONWebKey
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		var (
			key any
			err error
		)
		switch blk.Type {
		case "PUBLIC KEY":
			key, err = x509.ParsePKIXPublicKey(blk.Bytes)
		case "RSA PUBLIC KEY":
			key, err = x509.ParsePKCS1PublicKey(blk.Bytes)
		case "CERTIFICATE":
			var c *x509.Certificate
			if c, err = x509.ParseCertificate(blk.Bytes); err == nil {
				key = c.PublicKey
			}
		default:
			return nil, fmt.Errorf("PEM block %q: want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE", blk.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("PEM block %q: %w", blk.Type, err)
		}
		keys = append(keys, jose.JSONWebKey{Key: key, Use: "sig"})
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no PEM block")
	}
	return keys, nil
}

// keySource gives the keys a token may be checked with.
type keySource interface {
	// lookup returns the keys that fit kid and alg; it may refresh.
	lookup(ctx context.Context, kid, alg string) ([]jose.JSONWebKey, error)
}

// staticKeys are inline keys.
type staticKeys []jose.JSONWebKey

func (s staticKeys) lookup(_ context.Context, kid, alg string) ([]jose.JSONWebKey, error) {
	return candidates(s, kid, alg), nil
}

// remoteKeys is a JWK set fetched from a URL, cached for MaxKeyAge and
// fetched again early when a token names a key id it lacks (at most once
// per MinRefresh).
type remoteKeys struct {
	url  string
	opts Options

	mu      sync.Mutex
	keys    []jose.JSONWebKey
	fetched time.Time // zero: never fetched successfully
	tried   time.Time // last fetch attempt
}

func (r *remoteKeys) lookup(ctx context.Context, kid, alg string) ([]jose.JSONWebKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	if r.fetched.IsZero() || now.Sub(r.fetched) >= r.opts.MaxKeyAge {
		if err := r.fetch(ctx, now); err != nil && r.fetched.IsZero() {
			return nil, err
		}
	}
	out := candidates(r.keys, kid, alg)
	if len(out) == 0 && now.Sub(r.tried) >= r.opts.MinRefresh {
		if err := r.fetch(ctx, now); err != nil {
			return nil, err
		}
		out = candidates(r.keys, kid, alg)
	}
	return out, nil
}

// fetch replaces the keys with the set at the URL; on failure the old keys
// stay.
func (r *remoteKeys) fetch(ctx context.Context, now time.Time) error {
	r.tried = now
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.opts.HTTPClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET JWK set: HTTP %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return err
	}
	if len(b) > maxJWKSBytes {
		return fmt.Errorf("JWK set larger than %d bytes", maxJWKSBytes)
	}
	keys, err := parseJWKS(b)
	if err != nil {
		return err
	}
	r.keys, r.fetched = keys, now
	return nil
}
