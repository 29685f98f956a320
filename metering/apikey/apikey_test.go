package apikey_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

func TestSetAuthenticate(t *testing.T) {
	good := apikey.Generate()
	set := apikey.NewSet(apikey.Entry{Name: "alice", Hash: apikey.Sum(good)})
	cases := []struct {
		name string
		key  string
		want error
	}{
		{"known", good, nil},
		{"missing", "", portico.ErrKeyMissing},
		{"too short", "abc", portico.ErrKeyMalformed},
		{"too long", strings.Repeat("a", 65), portico.ErrKeyMalformed},
		{"bad character", strings.Repeat("a", 31) + "!", portico.ErrKeyMalformed},
		{"slash", strings.Repeat("a", 31) + "/", portico.ErrKeyMalformed},
		{"unknown", apikey.Generate(), portico.ErrKeyUnknown},
		{"case differs", strings.ToUpper(good), portico.ErrKeyUnknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := set.Authenticate(context.Background(), tc.key)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err == nil && id.Name != "alice" {
				t.Fatalf("name = %q", id.Name)
			}
		})
	}
}

func TestGenerate(t *testing.T) {
	a, b := apikey.Generate(), apikey.Generate()
	if a == b || !apikey.Valid(a) || len(a) != 32 {
		t.Fatalf("generated %q and %q", a, b)
	}
}

func TestParseHash(t *testing.T) {
	h := apikey.Sum("k")
	for _, s := range []string{h.String(), "sha256:" + h.String()} {
		got, err := apikey.ParseHash(s)
		if err != nil || got != h {
			t.Fatalf("ParseHash(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := apikey.ParseHash("abcd"); err == nil {
		t.Fatal("short hash accepted")
	}
}

// TestSecrets: generated secrets are unique and of their length, their
// digest is apart from a key's, and a check passes only the digests in
// force.
func TestSecrets(t *testing.T) {
	a, b := apikey.GenerateSecret(), apikey.GenerateSecret()
	if a == b || len(a) != apikey.SecretLength || len(b) != apikey.SecretLength {
		t.Fatalf("%q %q", a, b)
	}
	if apikey.SumSecret(a) == apikey.Sum(a) {
		t.Fatal("a secret's digest equals a key's")
	}
	now := time.Unix(1000, 0)
	r := &apikey.Rules{Secrets: []apikey.SecretDigest{{Hash: apikey.SumSecret(a)}, {Hash: apikey.SumSecret(b), Until: now}}}
	for _, tc := range []struct {
		secret string
		at     time.Time
		want   error
	}{
		{a, now, nil},
		{b, now, nil},
		{b, now.Add(time.Millisecond), portico.ErrSecretWrong},
		{"", now, portico.ErrSecretMissing},
		{a + "x", now, portico.ErrSecretWrong},
	} {
		if err := r.CheckSecret(tc.secret, tc.at); !errors.Is(err, tc.want) {
			t.Errorf("%q at %v: %v, want %v", tc.secret, tc.at, err, tc.want)
		}
	}
	if !(&apikey.Rules{UserAgents: []string{"VIEM/"}}).UserAgentAllowed("node viem/2.0") || (&apikey.Rules{UserAgents: []string{"viem/"}}).UserAgentAllowed("curl/8") {
		t.Error("User-Agent match")
	}
}
