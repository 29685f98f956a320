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

// addPrompts adds the prompts: a plan an agent can start from, in the
// tools' own terms.
func (s *Server) addPrompts() {
	s.srv.AddPrompt(&sdk.Prompt{
		Name: "inspect_address", Title: "Inspect an address",
		Description: "Look an address up on a network: its balance, and its recent activity by the network's family.",
		Arguments: []*sdk.PromptArgument{
			{Name: "network", Description: "the network's name, as list_networks gives it", Required: true},
			{Name: "address", Description: "the account or contract address", Required: true},
		},
	}, func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		network, address := req.Params.Arguments["network"], req.Params.Arguments["address"]
		text := "Inspect the address " + address + " on the network " + network + " through Portico's tools. " +
			"First call list_networks to learn the network's family and latest block. " +
			"Then, on an evm network: get_balance, then get_logs with the address for its events over the last 1000 blocks " +
			"(narrow the range if it is refused), and summarize what the address is and does. " +
			"On a solana network: get_account and get_balance, then get_signatures_for_address and get_transaction for the newest few. " +
			"On a starknet network: get_events with the address, and rpc_call starknet_getNonce and starknet_getClassHashAt. " +
			"Report each tool's credits, and stop if the key's balance runs low."
		return &sdk.GetPromptResult{Description: "inspect " + address + " on " + network,
			Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: text}}}}, nil
	})
}
