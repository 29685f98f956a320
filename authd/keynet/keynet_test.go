package keynet_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/keynet"
	"github.com/porticohq/portico/authd/keynet/sss"
	"go.uber.org/goleak"
)

// issuer signs id tokens for the test verifiers.
type issuer struct {
	key *rsa.PrivateKey
	t   testing.TB
}

func newIssuer(t testing.TB) *issuer {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return &issuer{key: k, t: t}
}

func (is *issuer) pem() string {
	der, _ := x509.MarshalPKIXPublicKey(&is.key.PublicKey)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// verifiers are two custom JWT verifiers over the same issuer key.
func (is *issuer) verifiers() []idtoken.Config {
	var out []idtoken.Config
	for _, name := range []string{"portico-jwt", "other-verifier"} {
		out = append(out, idtoken.Config{Verifier: name, TypeOfLogin: "jwt", PEM: is.pem(),
			Issuer: "https://issuer.test", Audience: []string{"portico-app"}})
	}
	return out
}

// token is a fresh token for sub (a random nonce makes each one unique).
func (is *issuer) token(sub string) string {
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	claims, _ := json.Marshal(map[string]any{"iss": "https://issuer.test", "aud": "portico-app", "sub": sub,
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "nonce": hex.EncodeToString(nonce)})
	s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key}, nil)
	obj, err := s.Sign(claims)
	if err != nil {
		is.t.Fatal(err)
	}
	tok, _ := obj.CompactSerialize()
	return tok
}

