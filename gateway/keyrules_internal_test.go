package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/valyala/fasthttp"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// BenchmarkAuthorize is the gateway's own work for a key's secret and for
// a JWT it has seen before, without the transport.
func BenchmarkAuthorize(b *testing.B) {
	secret := apikey.GenerateSecret()
	r := &apikey.Rules{Secrets: []apikey.SecretDigest{{Hash: apikey.SumSecret(secret)}}}
	var h fasthttp.RequestHeader
	h.Set(portico.HeaderKeySecret, secret)
	g := &Gateway{tokens: newTokenCache()}
	id := apikey.Identity{Name: "k", Rules: r}
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	j, err := apikey.NewJWT([]apikey.JWTKey{{Name: "ops", PEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}}, 0, "")
	if err != nil {
		b.Fatal(err)
	}
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, (&jose.SignerOptions{}).WithHeader("kid", "ops"))
	token, _ := jwt.Signed(signer).Claims(jwt.Claims{Audience: jwt.Audience{"k"}, Expiry: jwt.NewNumericDate(time.Now().Add(30 * time.Minute))}).Serialize()
	var hj fasthttp.RequestHeader
	hj.Set("Authorization", "Bearer "+token)
	for _, c := range []struct {
		name string
		h    *fasthttp.RequestHeader
		id   apikey.Identity
	}{
		{"secret", &h, id},
		{"jwt", &hj, apikey.Identity{Name: "k", Rules: &apikey.Rules{JWT: j}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := g.authorize(c.h, c.id); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
