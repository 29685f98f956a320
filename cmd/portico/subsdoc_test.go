package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families"
)

// TestSubscriptionsDoc keeps docs/subscriptions.md's cost table true: a
// row per family and kind with the family table's costs, and no row the
// tables do not have.
func TestSubscriptionsDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/subscriptions.md")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range families.All() {
		subs := f.Table(true).Subscriptions
		for _, s := range subs.Methods {
			for kind, cost := range s.NotificationCost {
				row := fmt.Sprintf("| %s | %s | %d | %d |", f.Name, kind, s.Cost, cost)
				want[row] = true
				if !strings.Contains(string(doc), row) {
					t.Errorf("docs/subscriptions.md has no row %q", row)
				}
			}
		}
	}
	for _, line := range strings.Split(string(doc), "\n") {
		f := strings.Split(line, "|")
		if len(f) == 6 && strings.TrimSpace(f[1]) != "family" && !strings.HasPrefix(strings.TrimSpace(f[1]), "---") && !want[line] {
			if _, err := families.Get(familyOf(f[1])); err == nil {
				t.Errorf("docs/subscriptions.md row %q is not in the tables", line)
			}
		}
	}
}

func familyOf(cell string) portico.Family { return portico.Family(strings.TrimSpace(cell)) }
