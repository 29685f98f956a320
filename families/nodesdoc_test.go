package families_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/network/upstream"
)

// answersTable renders the table of node words docs/nodes.md shows: the
// hosted providers' rules, then each family's, in the order they are
// matched.
func answersTable() string {
	var b strings.Builder
	b.WriteString("| family | code | words | class | source |\n|---|---|---|---|---|\n")
	row := func(family string, r portico.AnswerRule) {
		code, words := "any", "any"
		if r.Code != 0 {
			code = fmt.Sprint(r.Code)
		}
		if r.Words != "" {
			words = "`" + r.Words + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", family, code, words, r.Class, strings.ReplaceAll(r.Source, "|", "\\|"))
	}
	for _, r := range upstream.ProviderAnswers {
		row("all", r)
	}
	for _, f := range families.All() {
		for _, r := range f.Table(false).Chain.Answers {
			row(string(f.Name), r)
		}
	}
	return b.String()
}

// TestNodesDoc: docs/nodes.md shows every rule the pool classifies node
// answers by, and no other. PORTICO_UPDATE_DOCS=1 rewrites the table.
func TestNodesDoc(t *testing.T) {
	const path = "../docs/nodes.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	const begin, end = "<!-- node words: begin -->\n", "<!-- node words: end -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no node words table between %q and %q", path, begin, end)
	}
	want := answersTable()
	if got := doc[i+len(begin) : j]; got != want {
		if os.Getenv("PORTICO_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's node words table is not the code's; PORTICO_UPDATE_DOCS=1 go test ./families -run TestNodesDoc rewrites it", path)
	}
}
