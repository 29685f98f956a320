package apikey_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/apikey"
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
