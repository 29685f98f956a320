package store_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

func ecPEM(t *testing.T) string {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// TestRules: a key's own rules are stored, changed and read back the same
// on both backends; its secret is kept as a digest only, rotates with a
// grace period, and reaches the gateway's Identity.
func TestRules(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for name, open := range backends(t, store.WithClock(func() time.Time { return now })) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			plain, _, err := s.Create(ctx, store.KeySpec{Name: "plain", DailyCredits: 10})
			if err != nil {
				t.Fatal(err)
			}
			if !plain.Rules.Zero() || store.Identity(plain).Rules != nil {
				t.Fatalf("a plain key has rules: %+v", plain.Rules)
			}
			pemText := ecPEM(t)
			k, _, err := s.Create(ctx, store.KeySpec{Name: "guarded", DailyCredits: 10, WithSecret: true, Rules: store.Rules{
				SecretHash:     "ignored",
				JWTKeys:        []apikey.JWTKey{{Name: "ops", PEM: pemText}},
				AllowAddresses: []string{"0xABCDEFabcdef0123456789012345678901234567"}, AllowUserAgents: []string{"viem/"},
				MaxConcurrent: 4, RequestsPerSecond: 50, Logs: &portico.LogLimits{MaxBlockRange: 100},
			}})
			if err != nil {
				t.Fatal(err)
			}
			secret := k.NewSecret
			if secret == "" || k.Rules.SecretHash != apikey.SumSecret(secret).String() {
				t.Fatalf("secret %q, digest %q", secret, k.Rules.SecretHash)
			}
			got, err := s.Get(ctx, "guarded")
			if err != nil {
				t.Fatal(err)
			}
			if got.NewSecret != "" || got.Rules.SecretHash != k.Rules.SecretHash || got.Rules.AllowAddresses[0] != "0xabcdefabcdef0123456789012345678901234567" ||
				got.Rules.Logs == nil || got.Rules.Logs.MaxBlockRange != 100 || got.Rules.RequestsPerSecond != 50 || len(got.Rules.JWTKeys) != 1 {
				t.Fatalf("read back %+v", got.Rules)
			}
			id := store.Identity(got).Rules
			if id == nil || id.JWT == nil || id.CheckSecret(secret, now) != nil || !id.Limited() || id.Logs.MaxBlockRange != 100 {
				t.Fatalf("identity %+v", id)
			}

			// Rotation with a grace period: both secrets, then only the new.
			_, second, err := s.RotateSecret(ctx, "guarded", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			id = mustRules(t, s, "guarded")
			if id.CheckSecret(secret, now.Add(59*time.Minute)) != nil || id.CheckSecret(second, now) != nil {
				t.Error("both secrets should work within the grace period")
			}
			if err := id.CheckSecret(secret, now.Add(61*time.Minute)); !errors.Is(err, portico.ErrSecretWrong) {
				t.Errorf("old secret after the grace period: %v", err)
			}
			if err := id.CheckSecret("", now); !errors.Is(err, portico.ErrSecretMissing) {
				t.Errorf("no secret: %v", err)
			}

			// A patch changes only what it names; an empty list lifts a
			// restriction; a zero LogLimits drops the override.
			none := []string{}
			zero := portico.LogLimits{}
			rps := 0
			up, err := s.Update(ctx, "guarded", store.Patch{Rules: store.RulesPatch{AllowUserAgents: &none, Logs: &zero, RequestsPerSecond: &rps}})
			if err != nil {
				t.Fatal(err)
			}
			if len(up.Rules.AllowUserAgents) != 0 || up.Rules.Logs != nil || up.Rules.RequestsPerSecond != 0 || up.Rules.MaxConcurrent != 4 ||
				!slices.Equal(up.Rules.AllowAddresses, got.Rules.AllowAddresses) || !up.Rules.HasSecret() {
				t.Fatalf("patched %+v", up.Rules)
			}
			for field, p := range map[string]store.RulesPatch{
				"allow_addresses[0]": {AllowAddresses: &[]string{"0x12"}},
				"max_concurrent":     {MaxConcurrent: ptr(-1)},
				"jwt_keys":           {JWTKeys: &[]apikey.JWTKey{{Name: "x", PEM: "nope"}}},
			} {
				var in *store.InputError
				if _, err := s.Update(ctx, "guarded", store.Patch{Rules: p}); !errors.As(err, &in) || in.Field != field {
					t.Errorf("%s: %v", field, err)
				}
			}
			if _, err := s.RemoveSecret(ctx, "guarded"); err != nil {
				t.Fatal(err)
			}
			if id := mustRules(t, s, "guarded"); len(id.Secrets) != 0 {
				t.Errorf("secret removed, still %d digests", len(id.Secrets))
			}
			if _, _, err := s.RotateSecret(ctx, "nobody", 0); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("rotate unknown: %v", err)
			}
		})
	}
}

func mustRules(t *testing.T, s *store.Store, name string) *apikey.Rules {
	t.Helper()
	k, err := s.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return store.Identity(k).Rules
}

func ptr[T any](v T) *T { return &v }

// TestLogBounds: a patch of some log bounds changes those and keeps the
// others, on a key with bounds of its own or none; 0 sets one back to the
// network's; an unknown key is not found.
func TestLogBounds(t *testing.T) {
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			if _, _, err := s.Create(ctx, store.KeySpec{Name: "logs", DailyCredits: 10,
				Rules: store.Rules{Logs: &portico.LogLimits{MaxBlockRange: 500, MaxTopics: 2}}}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Create(ctx, store.KeySpec{Name: "bare", DailyCredits: 10}); err != nil {
				t.Fatal(err)
			}
			addrs, zero := 7, uint64(0)
			k, err := s.Update(ctx, "logs", store.Patch{Rules: store.RulesPatch{LogBounds: &store.LogBoundsPatch{MaxAddresses: &addrs, MaxBlockRange: &zero}}})
			if err != nil {
				t.Fatal(err)
			}
			if want := (portico.LogLimits{MaxAddresses: 7, MaxTopics: 2}); k.Rules.Logs == nil || *k.Rules.Logs != want {
				t.Fatalf("logs: %+v, want %+v", k.Rules.Logs, want)
			}
			if got, _ := s.Get(ctx, "logs"); *got.Rules.Logs != *k.Rules.Logs {
				t.Fatalf("read back %+v", got.Rules.Logs)
			}
			logs := 100
			k, err = s.Update(ctx, "bare", store.Patch{Rules: store.RulesPatch{LogBounds: &store.LogBoundsPatch{MaxLogs: &logs}}})
			if err != nil || k.Rules.Logs == nil || *k.Rules.Logs != (portico.LogLimits{MaxLogs: 100}) {
				t.Fatalf("bare: %+v %v", k.Rules.Logs, err)
			}
			if _, err := s.Update(ctx, "nobody", store.Patch{Rules: store.RulesPatch{LogBounds: &store.LogBoundsPatch{MaxLogs: &logs}}}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("unknown key: %v", err)
			}
		})
	}
}
