package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"reflect"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/store"
)

// TestConfigKeyRules: a key in the config file carries its allowlists and
// own rules into the store, and they apply to calls; a setting the file
// leaves out stays as the store has it (set through the admin API), and
// an empty list in the file lifts a restriction.
func TestConfigKeyRules(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))

	methods := []string{"eth_blockNumber"}
	addrs := []string{"0x00000000000000000000000000000000000000AA"}
	concurrent, rps := 3, 50
	aud, life := "backend-api", 30*time.Minute
	jwtKeys := []config.JWTKey{{Name: "k1", PEM: pemKey}}
	logs := portico.LogLimits{MaxBlockRange: 500}
	const key = "cfgrules0123456789abcdef01234567"
	cfg := config.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Store.KeyCacheTTL = time.Millisecond
	cfg.Networks = []config.Network{{Name: "evm-devnet", Family: "evm"}}
	cfg.Keys = []config.Key{{Name: "backend", Key: key, AllowMethods: &methods, AllowAddresses: &addrs,
		MaxConcurrent: &concurrent, RequestsPerSecond: &rps, JWTKeys: &jwtKeys, JWTAudience: &aud, JWTMaxLifetime: &life, Logs: &logs}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := start(t, cfg)
	ctx := context.Background()
	k, err := s.m.Store.Get(ctx, "backend")
	if err != nil {
		t.Fatal(err)
	}
	want := store.Rules{JWTKeys: config.APIKeys(jwtKeys), JWTAudience: aud, JWTMaxLifetime: life,
		AllowAddresses: []string{"0x00000000000000000000000000000000000000aa"}, MaxConcurrent: 3, RequestsPerSecond: 50, Logs: &logs}
	if !reflect.DeepEqual(k.Rules, want) || !reflect.DeepEqual(k.AllowMethods, methods) {
		t.Fatalf("stored rules %+v, methods %v\nwant %+v, %v", k.Rules, k.AllowMethods, want, methods)
	}
	// The rules apply: without a JWT the key is refused.
	if _, rpcErr, _ := gatewayCall(t, "http://"+s.addr(t, "evm-devnet")+"/v3/"+key, "eth_blockNumber", []any{}); rpcErr == nil {
		t.Fatal("a key that needs a JWT was served without one")
	}

	// What the file leaves out is the store's: an admin change to the
	// User-Agent list survives a new import; the file's empty method list
	// lifts that restriction.
	agents := []string{"backend/1.0"}
	if _, err := s.m.Store.Update(ctx, "backend", store.Patch{Rules: store.RulesPatch{AllowUserAgents: &agents}}); err != nil {
		t.Fatal(err)
	}
	none := []string{}
	cfg.Keys[0].AllowMethods = &none
	if _, err := importKeys(ctx, &cfg, s.m.Store); err != nil {
		t.Fatal(err)
	}
	k, err = s.m.Store.Get(ctx, "backend")
	if err != nil {
		t.Fatal(err)
	}
	if len(k.AllowMethods) != 0 || !reflect.DeepEqual(k.Rules.AllowUserAgents, agents) || k.Rules.MaxConcurrent != 3 {
		t.Fatalf("after a second import: methods %v, rules %+v", k.AllowMethods, k.Rules)
	}
}
