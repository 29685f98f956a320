package gateway_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

// BenchmarkKeyRules is the small-call pass-through (an eth_call to a
// trivial upstream, over loopback HTTP) with a plain key, a key with a
// secret, a key that requires a JWT (ES256, the same token on every call,
// as a client sends it) and a key with every allowlist set. Every request
// carries the same headers; only the gateway's work differs
// (docs/benchmarks.md, issue 26).
func BenchmarkKeyRules(b *testing.B) {
	t := &testing.T{}
	e := newKeysEnvTTL(t, options{}, 5*time.Second)
	e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"0x0000000000000000000000000000000000000000000000000000000000000001"}`))
	})
	const target = "0x1111111111111111111111111111111111111111"
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	pemText := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))

	_, plain := e.create(t, store.KeySpec{Name: "plain"})
	sk, secretKey := e.create(t, store.KeySpec{Name: "secret", WithSecret: true})
	_, jwtKey := e.create(t, store.KeySpec{Name: "jwt", Rules: store.Rules{JWTKeys: []apikey.JWTKey{{Name: "ops", PEM: pemText}}}})
	_, listed := e.create(t, store.KeySpec{Name: "lists", AllowMethods: []string{"eth_call", "eth_chainId"}, AllowNetworks: []string{"testnet"},
		AllowOrigins: []string{"app.example.com"}, Rules: store.Rules{AllowAddresses: []string{target, "0x2222222222222222222222222222222222222222"},
			AllowUserAgents: []string{"bench/"}}})
	signer, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "ops"))
	token, _ := jwt.Signed(signer).Claims(jwt.Claims{Audience: jwt.Audience{"jwt"}, Expiry: jwt.NewNumericDate(time.Now().Add(50 * time.Minute)),
		IssuedAt: jwt.NewNumericDate(time.Now())}).Serialize()
	if t.Failed() {
		b.Fatal("setup failed")
	}

	body := `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"` + target + `","data":"0x70a08231"},"latest"]}`
	variants := []struct{ name, key string }{{"plain", plain}, {"secret", secretKey}, {"jwt", jwtKey}, {"allowlists", listed}}
	reqs := make([]*http.Request, len(variants))
	for i, v := range variants {
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/v3/"+v.key, nil)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", "https://app.example.com")
		req.Header.Set("User-Agent", "bench/1.0")
		req.Header.Set(portico.HeaderKeySecret, sk.NewSecret)
		req.Header.Set("Authorization", "Bearer "+token)
		reqs[i] = req
	}
	call := func(req *http.Request) {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(strings.NewReader(body))
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != 200 {
			out, _ := io.ReadAll(resp.Body)
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// The variants take turns, call by call, so that the load of a
	// shared machine falls on all of them alike; each reports its median
	// time per call and its ratio to the plain key's (the median, as a
	// stall of the shared machine lands on one call of one variant and
	// would weigh in a mean).
	took := make([][]time.Duration, len(variants))
	n := 0
	for b.Loop() {
		for i := range variants {
			// Each round starts with another variant, so that none is
			// always first after the others.
			j := (i + n) % len(variants)
			start := time.Now()
			call(reqs[j])
			took[j] = append(took[j], time.Since(start))
		}
		n++
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	mean := func(d []time.Duration) float64 {
		var sum time.Duration
		for _, x := range d {
			sum += x
		}
		return float64(sum.Nanoseconds()) / float64(len(d))
	}
	base, baseMean := median(took[0]), mean(took[0])
	for i, v := range variants {
		m := median(took[i])
		b.ReportMetric(m, v.name+"-p50-ns")
		if i > 0 {
			b.ReportMetric(m/base, v.name+"/plain-p50")
			b.ReportMetric(mean(took[i])/baseMean, v.name+"/plain-mean")
		}
	}
}
