package families_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/porticohq/portico/families"
)

// genericRooms are the folders that hold only interfaces to the
// families: no code in them (tests aside, which drive one family or
// another) compares a family's name.
var genericRooms = []string{"gateway", "network", "config", "metering", "server", "cmd/portico"}

// TestNoFamilyNameCompared keeps the family rule (issue 34): outside the
// family folders, no comparison (==, !=) and no case clause of a switch
// names a family, by a string literal equal to a registered family's
// name ("evm"), by a conversion of one (portico.Family("evm")), or by a
// family package's Family constant (evm.Family). What differs between
// families is a hook of the family (families.Family) or a row of its
// table, never a test of its name. Literals that are not compared (flag
// names, help text, log lines) pass.
func TestNoFamilyNameCompared(t *testing.T) {
	names := map[string]bool{}
	for _, n := range families.Names() {
		names[string(n)] = true
	}
	if len(names) < 3 {
		t.Fatalf("only %d families registered", len(names))
	}
	checked := 0
	for _, room := range genericRooms {
		err := filepath.WalkDir(filepath.Join("..", room), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			for _, bad := range familyComparisons(t, path, names) {
				t.Errorf("%s compares a family's name (%s): make it a hook of the family (families.Family) or a row of its table", bad, room)
			}
			checked++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d files", checked)
	}
}

// familyComparisons returns the positions in file path where a family's
// name is compared.
func familyComparisons(t *testing.T, path string, names map[string]bool) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	// familyPkgs are the local names of imported family packages
	// (families/evm and the like), whose Family constant names a family.
	familyPkgs := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		rest, ok := strings.CutPrefix(p, "github.com/porticohq/portico/families/")
		if !ok || strings.Contains(rest, "/") || !names[rest] {
			continue
		}
		local := rest
		if imp.Name != nil {
			local = imp.Name.Name
		}
		familyPkgs[local] = true
	}
	var isName func(e ast.Expr) bool
	isName = func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			return e.Kind == token.STRING && err == nil && names[s]
		case *ast.ParenExpr:
			return isName(e.X)
		case *ast.CallExpr: // a conversion: portico.Family("evm"), string(evm.Family)
			return len(e.Args) == 1 && isName(e.Args[0])
		case *ast.SelectorExpr:
			id, ok := e.X.(*ast.Ident)
			return ok && familyPkgs[id.Name] && e.Sel.Name == "Family"
		}
		return false
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			if (n.Op == token.EQL || n.Op == token.NEQ) && (isName(n.X) || isName(n.Y)) {
				out = append(out, fset.Position(n.Pos()).String())
			}
		case *ast.CaseClause:
			for _, e := range n.List {
				if isName(e) {
					out = append(out, fset.Position(e.Pos()).String())
				}
			}
		}
		return true
	})
	return out
}

// TestFamilyComparisonsFound: the check finds each way of comparing a
// family's name, and passes what only names one.
func TestFamilyComparisonsFound(t *testing.T) {
	src := `package x

import (
	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	sol "github.com/porticohq/portico/families/solana"
)

func f(s string, fam portico.Family) {
	if s == "evm" {} // 1
	if "starknet" != s {} // 2
	if fam == portico.Family("solana") {} // 3
	if fam == evm.Family {} // 4
	if sol.Family == fam {} // 5
	switch s {
	case "a", "starknet": // 6
	}
	switch fam {
	case evm.Family: // 7
	}
	_ = "evm" // named, not compared
	_ = map[string]bool{"solana": true}
	if s == "evmx" || s == "" {}
}
`
	dir := t.TempDir()
	path := filepath.Join(dir, "x.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{"evm": true, "solana": true, "starknet": true}
	got := familyComparisons(t, path, names)
	if len(got) != 7 {
		t.Fatalf("found %d comparisons, want 7: %v", len(got), got)
	}
}

// TestAddingAFamilyChecklist keeps the checklist of docs/architecture.md's
// "Adding a family" true: every path it names exists, every
// Family.<Hook> it names is a field of families.Family, and every
// registered family provides every hook the checklist calls required
// (and, for the verifier, either a Verifier or the reason it has none).
func TestAddingAFamilyChecklist(t *testing.T) {
	doc, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Adding a family\n")
	if !ok {
		t.Fatal(`docs/architecture.md has no "## Adding a family" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	items := regexp.MustCompile(`(?m)^\d+\. `).FindAllStringIndex(section, -1)
	if len(items) < 5 {
		t.Fatalf("the checklist has %d items", len(items))
	}
	fields := familyFields(t)
	tick := regexp.MustCompile("`([^`]+)`")
	hooks := 0
	for _, m := range tick.FindAllStringSubmatch(section, -1) {
		name := m[1]
		switch {
		case strings.HasPrefix(name, "Family."):
			hook := strings.TrimPrefix(name, "Family.")
			if !fields[hook] {
				t.Errorf("the checklist names %s, which is not a field of families.Family", name)
			}
			hooks++
		case strings.Contains(name, "/") && !strings.Contains(name, "<") && !strings.Contains(name, " "):
			if _, err := os.Stat(filepath.Join("..", strings.TrimSuffix(name, "/..."))); err != nil {
				t.Errorf("the checklist names %s, which does not exist", name)
			}
		}
	}
	if hooks < 5 {
		t.Errorf("the checklist names %d hooks of families.Family", hooks)
	}
	for _, f := range families.All() {
		if f.Name == "" || f.Network == "" || f.Probe == "" || f.Table == nil || f.NewDevnet == nil {
			t.Errorf("family %q lacks a required hook (Name, Network, Probe, Table, NewDevnet)", f.Name)
			continue
		}
		if (f.Verifier == nil) == (f.NoVerify == "") {
			t.Errorf("family %s: want either a Verifier or NoVerify, the reason it has none", f.Name)
		}
		if f.Verifier != nil && f.Verify.Checkpoint == nil {
			t.Errorf("family %s verifies but says no form of its verify_checkpoint", f.Name)
		}
		table := f.Table(false)
		if table.Family != f.Name {
			t.Errorf("family %s: its table says family %q", f.Name, table.Family)
		}
		if table.Chain.Heads == nil || table.Chain.Identity == nil || table.Chain.Header == nil {
			t.Errorf("family %s: its table's Chain does not say how to read heads", f.Name)
		}
	}
}

// familyFields are the field names of families.Family, read from its
// source.
func familyFields(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "families.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Family" {
			return true
		}
		for _, fl := range ts.Type.(*ast.StructType).Fields.List {
			for _, id := range fl.Names {
				out[id.Name] = true
			}
		}
		return false
	})
	return out
}
