package rpccompat_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/internal/rpccompat"
)

const corpus = "../testdata/execution-apis"

func loadSpec(t *testing.T) *rpccompat.Spec {
	t.Helper()
	spec, err := rpccompat.LoadSpec(filepath.Join(corpus, "openrpc.json"))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestJudge: hive's rules, each with a case that must pass and one that
// must fail.
func TestJudge(t *testing.T) {
	spec := loadSpec(t)
	plain := rpccompat.Case{Name: "eth_getBalance/x", Method: "eth_getBalance"}
	feeHistory := rpccompat.Case{Name: "eth_feeHistory/fee-history", Method: "eth_feeHistory", SpecOnly: true}
	simulate := rpccompat.Case{Name: "eth_simulateV1/x", Method: "eth_simulateV1"}
	cases := []struct {
		name      string
		c         rpccompat.Case
		got, want string
		ok        bool
	}{
		{"same result", plain, `{"jsonrpc":"2.0","id":1,"result":"0x1"}`, `{"id":1,"jsonrpc":"2.0","result":"0x1"}`, true},
		{"other result", plain, `{"jsonrpc":"2.0","id":1,"result":"0x2"}`, `{"jsonrpc":"2.0","id":1,"result":"0x1"}`, false},
		{"other id", plain, `{"jsonrpc":"2.0","id":2,"result":"0x1"}`, `{"jsonrpc":"2.0","id":1,"result":"0x1"}`, false},
		{"numbers by value", plain, `{"jsonrpc":"2.0","id":1,"result":[1.0,2e0]}`, `{"jsonrpc":"2.0","id":1,"result":[1,2]}`, true},
		{"extra member", plain, `{"jsonrpc":"2.0","id":1,"result":{"a":1,"b":2}}`, `{"jsonrpc":"2.0","id":1,"result":{"a":1}}`, false},
		{"error message ignored", plain, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"mine"}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"theirs"}}`, true},
		{"error code compared", plain, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}`, false},
		{"error data compared", plain, `{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"x","data":"0x01"}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":3,"message":"x","data":"0x02"}}`, false},
		{"error instead of result", plain, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`, `{"jsonrpc":"2.0","id":1,"result":"0x1"}`, false},
		{"nested error message ignored", simulate, `{"jsonrpc":"2.0","id":1,"result":[{"calls":[{"error":{"code":3,"message":"a"},"status":"0x0"}]}]}`, `{"jsonrpc":"2.0","id":1,"result":[{"calls":[{"error":{"code":3,"message":"b"},"status":"0x0"}]}]}`, true},
		{"nested error code compared", simulate, `{"jsonrpc":"2.0","id":1,"result":[{"calls":[{"error":{"code":4,"message":"a"}}]}]}`, `{"jsonrpc":"2.0","id":1,"result":[{"calls":[{"error":{"code":3,"message":"a"}}]}]}`, false},
		{"speconly valid", feeHistory, `{"jsonrpc":"2.0","id":1,"result":{"oldestBlock":"0x2","baseFeePerGas":["0x1","0x1"],"gasUsedRatio":[0.5]}}`, `{"jsonrpc":"2.0","id":1,"result":{"oldestBlock":"0x1b"}}`, true},
		{"speconly invalid", feeHistory, `{"jsonrpc":"2.0","id":1,"result":{"oldestBlock":27}}`, `{"jsonrpc":"2.0","id":1,"result":{"oldestBlock":"0x1b"}}`, false},
		{"speconly error compared", feeHistory, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`, `{"jsonrpc":"2.0","id":1,"result":{"oldestBlock":"0x1b"}}`, false},
		{"not JSON", plain, `{"jsonrpc":`, `{"jsonrpc":"2.0","id":1,"result":"0x1"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.c.Exchanges = []rpccompat.Exchange{{Method: tc.c.Method, Request: []byte(`{}`), Response: []byte(tc.want)}}
			err := tc.c.Judge(spec, 0, []byte(tc.got))
			if (err == nil) != tc.ok {
				t.Fatalf("Judge = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestLoad reads the corpus: every case has a method, requests with
// answers, and the order hive runs them in.
func TestLoad(t *testing.T) {
	cases, err := rpccompat.Load(filepath.Join(corpus, "tests"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 200 {
		t.Fatalf("%d cases", len(cases))
	}
	spec := loadSpec(t)
	inSpec := map[string]bool{}
	for _, m := range spec.Methods() {
		inSpec[m] = true
	}
	specOnly := 0
	for i, c := range cases {
		if i > 0 && cases[i-1].Name+".io" >= c.Name+".io" { // file order, as hive walks
			t.Fatalf("%s before %s", cases[i-1].Name, c.Name)
		}
		if !strings.HasPrefix(c.Name, c.Method+"/") || !inSpec[c.Method] {
			t.Errorf("%s: method %q", c.Name, c.Method)
		}
		for _, ex := range c.Exchanges {
			if len(ex.Request) == 0 || len(ex.Response) == 0 || !inSpec[ex.Method] {
				t.Errorf("%s: an exchange lacks its request, answer or method (%q)", c.Name, ex.Method)
			}
		}
		if c.SpecOnly {
			specOnly++
		}
	}
	if specOnly == 0 {
		t.Error("no speconly case found")
	}

	dir := t.TempDir()
	for name, body := range map[string]string{
		"answer first":   "<< {}\n",
		"stray line":     ">> {}\nnonsense\n",
		"invalid answer": ">> {}\n<< {\n",
		"no request":     "// a comment only\n",
	} {
		sub := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(sub, "m"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "m", "c.io"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := rpccompat.Load(sub); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}
