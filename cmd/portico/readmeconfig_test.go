package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/porticohq/portico/config"
)

// yamlBlocks returns the ```yaml blocks of a Markdown document.
func yamlBlocks(doc string) []string {
	var out []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	return out
}

// checkConfigFile saves config as portico.yaml in a temporary checkout
// (with the repository files it names, testdata/…, at the same paths) and
// runs `portico config check --config <it>` from another working
// directory, as a reader would from anywhere.
func checkConfigFile(t *testing.T, repo, config string) {
	t.Helper()
	root := t.TempDir()
	for _, m := range regexp.MustCompile(`[\w/]*testdata/\S+`).FindAllString(config, -1) {
		b, err := os.ReadFile(filepath.Join(repo, m))
		if err != nil {
			t.Fatalf("the config names %s: %v", m, err)
		}
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(m)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, m), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(root, "portico.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"config", "check", "--config", path}, &out, &errOut); err != nil || out.String() != "ok\n" {
		t.Fatalf("config check: %v %q %s\n%s", err, out.String(), errOut.String(), config)
	}
}

// TestREADMEConfig: every config the README shows passes `portico config
// check` as written (the README keeps none today; docs/configuration.md
// has the reference, TestConfigurationDoc).
func TestREADMEConfig(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	repo, _ := filepath.Abs("../..")
	for i, b := range yamlBlocks(string(raw)) {
		t.Run(string(rune('a'+i)), func(t *testing.T) {
			if strings.Contains(b, "${") {
				t.Fatalf("a README config needs the environment: %s", b)
			}
			checkConfigFile(t, repo, b)
		})
	}
}

// TestConfigurationDoc keeps docs/configuration.md true: its reference
// config passes `portico config check` as written (no environment needed,
// saved anywhere: its paths are its folder's) and, with the block of
// secrets from the environment, shows every field the config has; the
// secrets block passes with them set; its config check command is the one
// run here.
func TestConfigurationDoc(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	repo, _ := filepath.Abs("../..")
	if !strings.Contains(doc, "\nbin/portico config check --config portico.yaml\n") {
		t.Error("docs/configuration.md does not show `bin/portico config check --config portico.yaml`")
	}
	blocks := yamlBlocks(doc)
	if len(blocks) < 2 {
		t.Fatalf("found %d yaml blocks, want the reference and the secrets", len(blocks))
	}
	ref := blocks[0]
	if !strings.HasPrefix(ref, "listen: ") || strings.Contains(ref, "${") {
		t.Fatal("the first yaml block must be the reference, starting with listen: and needing no environment")
	}
	t.Run("reference", func(t *testing.T) { checkConfigFile(t, repo, ref) })
	t.Run("every field", func(t *testing.T) {
		// The secrets block shows what the reference leaves to the
		// environment (a key itself).
		have := map[string]bool{}
		for _, b := range blocks[:2] {
			var tree any
			if err := yaml.Unmarshal([]byte(b), &tree); err != nil {
				t.Fatal(err)
			}
			yamlPaths("", tree, have)
		}
		for _, f := range configFields("", reflect.TypeOf(config.Config{})) {
			if !have[f] {
				t.Errorf("the reference config has no %s", f)
			}
		}
	})
	t.Run("secrets", func(t *testing.T) {
		names := map[string]bool{}
		for _, m := range regexp.MustCompile(`\$\{(\w+)\}`).FindAllStringSubmatch(blocks[1], -1) {
			names[m[1]] = true
		}
		if len(names) == 0 {
			t.Fatal("the secrets block takes nothing from the environment")
		}
		for name := range names {
			v := "a-secret-from-the-environment-0123"
			t.Setenv(name, v)
		}
		checkConfigFile(t, repo, blocks[1])
	})
}

// yamlPaths adds the dotted paths of every key in v to have; a list's
// items add theirs under the list's path.
func yamlPaths(prefix string, v any, have map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			p := strings.TrimPrefix(prefix+"."+k, ".")
			have[p] = true
			yamlPaths(p, c, have)
		}
	case []any:
		for _, c := range v {
			yamlPaths(prefix, c, have)
		}
	}
}

// configFields returns the dotted YAML paths of every field of t, down to
// fields that are not structs of the module (maps and lists of scalars
// count as one).
func configFields(prefix string, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	// The config's own types, and the module's that it holds as they are
	// (portico.Limits), not the standard library's (time.Duration).
	if t.Kind() != reflect.Struct || !under(t.PkgPath(), "github.com/porticohq/portico") {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		p := strings.TrimPrefix(prefix+"."+tag, ".")
		out = append(out, p)
		out = append(out, configFields(p, t.Field(i).Type)...)
	}
	slices.Sort(out)
	return out
}
