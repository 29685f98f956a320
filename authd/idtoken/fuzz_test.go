package idtoken_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/porticohq/portico/authd/idtoken"
)

// FuzzVerify feeds arbitrary tokens to a verifier with inline keys: it must
// never panic, and must accept nothing but the tokens it was seeded with
// that were really signed (a mutation of a signed token is refused).
func FuzzVerify(f *testing.F) {
	k := newKeyring(f)
	v, err := idtoken.NewJWT(idtoken.Config{Verifier: "v", PEM: string(pemOf(f, &k.rsa.PublicKey)) + string(pemOf(f, k.ed.Public())),
		Issuer: "https://issuer.test", Audience: []string{"portico-app"}}, opts())
	if err != nil {
		f.Fatal(err)
	}
	// Signed tokens are kept decoded: base64url allows more than one
	// spelling of the same bytes (unused low bits of the last character).
	signed := map[string]bool{}
	for _, tok := range []string{
		sign(f, jose.RS256, "", k.rsa, goodClaims()),
		sign(f, jose.EdDSA, "x", k.ed, goodClaims()),
	} {
		signed[decoded(tok)] = true
		f.Add(tok)
	}
	f.Add(rawToken(map[string]any{"alg": "HS256"}, goodClaims(), hs256([]byte("k"))))
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("...")
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := v.Verify(context.Background(), tok)
		if err == nil && !signed[decoded(tok)] {
			// EdDSA and RSA PKCS#1 v1.5 signatures are not malleable.
			t.Fatalf("accepted a token nobody signed: %q (id %+v)", tok, id)
		}
	})
}

// decoded is the bytes a compact token stands for, its parts joined by NUL.
func decoded(tok string) string {
	var out []string
	for _, p := range strings.Split(tok, ".") {
		b, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil {
			return "undecodable:" + tok
		}
		out = append(out, string(b))
	}
	return strings.Join(out, "\x00")
}
