package idtoken_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// now is the fixed clock of every test.
var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// keyring holds real keys made for one test.
type keyring struct {
	rsa, rsa2 *rsa.PrivateKey
	ec        *ecdsa.PrivateKey
	ed        ed25519.PrivateKey
}

func newKeyring(t testing.TB) *keyring {
	t.Helper()
	var k keyring
	var err error
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.rsa2, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		t.Fatal(err)
	}
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		t.Fatal(err)
	}
	return &k
}

// jwks is the public JWK set of the keyring: kids "rsa", "ec", "ed".
func (k *keyring) jwks() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
		{Key: &k.rsa.PublicKey, KeyID: "rsa", Use: "sig"},
		{Key: &k.ec.PublicKey, KeyID: "ec", Use: "sig"},
		{Key: k.ed.Public(), KeyID: "ed", Use: "sig"},
	}}
}

func sign(t testing.TB, alg jose.SignatureAlgorithm, kid string, key any, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	obj, err := s.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// rawToken builds a token from a header and claims with the given
// signature bytes, for attacks the signer would not produce.
func rawToken(hdr, claims map[string]any, sig func(signingInput string) []byte) string {
	b64 := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(hdr)
	c, _ := json.Marshal(claims)
	in := b64(h) + "." + b64(c)
	return in + "." + b64(sig(in))
}

// hs256 signs with HMAC-SHA256 under secret.
func hs256(secret []byte) func(string) []byte {
	return func(in string) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(in))
		return m.Sum(nil)
	}
}

// rs256 signs with key, as a real RS256 signature.
func rs256(t testing.TB, key *rsa.PrivateKey) func(string) []byte {
	return func(in string) []byte {
		d := sha256.Sum256([]byte(in))
		s, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, d[:])
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

func pemOf(t testing.TB, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// jwksServer serves a JWK set that a test may replace, counting fetches.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	set     jose.JSONWebKeySet
	fetches atomic.Int64
}

func newJWKSServer(t testing.TB, set jose.JSONWebKeySet) *jwksServer {
	s := &jwksServer{set: set}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.set)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) replace(set jose.JSONWebKeySet) {
	s.mu.Lock()
	s.set = set
	s.mu.Unlock()
}

// claims are good claims for the test issuer and audience; edit copies.
func goodClaims() map[string]any {
	return map[string]any{
		"iss": "https://issuer.test", "aud": "portico-app", "sub": "user-1",
		"email": "Alice@Example.COM", "name": "Alice", "picture": "https://pic.test/a.png",
		"iat": testNow.Add(-time.Minute).Unix(), "exp": testNow.Add(time.Hour).Unix(),
	}
}

func with(c map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(c))
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
