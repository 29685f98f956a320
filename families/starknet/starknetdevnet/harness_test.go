package starknetdevnet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const specFile = "testdata/starknet_api_openrpc_v0.8.1.json"

// specSchemas compiles each method's result schema from the OpenRPC
// document by JSON pointer, so $refs to #/components/schemas resolve.
type specSchemas struct {
	mu      sync.Mutex
	c       *jsonschema.Compiler
	index   map[string]int
	results map[string]*jsonschema.Schema
}

func loadSpec(t testing.TB) *specSchemas {
	t.Helper()
	raw, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Methods []struct{ Name string }
	}
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://portico.test/"+specFile, doc); err != nil {
		t.Fatal(err)
	}
	s := &specSchemas{c: c, index: map[string]int{}, results: map[string]*jsonschema.Schema{}}
	for i, m := range info.Methods {
		s.index[m.Name] = i
	}
	return s
}

// validate checks a result against the method's result schema.
func (s *specSchemas) validate(t testing.TB, method string, result json.RawMessage) {
	t.Helper()
	if err := s.check(method, result); err != nil {
		t.Errorf("%s result does not match spec %s:\n%s\n%v", method, SpecVersion, result, err)
	}
}

// check validates a result against the method's result schema.
func (s *specSchemas) check(method string, result json.RawMessage) error {
	if rest, ok := strings.CutPrefix(method, "rollup_"); ok {
		method = "starknet_" + rest
	}
	s.mu.Lock()
	sch, ok := s.results[method]
	if !ok {
		i, known := s.index[method]
		if !known {
			s.mu.Unlock()
			return fmt.Errorf("no method %s in the spec", method)
		}
		var err error
		sch, err = s.c.Compile("https://portico.test/" + specFile + "#/methods/" + strconv.Itoa(i) + "/result/schema")
		if err != nil {
			s.mu.Unlock()
			return fmt.Errorf("compile %s result schema: %w", method, err)
		}
		s.results[method] = sch
	}
	s.mu.Unlock()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(result))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

func asCoded(err error, target *interface{ ErrorCode() int }) bool { return errors.As(err, target) }

// client talks JSON-RPC to a devnet over real HTTP.
type client struct {
	t    testing.TB
	url  string
	http *http.Client
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// call sends one request; params is raw JSON ("" for none).
func (c *client) call(method, params string) (json.RawMessage, *rpcError) {
	c.t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `"`
	if params != "" {
		body += `,"params":` + params
	}
	body += "}"
	var r rpcResponse
	c.post(body, &r)
	return r.Result, r.Error
}

// must calls and fails the test on an error.
func (c *client) must(method, params string) json.RawMessage {
	c.t.Helper()
	res, err := c.call(method, params)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, params, err)
	}
	return res
}

func (c *client) post(body string, out any) {
	c.t.Helper()
	resp, err := c.http.Post(c.url, "application/json", bytes.NewBufferString(body))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		c.t.Fatalf("response %q: %v", raw, err)
	}
}

// startDevnet starts a devnet that seals only on demand, unless cfg says
// otherwise, and closes it when the test ends.
func startDevnet(t testing.TB, cfg Config) (*Devnet, *client) {
	t.Helper()
	if cfg.BlockPeriod == 0 {
		cfg.BlockPeriod = -1
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d, &client{t: t, url: d.HTTPURL(), http: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
}

// buildChain runs traffic rounds and seals blocks.
func buildChain(t testing.TB, d *Devnet, blocks, rounds int) {
	t.Helper()
	for range blocks {
		for range rounds {
			if err := d.GenerateTraffic(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.SealBlock(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor polls until cond holds, failing after a generous deadline.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func decodeJSON[T any](t testing.TB, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}
