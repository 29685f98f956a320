package gateway

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/valyala/fasthttp"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/apikey"
)

func BenchmarkCheckTarget(b *testing.B) {
	r := &apikey.Rules{Addresses: []string{"0x1111111111111111111111111111111111111111", "0x2222222222222222222222222222222222222222"}, UserAgents: []string{"bench/"}}
	params := []byte(`[{"to":"0x1111111111111111111111111111111111111111","data":"0x70a08231"},"latest"]`)
	b.ReportAllocs()
	for b.Loop() {
		if err := checkTarget(r, "eth_call", params); err != nil {
			b.Fatal(err)
		}
		if !r.UserAgentAllowed("Mozilla/5.0 bench/1.0") {
			b.Fatal("ua")
		}
	}
}

// TestCheckTarget reads targets as go-ethereum does, and refuses what
// names no address or one off the list.
func TestCheckTarget(t *testing.T) {
	const a, other = "0x1111111111111111111111111111111111111111", "0x3333333333333333333333333333333333333333"
	r := &apikey.Rules{Addresses: []string{a}}
	tests := []struct {
		method, params string
		ok             bool
	}{
		{"eth_call", `[{"to":"` + a + `"},"latest"]`, true},
		{"eth_call", `[{"TO":"` + a + `"}]`, true},
		{"eth_call", `[{"to":"` + a + `","To":"` + other + `"}]`, false}, // geth takes the last
		{"eth_call", `[{"to":"` + other + `","to":"` + a + `"}]`, false}, // one spelling twice: refused
		{"eth_call", `[{"data":"0x","from":"` + other + `","to":"` + a + `","gas":"0x1"},"latest",{"` + other + `":{"balance":"0x1"}}]`, true},
		{"eth_call", `[{"to":["` + a + `"]}]`, false},
		{"eth_getLogs", `[{"address":["` + a + `","` + a + `"],"topics":[null,["0x01"]]}]`, true},
		{"eth_getLogs", `[{"ADDRESS":"` + other + `"}]`, false},
		{"eth_getLogs", `[{"address":"` + a + `"`, false}, // cut short
		{"eth_call", `[{"to":null}]`, false},
		{"eth_call", `{"to":"` + a + `"}`, false}, // named params name no target
		{"eth_call", `[]`, false},
		{"eth_getLogs", `[{"address":"` + a + `"}]`, true},
		{"eth_getLogs", `[{"address":["` + a + `",1]}]`, false},
		{"eth_getLogs", `[{"address":[]}]`, false},
		{"eth_getBalance", `["` + strings.ToUpper(a[2:]) + `"]`, false}, // no 0x: not the listed address
		{"eth_getBalance", `["0x` + strings.ToUpper(a[2:]) + `","latest"]`, true},
		{"eth_blockNumber", `[]`, true},
		{"eth_sendRawTransaction", `["0x00"]`, true},
	}
	for _, tc := range tests {
		if err := checkTarget(r, tc.method, []byte(tc.params)); (err == nil) != tc.ok {
			t.Errorf("%s %s: %v, want ok %v", tc.method, tc.params, err, tc.ok)
		}
	}
	if err := checkLogsSubscription(r, []byte(`["logs",{"address":"`+other+`"}]`)); err == nil {
		t.Error("logs subscription to another contract passed")
	}
	if err := checkLogsSubscription(r, []byte(`["newHeads"]`)); err != nil {
		t.Errorf("newHeads: %v", err)
	}
}

// TestKeyCallsBucket: calls per second refill continuously, a batch is
// admitted whole, and a key without a bucket is forgotten when idle.
func TestKeyCallsBucket(t *testing.T) {
	var k keyCalls
	now := time.Unix(1000, 0)
	r := &apikey.Rules{RequestsPerSecond: 10}
	for i := range 10 {
		rel, err := k.take("a", r, 1, now)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		rel()
	}
	var q *portico.QuotaError
	if _, err := k.take("a", r, 1, now); !errors.As(err, &q) || q.Limit != portico.QuotaRequests || q.RetryAfter != 100*time.Millisecond {
		t.Fatalf("11th call: %v", err)
	}
	if _, err := k.take("a", r, 5, now.Add(400*time.Millisecond)); err == nil {
		t.Fatal("5 calls with 4 refilled passed")
	}
	rel, err := k.take("a", r, 4, now.Add(400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rel()
	c := &apikey.Rules{MaxConcurrent: 2}
	rel1, _ := k.take("b", c, 2, now)
	if _, err := k.take("b", c, 1, now); !errors.As(err, &q) || q.Limit != portico.QuotaConcurrent {
		t.Fatalf("third in flight: %v", err)
	}
	rel1()
	if _, ok := k.keys["b"]; ok {
		t.Error("an idle key without a bucket is kept")
	}
}

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
