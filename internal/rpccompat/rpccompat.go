// Package rpccompat replays the Ethereum RPC conformance corpus (the rpc-compat
// tests of ethereum/execution-apis, kept in testdata/execution-apis) against
// any JSON-RPC endpoint and judges the answers as hive's rpc-compat simulator
// does: error messages are not compared, numbers compare as numbers, and a
// case marked speconly is checked against its method's result schema in the
// spec instead of the recorded answer.
//
// A newer corpus is one copy away: replace testdata/execution-apis/tests with
// the execution-apis tests/ folder and openrpc.json with the spec built from
// the same commit (testdata/execution-apis/README.md).
package rpccompat

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxLine bounds one line of a case file; recorded traces run to megabytes.
const maxLine = 32 << 20

// Case is one conformance case: the requests to send, in order, each with
// the answer recorded from a reference node.
type Case struct {
	// Name is the case's path under the corpus without ".io", such as
	// "eth_getBalance/get-balance-blockhash".
	Name string
	// Method is the method the case is about: its folder's name.
	Method string
	// Comment is the case's header comment.
	Comment string
	// SpecOnly marks a case whose recorded answer is one valid example:
	// a successful answer is checked against the method's result schema.
	SpecOnly bool
	// Exchanges are the case's requests and recorded answers.
	Exchanges []Exchange
}

// Exchange is one request and the answer recorded for it.
type Exchange struct {
	// Method is the request's method.
	Method            string
	Request, Response []byte
}

// Load reads every case under dir (dir/<method>/<name>.io), sorted by name,
// the order hive runs them in: state a case changes (a transaction sent to
// the pool) is there for the cases after it.
func Load(dir string) ([]Case, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.io"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("rpccompat: no cases under %s", dir)
	}
	slices.Sort(files)
	out := make([]Case, 0, len(files))
	for _, f := range files {
		name, _ := filepath.Rel(dir, f)
		c, err := readCase(f, strings.TrimSuffix(filepath.ToSlash(name), ".io"))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// readCase reads one .io file: header comments, then ">> request" and
// "<< answer" lines.
func readCase(path, name string) (Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return Case{}, err
	}
	defer f.Close()
	c := Case{Name: name, Method: filepath.Base(filepath.Dir(path))}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	header := true
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "//"):
			if !header {
				continue
			}
			text := strings.TrimPrefix(strings.TrimPrefix(line, "//"), " ")
			c.Comment += text + "\n"
			if strings.HasPrefix(text, "speconly:") {
				c.SpecOnly = true
			}
		case strings.HasPrefix(line, ">>"):
			header = false
			req := []byte(strings.TrimSpace(line[2:]))
			if !json.Valid(req) {
				return Case{}, fmt.Errorf("rpccompat: %s: request is not JSON", name)
			}
			var r struct{ Method string }
			_ = json.Unmarshal(req, &r)
			c.Exchanges = append(c.Exchanges, Exchange{Method: r.Method, Request: req})
		case strings.HasPrefix(line, "<<"):
			header = false
			if len(c.Exchanges) == 0 || c.Exchanges[len(c.Exchanges)-1].Response != nil {
				return Case{}, fmt.Errorf("rpccompat: %s: answer without a request", name)
			}
			resp := []byte(strings.TrimSpace(line[2:]))
			if !json.Valid(resp) {
				return Case{}, fmt.Errorf("rpccompat: %s: answer is not JSON", name)
			}
			c.Exchanges[len(c.Exchanges)-1].Response = resp
		default:
			return Case{}, fmt.Errorf("rpccompat: %s: line is neither a comment, a request nor an answer: %.60q", name, line)
		}
	}
	if err := sc.Err(); err != nil {
		return Case{}, fmt.Errorf("rpccompat: %s: %w", name, err)
	}
	if len(c.Exchanges) == 0 {
		return Case{}, fmt.Errorf("rpccompat: %s: no request", name)
	}
	return c, nil
}

// Judge compares got, the answer to the case's exchange i, with the
// recorded one as hive does. In a case marked speconly, an answer that is a
// result is checked against spec's result schema for the request's method
// instead. Otherwise the message of every error object present in both
// answers is ignored (top-level and nested ones, such as eth_simulateV1's
// per-call errors), and the rest must be equal as JSON values, numbers
// compared by value.
func (c Case) Judge(spec *Spec, i int, got []byte) error {
	ex := c.Exchanges[i]
	var g, w any
	if err := decode(got, &g); err != nil {
		return fmt.Errorf("answer is not JSON: %v", err)
	}
	if err := decode(ex.Response, &w); err != nil {
		return fmt.Errorf("recorded answer is not JSON: %v", err)
	}
	gm, _ := g.(map[string]any)
	if _, isErr := gm["error"]; c.SpecOnly && !isErr {
		if spec == nil {
			return errors.New("speconly case without a spec")
		}
		res, ok := gm["result"]
		if !ok {
			return errors.New("answer has neither result nor error")
		}
		return spec.CheckResult(ex.Method, res)
	}
	redactMessages(g, w)
	if path, ok := equal(g, w, "$"); !ok {
		return fmt.Errorf("answer differs from the recorded one at %s", path)
	}
	return nil
}

func decode(b []byte, v *any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// redactMessages deletes "message" from each "error" object found at the
// same place in both trees, without looking inside error objects.
func redactMessages(got, want any) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				continue
			}
			if k == "error" {
				we, wok := wv.(map[string]any)
				ge, gok := gv.(map[string]any)
				if wok && gok {
					_, wm := we["message"]
					_, gm := ge["message"]
					if wm && gm {
						delete(we, "message")
						delete(ge, "message")
					}
				}
				continue
			}
			redactMessages(gv, wv)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return
		}
		for i := range min(len(g), len(w)) {
			redactMessages(g[i], w[i])
		}
	}
}

// equal compares two decoded JSON values, numbers by their float value as
// hive's diff does, and says where they first differ.
func equal(a, b any, path string) (string, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return path, false
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			yv, ok := y[k]
			if !ok {
				return path + "." + k, false
			}
			if p, ok := equal(x[k], yv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return path, false
		}
		for i := range x {
			if p, ok := equal(x[i], y[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return path, false
		}
		xf, err1 := x.Float64()
		yf, err2 := y.Float64()
		if err1 == nil && err2 == nil {
			return path, xf == yf || math.IsNaN(xf) && math.IsNaN(yf)
		}
		return path, x == y
	default:
		return path, a == b
	}
}
