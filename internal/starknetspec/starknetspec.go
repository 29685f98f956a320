// Package starknetspec checks JSON against the rollup spec's schemas
// (spec 0.8.1: the JSON-RPC API and the WebSocket API), for tests of the
// rollup devnet and of the gateway in front of it.
package starknetspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The spec files, in a directory Load is given.
const (
	APIFile = "starknet_api_openrpc_v0.8.1.json"
	WSFile  = "starknet_ws_api_v0.8.1.json"
)

// Unwrapped returns the component schemas of file (APIFile or WSFile) that
// the spec wraps in {"schema": …} and Load checks by their body.
func (s *WS) Unwrapped(file string) []string { return s.unwrapped[file] }

// The WebSocket spec refers to the main one as ./api/starknet_api_openrpc.json;
// both are registered under these addresses so that its $refs resolve.
const (
	specBase   = "https://portico.test/testdata/"
	wsSpecURL  = specBase + "starknet_ws_api_v0.8.1.json"
	apiSpecURL = specBase + "api/starknet_api_openrpc.json"
)

// WS compiles the WebSocket spec's schemas: each notification's
// result, each subscribe method's result, and SUBSCRIPTION_ID.
type WS struct {
	mu      sync.Mutex
	c       *jsonschema.Compiler
	methods map[string]int
	cache   map[string]*jsonschema.Schema
	// unwrapped names the component schemas whose body the spec wraps in
	// {"schema": …}, by document.
	unwrapped map[string][]string
}

// Load reads and registers the two spec files in dir.
func Load(dir string) (*WS, error) {
	s := &WS{c: jsonschema.NewCompiler(), methods: map[string]int{}, cache: map[string]*jsonschema.Schema{}, unwrapped: map[string][]string{}}
	for file, url := range map[string]string{APIFile: apiSpecURL, WSFile: wsSpecURL} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		s.unwrapped[file] = unwrapComponents(doc)
		if err := s.c.AddResource(url, doc); err != nil {
			return nil, err
		}
		if file == WSFile {
			var info struct{ Methods []struct{ Name string } }
			if err := json.Unmarshal(raw, &info); err != nil {
				return nil, err
			}
			for i, m := range info.Methods {
				s.methods[m.Name] = i
			}
		}
	}
	return s, nil
}

// unwrapComponents fixes two schemas of spec 0.8.1 that are written as
// {"schema": {…}} (SUBSCRIPTION_ID in the WebSocket spec, TXN_WITH_HASH in
// the main one). As JSON Schema such a wrapper constrains nothing, so a
// number would pass as a subscription id, and a transaction hash would
// match both branches of the pending-transactions result's oneOf and fail
// it. The body is what the spec means; it is checked instead.
func unwrapComponents(doc any) []string {
	comps, _ := doc.(map[string]any)["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	var names []string
	for name, v := range schemas {
		m, _ := v.(map[string]any)
		inner, ok := m["schema"]
		if !ok {
			continue
		}
		if _, typed := m["type"]; typed {
			continue
		}
		schemas[name] = inner
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (s *WS) compile(ptr string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.cache[ptr]; ok {
		return sch, nil
	}
	sch, err := s.c.Compile(wsSpecURL + "#" + ptr)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", ptr, err)
	}
	s.cache[ptr] = sch
	return sch, nil
}

func validateJSON(sch *jsonschema.Schema, raw []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// CheckNotification validates a notification's subscription id against
// SUBSCRIPTION_ID and its result against the method's result param.
func (s *WS) CheckNotification(method string, id, result []byte) error {
	i, ok := s.methods[method]
	if !ok {
		return fmt.Errorf("no method %s in the WebSocket spec", method)
	}
	sch, err := s.compile("/methods/" + strconv.Itoa(i) + "/params/1/schema")
	if err != nil {
		return err
	}
	if err := validateJSON(sch, result); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	return s.CheckID(id)
}

// CheckID validates a subscription id.
func (s *WS) CheckID(id []byte) error {
	sch, err := s.compile("/components/schemas/SUBSCRIPTION_ID")
	if err != nil {
		return err
	}
	return validateJSON(sch, id)
}

// CheckResult validates a WebSocket method's result.
func (s *WS) CheckResult(method string, result []byte) error {
	if rest, ok := strings.CutPrefix(method, "rollup_"); ok {
		method = "starknet_" + rest
	}
	i, ok := s.methods[method]
	if !ok {
		return fmt.Errorf("no method %s in the WebSocket spec", method)
	}
	sch, err := s.compile("/methods/" + strconv.Itoa(i) + "/result/schema")
	if err != nil {
		return err
	}
	return validateJSON(sch, result)
}
