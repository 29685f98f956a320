package families_test

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/gateway"
)

// TestMethodCostsDoc keeps the cost tables of docs/methods.md true: for
// each family, the table lists exactly the methods a network can serve
// (every optional group enabled), each with the cost it has by default and
// whether it is served by default or by which group.
func TestMethodCostsDoc(t *testing.T) {
	raw, err := os.ReadFile("../docs/methods.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	costs := doc[strings.Index(doc, "\n## Costs\n"):]
	costs = costs[:strings.Index(costs[1:], "\n## ")+1]
	for _, f := range families.All() {
		t.Run(string(f.Name), func(t *testing.T) {
			tb := f.Table(false)
			groups := slices.Sorted(maps.Keys(tb.Optional))
			all, err := gateway.NewMethods(tb, gateway.MethodsConfig{Enable: groups})
			if err != nil {
				t.Fatal(err)
			}
			def, err := gateway.NewMethods(tb, gateway.MethodsConfig{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			for _, name := range all.Names() {
				served := "default"
				if def.Lookup(name) == nil {
					for _, g := range groups {
						if slices.Contains(tb.Optional[g], name) {
							served = g
						}
					}
				}
				want[name] = fmt.Sprintf("%d | %s", all.Lookup(name).Cost, served)
			}
			got := docTable(t, costs, "### "+string(f.Name)+"\n")
			for name, w := range want {
				if g, ok := got[name]; !ok {
					t.Errorf("docs/methods.md lacks %s (%s)", name, w)
				} else if g != w {
					t.Errorf("docs/methods.md: %s is %q, the table says %q", name, g, w)
				}
			}
			for name := range got {
				if _, ok := want[name]; !ok {
					t.Errorf("docs/methods.md lists %s, which the %s family does not serve", name, f.Name)
				}
			}
		})
	}
}

// docTable reads the rows "| `name` | cost | served | figure |" of the
// table under heading, as "cost | served" by name.
func docTable(t *testing.T, doc, heading string) map[string]string {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("docs/methods.md has no %q under Costs", strings.TrimSpace(heading))
	}
	out := map[string]string{}
	for _, line := range strings.Split(doc[i+len(heading):], "\n") {
		if strings.HasPrefix(line, "### ") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) != 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		cost, err := strconv.Atoi(strings.TrimSpace(cells[2]))
		if err != nil {
			t.Errorf("%s: cost %q", name, cells[2])
		}
		if _, dup := out[name]; dup {
			t.Errorf("%s is listed twice", name)
		}
		out[name] = fmt.Sprintf("%d | %s", cost, strings.TrimSpace(cells[3]))
	}
	if len(out) == 0 {
		t.Fatalf("no rows under %q", strings.TrimSpace(heading))
	}
	return out
}
