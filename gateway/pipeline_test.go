package gateway_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// requestPath are the files a call goes through from its body to its
// answer: the gateway's pipeline, the network's call path and the
// metering of calls (issue 34).
var requestPath = []string{
	"dispatch.go",
	"pipeline.go",
	"../network/call.go",
	"../network/logcost.go",
	"../network/charge.go",
	"../metering/meter.go",
	"../metering/calls.go",
	"../metering/logprice.go",
	"../metering/prepaid.go",
	"../metering/settle.go",
}

// maxFunctionLines is the most lines a function on the request path may
// span, its signature and closing brace included.
const maxFunctionLines = 100

// TestRequestPathFunctionsShort keeps the request path readable as named
// stages: no function (or method) in its files is longer than
// maxFunctionLines.
func TestRequestPathFunctionsShort(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range requestPath {
		f, err := parser.ParseFile(fset, filepath.FromSlash(name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		funcs := 0
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			funcs++
			lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if lines > maxFunctionLines {
				t.Errorf("%s: %s is %d lines, over %d: split it into named steps", name, funcName(fd), lines, maxFunctionLines)
			}
		}
		if funcs == 0 {
			t.Errorf("%s: no functions: is the list of request-path files stale?", name)
		}
	}
}

// funcName is a function's name, with its receiver's type for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
