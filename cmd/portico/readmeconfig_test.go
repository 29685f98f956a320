package main

import (
	"os"
	"strings"
	"testing"

	"github.com/porticohq/portico/config"
)

// TestREADMEConfig: the README's full config example passes every check
// serve runs, so a reader can start from it.
func TestREADMEConfig(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const start = "```yaml\nlisten: "
	i := strings.Index(string(raw), start)
	if i < 0 {
		t.Fatal("the README has no config example starting with listen:")
	}
	block := string(raw[i+len("```yaml\n"):])
	block = block[:strings.Index(block, "```")]
	env := map[string]string{
		"PORTICO_KEY":         "0123456789abcdef0123456789abcdef",
		"PORTICO_ADMIN_TOKEN": "0123456789abcdef0123",
		"PROVIDER_KEY":        "provider-secret",
	}
	cfg, err := config.Parse([]byte(block), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	// The example's paths are relative to the repository.
	t.Chdir("../..")
	if err := checkConfig(&cfg); err != nil {
		t.Fatal(err)
	}
}