func start(t *testing.T, is *issuer, opts keynet.EmbeddedOptions) *keynet.Embedded {
	t.Helper()
	opts.Verifiers = is.verifiers()
	e, err := keynet.StartEmbedded(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

func client(t *testing.T, e *keynet.Embedded, network string) *keynet.Client {
	c, err := e.Client(network, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func TestLoginKeys(t *testing.T) {
	// Registered first, so it runs after every other cleanup: no node,
	// server or client goroutine outlives the network.
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })
	is := newIssuer(t)
	e := start(t, is, keynet.EmbeddedOptions{Networks: []string{"sapphire_devnet", "cyan"}})
	ctx := context.Background()
	dev := client(t, e, "sapphire_devnet")

	first, err := dev.GetKey(ctx, "portico-jwt", "alice", is.token("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Used) != 3 || len(first.Rejected) != 0 || !first.PrivateKey.PubKey().IsEqual(first.PublicKey) {
		t.Fatalf("first login: used %v rejected %v", first.Used, first.Rejected)
	}
	again, err := dev.GetKey(ctx, "portico-jwt", "alice", is.token("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if again.PrivateKeyHex() != first.PrivateKeyHex() {
		t.Fatal("a second login gave another key")
	}
	others := map[string]func() (*keynet.KeyResult, error){
		"other user": func() (*keynet.KeyResult, error) { return dev.GetKey(ctx, "portico-jwt", "bob", is.token("bob")) },
		"other verifier": func() (*keynet.KeyResult, error) {
			return dev.GetKey(ctx, "other-verifier", "alice", is.token("alice"))
		},
		"other network": func() (*keynet.KeyResult, error) {
			return client(t, e, "cyan").GetKey(ctx, "portico-jwt", "alice", is.token("alice"))
		},
	}
	seen := map[string]string{first.PrivateKeyHex(): "first"}
	for name, get := range others {
		k, err := get()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if prev, dup := seen[k.PrivateKeyHex()]; dup {
			t.Fatalf("%s got the same key as %s", name, prev)
		}
		seen[k.PrivateKeyHex()] = name
	}
}

func TestReconstructionSubsets(t *testing.T) {
	is := newIssuer(t)
	e := start(t, is, keynet.EmbeddedOptions{Networks: []string{"testnet"}})
	ctx := context.Background()
	c := client(t, e, "testnet")
	want, err := c.GetKey(ctx, "portico-jwt", "carol", is.token("carol"))
	if err != nil {
		t.Fatal(err)
	}
	shares, err := c.FetchShares(ctx, "portico-jwt", "carol", is.token("carol"))
	if err != nil || len(shares) != 5 {
		t.Fatalf("%d shares, %v", len(shares), err)
	}
	n := 0
	for a := 0; a < 5; a++ {
		for b := a + 1; b < 5; b++ {
			for d := b + 1; d < 5; d++ {
				got, err := keynet.Reconstruct([]keynet.NodeShare{shares[a], shares[b], shares[d]}, 3)
				if err != nil || got.PrivateKeyHex() != want.PrivateKeyHex() {
					t.Fatalf("subset %d,%d,%d: %v", a+1, b+1, d+1, err)
				}
				n++
			}
			// Two shares are not enough: Reconstruct refuses, and their
			// interpolation is not the key.
			if _, err := keynet.Reconstruct([]keynet.NodeShare{shares[a], shares[b]}, 3); !errors.Is(err, keynet.ErrNotEnoughShares) {
				t.Fatalf("pair %d,%d: err = %v", a+1, b+1, err)
			}
			k, _ := sss.Interpolate([]sss.Share{shares[a].Share, shares[b].Share})
			if kb := k.Bytes(); hex.EncodeToString(kb[:]) == want.PrivateKeyHex() {
				t.Fatalf("pair %d,%d interpolates to the key", a+1, b+1)
			}
		}
	}
	if n != 10 {
		t.Fatalf("%d subsets of 3", n)
	}

	// A corrupted share is detected and skipped when enough good ones remain.
	bad := append([]keynet.NodeShare(nil), shares...)
	var one sss.Share
	one.Value.SetInt(1)
	bad[1].Share.Value.Add(&one.Value)
	got, err := keynet.Reconstruct(bad, 3)
	if err != nil || got.PrivateKeyHex() != want.PrivateKeyHex() || len(got.Rejected) != 1 || got.Rejected[0] != 2 {
		t.Fatalf("with node 2 corrupted: %v, rejected %v", err, got)
	}
	for _, u := range got.Used {
		if u == 2 {
			t.Fatal("the corrupted share was used")
		}
	}
	// With only three shares, one corrupted, no key comes out.
	if _, err := keynet.Reconstruct(bad[:3], 3); !errors.Is(err, keynet.ErrReconstruct) {
		t.Fatalf("three shares, one corrupted: err = %v", err)
	}
	// A node reporting another public polynomial is outvoted...
	lying := append([]keynet.NodeShare(nil), shares...)
	lying[0].Commitments = bad[0].Commitments[:len(bad[0].Commitments)-1]
	if got, err := keynet.Reconstruct(lying, 3); err != nil || got.PrivateKeyHex() != want.PrivateKeyHex() {
		t.Fatalf("one node lying about commitments: %v", err)
	}
	// ...but without t nodes agreeing there is no key: three nodes each
	// report their own reordering of the polynomial.
	cm := shares[0].Commitments
	lying[0].Commitments = []string{cm[1], cm[0], cm[2]}
	lying[1].Commitments = []string{cm[2], cm[1], cm[0]}
	lying[2].Commitments = []string{cm[0], cm[2], cm[1]}
	if _, err := keynet.Reconstruct(lying[:4], 3); !errors.Is(err, keynet.ErrNoAgreement) {
		t.Fatalf("no agreement: err = %v", err)
	}
}

func TestNodesDown(t *testing.T) {
	is := newIssuer(t)
	e := start(t, is, keynet.EmbeddedOptions{Networks: []string{"aqua"}})
	ctx := context.Background()
	c := client(t, e, "aqua")
	want, err := c.GetKey(ctx, "portico-jwt", "dave", is.token("dave"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.StopNode("aqua", 5); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetKey(ctx, "portico-jwt", "dave", is.token("dave"))
	if err != nil || got.PrivateKeyHex() != want.PrivateKeyHex() {
		t.Fatalf("with node 5 down: %v", err)
	}
	if err := e.StopNode("aqua", 4); err != nil {
		t.Fatal(err)
	}
	// ⌊3·5/4⌋+1 = 4 commitments are needed: two nodes down stops logins.
	_, err = c.GetKey(ctx, "portico-jwt", "dave", is.token("dave"))
	var ne *keynet.NodesError
	if !errors.Is(err, keynet.ErrNotEnoughCommitments) || !errors.As(err, &ne) || ne.Got != 3 || ne.Need != 4 || len(ne.Errs) != 2 {
		t.Fatalf("with nodes 4 and 5 down: err = %v", err)
	}
}

func rpcCode(err error) int {
	var re *keynet.RPCError
	if errors.As(err, &re) {
		return re.Code
	}
	return 0
}

func TestNodeRefusals(t *testing.T) {
	is := newIssuer(t)
	e := start(t, is, keynet.EmbeddedOptions{Networks: []string{"celeste"}})
	ctx := context.Background()
	c := client(t, e, "celeste")
	forger := newIssuer(t)
	tests := []struct {
		name       string
		verifier   string
		verifierID string
		token      string
		code       int
	}{
		{"token from another key", "portico-jwt", "eve", forger.token("eve"), keynet.CodeBadToken},
		{"unknown verifier", "nope", "eve", is.token("eve"), keynet.CodeBadToken},
		{"verifier id not the token's", "portico-jwt", "alice", is.token("eve"), keynet.CodeBadToken},
		{"not a token", "portico-jwt", "eve", "junk", keynet.CodeBadToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.GetKey(ctx, tc.verifier, tc.verifierID, tc.token)
			var ne *keynet.NodesError
			if !errors.As(err, &ne) || !errors.Is(err, keynet.ErrNotEnoughShares) || len(ne.Errs) != 5 {
				t.Fatalf("err = %v, want every node to refuse", err)
			}
			for i, e := range ne.Errs {
				if rpcCode(e) != tc.code {
					t.Fatalf("node %d: %v, want code %d", i, e, tc.code)
				}
			}
		})
	}
	// A token is served once per node.
	tok := is.token("eve")
	if _, err := c.GetKey(ctx, "portico-jwt", "eve", tok); err != nil {
		t.Fatal(err)
	}
	_, err := c.GetKey(ctx, "portico-jwt", "eve", tok)
	var ne *keynet.NodesError
	if !errors.As(err, &ne) || rpcCode(ne.Errs[1]) != keynet.CodeTokenReused {
		t.Fatalf("replayed token: err = %v", err)
	}
}
