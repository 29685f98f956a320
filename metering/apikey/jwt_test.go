package apikey_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/metering/apikey"
)

func pubPEM(t *testing.T, pub any, typ string) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

// TestNewJWT: the public keys a key may register, and what is refused.
func TestNewJWT(t *testing.T) {
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ec384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	good := pubPEM(t, &ec.PublicKey, "PUBLIC KEY")
	tests := []struct {
		name string
		keys []apikey.JWTKey
		want string // in the error; "" for a pass
	}{
		{"ES256", []apikey.JWTKey{{Name: "a", PEM: good}}, ""},
		{"none", nil, "want 1 to 3"},
		{"P-384", []apikey.JWTKey{{Name: "a", PEM: pubPEM(t, &ec384.PublicKey, "PUBLIC KEY")}}, "want P-256"},
		{"short RSA", []apikey.JWTKey{{Name: "a", PEM: pubPEM(t, &small.PublicKey, "PUBLIC KEY")}}, "at least 2048"},
		{"private key", []apikey.JWTKey{{Name: "a", PEM: pubPEM(t, &ec.PublicKey, "PRIVATE KEY")}}, "want PUBLIC KEY"},
		{"not PEM", []apikey.JWTKey{{Name: "a", PEM: "ssh-ed25519 AAAA"}}, "not a PEM block"},
		{"no name", []apikey.JWTKey{{PEM: good}}, "name must be"},
	}
	for _, tc := range tests {
		_, err := apikey.NewJWT(tc.keys, time.Hour, "")
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	a, _ := apikey.NewJWT([]apikey.JWTKey{{Name: "a", PEM: good}}, 0, "")
	b, _ := apikey.NewJWT([]apikey.JWTKey{{Name: "a", PEM: good}}, 0, "aud")
	if a.MaxLifetime() != apikey.DefaultJWTMaxLifetime || a.Fingerprint == b.Fingerprint {
		t.Error("default lifetime, or one fingerprint for two settings")
	}
}
