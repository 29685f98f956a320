package mcp

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resources: the networks a key may use, and each network's method table
// with its costs, as JSON an agent can read before it calls.
const (
	networksURI    = "portico://networks"
	methodsPrefix  = "portico://networks/"
	methodsSuffix  = "/methods"
	methodsPattern = "portico://networks/{name}/methods"
)

func methodsURI(network string) string { return methodsPrefix + network + methodsSuffix }

func (s *Server) addResources() {
	s.srv.AddResource(&sdk.Resource{
		URI: networksURI, Name: "networks", Title: "Networks", MIMEType: "application/json",
		Description: "The networks this API key may use: name, chain family, heads, and the URI of each one's method table.",
	}, s.readNetworks)
	s.srv.AddResourceTemplate(&sdk.ResourceTemplate{
		URITemplate: methodsPattern, Name: "methods", Title: "Method table", MIMEType: "application/json",
		Description: "The JSON-RPC methods this API key may call on one network, with the credits each call costs.",
	}, s.readMethods)
}

func (s *Server) readNetworks(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	id, _, ok := identity(req.Extra)
	if !ok {
		return nil, sdk.ResourceNotFoundError(req.Params.URI)
	}
	type entry struct {
		Name      string `json:"name"`
		Family    string `json:"family"`
		Latest    uint64 `json:"latest,omitempty"`
		Finalized uint64 `json:"finalized,omitempty"`
		Methods   string `json:"methods"`
	}
	out := []entry{}
	for _, n := range s.b.Networks(id) {
		e := entry{Name: n.Name, Family: string(n.Family), Methods: methodsURI(n.Name)}
		if n.HeadsKnown {
			e.Latest, e.Finalized = n.Heads.Latest, n.Heads.Finalized
		}
		out = append(out, e)
	}
	return jsonResource(req.Params.URI, out)
}

func (s *Server) readMethods(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	name, ok := strings.CutPrefix(uri, methodsPrefix)
	if ok {
		name, ok = strings.CutSuffix(name, methodsSuffix)
	}
	id, _, known := identity(req.Extra)
	if !ok || !known {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	for _, n := range s.b.Networks(id) {
		if n.Name == name {
			return jsonResource(uri, map[string]any{"network": n.Name, "family": n.Family, "methods": n.Methods})
		}
	}
	return nil, sdk.ResourceNotFoundError(uri)
}

func jsonResource(uri string, v any) (*sdk.ReadResourceResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}
