package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the migration goldens")

// MigrateOutput formats a migration as the CLI does; the goldens hold it.
func migrateOutput(t *testing.T, in []byte) (v7, report []byte) {
	t.Helper()
	out, changes, err := MigrateV6(in)
	if err != nil {
		t.Fatal(err)
	}
	v7, err = json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var r bytes.Buffer
	for _, c := range changes {
		r.WriteString(c.String() + "\n")
	}
	return append(v7, '\n'), r.Bytes()
}

// Each testdata/migrate/NAME.v6.json migrates to NAME.v7.json with the
// report NAME.report.txt; go test -run TestMigrateGoldens -update rewrites
// them (review the diff).
func TestMigrateGoldens(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/migrate/*.v6.json")
	if len(inputs) == 0 {
		t.Fatal("no goldens")
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(in, ".v6.json")
		t.Run(filepath.Base(name), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			v7, report := migrateOutput(t, src)
			if *update {
				_ = os.WriteFile(name+".v7.json", v7, 0o644)
				_ = os.WriteFile(name+".report.txt", report, 0o644)
			}
			for file, got := range map[string][]byte{name + ".v7.json": v7, name + ".report.txt": report} {
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s:\n%s\nwant\n%s", file, got, want)
				}
			}
			// The v7 output is valid and reads back unchanged.
			p, err := ParseInitParams(v7)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := json.MarshalIndent(p, "", "  ")
			if !bytes.Equal(append(again, '\n'), v7) {
				t.Fatal("v7 output does not round-trip")
			}
		})
	}
}

func TestMigrateFull(t *testing.T) {
	src, _ := os.ReadFile("testdata/migrate/full.v6.json")
	p, _, err := MigrateV6(src)
	if err != nil {
		t.Fatal(err)
	}
	w := p.WhiteLabel
	if w.AppName != "Example App" || w.Mode != ModeDark || w.DefaultLanguage != German || w.Theme["primary"] != "#123456" ||
		p.ChainNamespace != EIP155 || p.SessionTime != 172800 || p.SDKURL != "" || p.Network != Testnet || !*p.UseCoreKitKey ||
		p.LoginConfig["jwt"].ClientID != "idp-client" || p.BuildEnv != Production {
		t.Fatalf("%+v %+v", p, w)
	}
}

func TestMigrateRejects(t *testing.T) {
	cases := []struct {
		name, in, field, reason string
	}{
		{"not json", `nope`, "(input)", "object"},
		{"array", `[]`, "(input)", "object"},
		{"no client id", `{"network":"mainnet"}`, "clientId", "required"},
		{"no network", `{"clientId":"c"}`, "network", "required"},
		{"unknown network", `{"clientId":"c","network":"sapphire"}`, "network", "not a network"},
		{"unsupported language", `{"clientId":"c","network":"mainnet","whiteLabel":{"defaultLanguage":"it"}}`, "whiteLabel.defaultLanguage", `"it" is not supported`},
		{"language not a string", `{"clientId":"c","network":"mainnet","whiteLabel":{"defaultLanguage":1}}`, "whiteLabel.defaultLanguage", "string"},
		{"dark not bool", `{"clientId":"c","network":"mainnet","whiteLabel":{"dark":"yes"}}`, "whiteLabel.dark", "boolean"},
		{"theme triple", `{"clientId":"c","network":"mainnet","whiteLabel":{"theme":["a","b","c"]}}`, "whiteLabel.theme", "pair"},
		{"theme number", `{"clientId":"c","network":"mainnet","whiteLabel":{"theme":5}}`, "whiteLabel.theme", "pair"},
		{"theme duplicate", `{"clientId":"c","network":"mainnet","whiteLabel":{"theme":[["a","b"],["a","c"]]}}`, "whiteLabel.theme", "twice"},
		{"login config without client id", `{"clientId":"c","network":"mainnet","loginConfig":{"google":{"verifier":"v","typeOfLogin":"google"}}}`, "loginConfig.google.clientId", "required in v7"},
		{"login config bad type", `{"clientId":"c","network":"mainnet","loginConfig":{"g":{"verifier":"v","typeOfLogin":"myspace","clientId":"x"}}}`, "loginConfig.g.typeOfLogin", "login type"},
		{"bad namespace", `{"clientId":"c","network":"mainnet","chainNamespace":"cosmos"}`, "chainNamespace", "eip155"},
		{"bad sdk url", `{"clientId":"c","network":"mainnet","sdkUrl":"ftp://x"}`, "sdkUrl", "http"},
		{"bad session time", `{"init":{"clientId":"c","network":"mainnet"},"params":{"sessionTime":-1}}`, "params.sessionTime", "positive"},
		{"session time string", `{"init":{"clientId":"c","network":"mainnet"},"params":{"sessionTime":"1d"}}`, "params.sessionTime", "number"},
		{"init not object", `{"init":"x"}`, "init", "object"},
		{"bad redirect", `{"clientId":"c","network":"mainnet","redirectUrl":"/cb"}`, "redirectUrl", "absolute"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := MigrateV6([]byte(c.in))
			var me *MigrationError
			if !errors.As(err, &me) || me.Field != c.field || !strings.Contains(me.Reason, c.reason) {
				t.Fatalf("err = %v, want field %s with %q", err, c.field, c.reason)
			}
		})
	}
}

func FuzzMigrateV6(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/migrate/*.v6.json")
	for _, in := range inputs {
		b, _ := os.ReadFile(in)
		f.Add(b)
	}
	f.Add([]byte(`{"clientId":"c","network":"mainnet","whiteLabel":{"theme":["a","b"]}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, _, err := MigrateV6(in)
		if err != nil {
			var me *MigrationError
			if !errors.As(err, &me) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("migrated params invalid: %v", err)
		}
	})
}
