package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docBlocks returns the fenced blocks of a Markdown file with the given
// info string, in order.
func docBlocks(t *testing.T, file, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var cur *strings.Builder
	for _, l := range strings.SplitAfter(string(b), "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(l)
		}
	}
	return out
}

// TestDeployDocs keeps docs/deploy.md true: the chart's example values are
// the file the chart test renders, the several-machines config passes
// `portico config check`, and the files it tells the reader to use exist.
func TestDeployDocs(t *testing.T) {
	doc := filepath.Join(repoRoot, "docs", "deploy.md")
	yamls := docBlocks(t, doc, "yaml")
	example, err := os.ReadFile(filepath.Join(chartDir, "examples", "three-replicas.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var machines string
	found := false
	for _, y := range yamls {
		if y == string(example) {
			found = true
		}
		if strings.Contains(y, "${PORTICO_PG}") {
			machines = y
		}
	}
	if !found {
		t.Error("docs/deploy.md does not show helm/portico/examples/three-replicas.yaml as it is")
	}
	if machines == "" {
		t.Fatal("docs/deploy.md has no several-machines config")
	}
	file := filepath.Join(t.TempDir(), "portico.yaml")
	if err := os.WriteFile(file, []byte(machines), 0o644); err != nil {
		t.Fatal(err)
	}
	configCheck(t, releaseBinary(t).Binary, file, []string{
		"PORTICO_PG=postgres://portico:secret@pg.internal:5432/portico",
		"PORTICO_REDIS=redis://redis.internal:6379/0",
		"PORTICO_ADMIN_TOKEN=" + strings.Repeat("a", 32),
	})
	for _, f := range []string{"Containerfile", ".goreleaser.yaml", "deploy/systemd/portico.service", "deploy/compose/compose.yaml", "deploy/compose/portico.yaml", "deploy/grafana/portico.json", "deploy/helm/portico/examples/three-replicas.yaml"} {
		if _, err := os.Stat(filepath.Join(repoRoot, f)); err != nil {
			t.Errorf("docs/deploy.md names %s: %v", f, err)
		}
	}
}
