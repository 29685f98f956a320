package rpccompat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// specURL is the address the spec is registered under, so that its
// "#/components/schemas/…" references resolve.
const specURL = "https://portico.test/execution-apis/openrpc.json"

// Spec is the execution-apis OpenRPC document (the form specgen writes
// without -deref): its methods, and their result schemas compiled on first
// use.
type Spec struct {
	methods map[string]int // name → index in the document's methods
	names   []string

	mu      sync.Mutex
	c       *jsonschema.Compiler
	schemas map[string]*jsonschema.Schema
}

// LoadSpec reads an OpenRPC document.
func LoadSpec(path string) (*Spec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Methods []struct{ Name string } `json:"methods"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("rpccompat: %s: %w", path, err)
	}
	if len(head.Methods) == 0 {
		return nil, fmt.Errorf("rpccompat: %s lists no methods", path)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("rpccompat: %s: %w", path, err)
	}
	c := jsonschema.NewCompiler()
	// The execution-apis schemas are written against draft 2019-09, which
	// hive's simulator applies too.
	c.DefaultDraft(jsonschema.Draft2019)
	if err := c.AddResource(specURL, doc); err != nil {
		return nil, err
	}
	s := &Spec{methods: map[string]int{}, c: c, schemas: map[string]*jsonschema.Schema{}}
	for i, m := range head.Methods {
		s.methods[m.Name] = i
		s.names = append(s.names, m.Name)
	}
	return s, nil
}

// Methods returns the names of the spec's methods, in the document's order.
func (s *Spec) Methods() []string { return s.names }

// CheckResult validates a decoded result (from encoding/json with numbers
// as json.Number, as the validator reads them) against method's result
// schema.
func (s *Spec) CheckResult(method string, result any) error {
	sch, err := s.schema(method)
	if err != nil {
		return err
	}
	if err := sch.Validate(result); err != nil {
		return fmt.Errorf("result does not match the %s result schema: %v", method, err)
	}
	return nil
}

func (s *Spec) schema(method string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.schemas[method]; ok {
		return sch, nil
	}
	i, ok := s.methods[method]
	if !ok {
		return nil, fmt.Errorf("rpccompat: no method %s in the spec", method)
	}
	sch, err := s.c.Compile(specURL + "#/methods/" + strconv.Itoa(i) + "/result/schema")
	if err != nil {
		return nil, fmt.Errorf("rpccompat: %s result schema: %w", method, err)
	}
	s.schemas[method] = sch
	return sch, nil
}
