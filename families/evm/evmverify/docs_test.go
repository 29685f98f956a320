package evmverify_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNamesExist keeps docs/verify.md true to the code: every Go name
// it shows in backticks (a function, a type, a Type.Method, a Fuzz or
// Benchmark target) exists in verify, families/starknet/starkproof or starkhash.
func TestDocsNamesExist(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/verify.md")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	// The gateway's part (issue 27) is in network, upstream and cmd/portico.
	for _, dir := range []string{".", "../../starknet/starkproof", "../../starknet/starkhash", "../../starknet/starkblock", "../../starknet/starkverify", "../../../network", "../../../network/verify", "../../../network/upstream", "../../../cmd/portico"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					name := d.Name.Name
					if d.Recv != nil && len(d.Recv.List) == 1 {
						typ := d.Recv.List[0].Type
						if s, ok := typ.(*ast.StarExpr); ok {
							typ = s.X
						}
						if id, ok := typ.(*ast.Ident); ok {
							name = id.Name + "." + name
						}
					}
					names[name] = true
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							names[s.Name.Name] = true
							if st, ok := s.Type.(*ast.StructType); ok {
								for _, f := range st.Fields.List {
									for _, n := range f.Names {
										names[s.Name.Name+"."+n.Name] = true
									}
								}
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								names[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	// A backticked Go name: Upper, Type.Method, with an optional call.
	re := regexp.MustCompile("`(?:starkproof\\.)?([A-Z][A-Za-z0-9]*(?:\\.[A-Z][A-Za-z0-9]*)?)(?:\\([^`]*\\))?`")
	checked := 0
	for _, m := range re.FindAllStringSubmatch(string(doc), -1) {
		name := m[1]
		if strings.ToUpper(name) == name || name == "Error" { // ERC-20, RLP; Solidity's Error(string)
			continue
		}
		if !names[name] {
			t.Errorf("docs/verify.md names %s, which is not in the code", name)
		}
		checked++
	}
	if checked < 30 {
		t.Fatalf("only %d names checked", checked)
	}
}
