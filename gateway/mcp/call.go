package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porticohq/portico"
)

// rpc is one JSON-RPC call a tool makes.
type rpc struct {
	Method string
	Params any // marshalled as the call's params; json.RawMessage as is
}

// rpcError is a JSON-RPC error object of an answer.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// served is what the gateway answered to a tool's calls.
type served struct {
	network string
	methods []string
	results []json.RawMessage
	ans     Answer
}

// toolError is a tool's failure as the agent sees it: the result is an
// error, its text says why, and its structured content carries the
// JSON-RPC error (code, message, data) where there was one.
type toolError struct {
	msg string
	rpc *rpcError
}

func (e *toolError) Error() string { return e.msg }

func failf(format string, args ...any) *toolError {
	return &toolError{msg: fmt.Sprintf(format, args...)}
}

// exchange sends calls to network as one body (a batch when there are
// several) for the caller of req, and returns their results in order. A
// refusal of the body, or a JSON-RPC error of any call, is a toolError
// that names the method and the gateway's reason.
func (s *Server) exchange(ctx context.Context, req *sdk.CallToolRequest, network string, calls ...rpc) (*served, error) {
	id, origin, ok := identity(req.Extra)
	if !ok {
		return nil, failf("no API key on this request")
	}
	body, err := encodeCalls(calls)
	if err != nil {
		return nil, failf("params: %v", err)
	}
	ans, err := s.b.Call(ctx, id, origin, network, body)
	if err != nil {
		return nil, failf("refused: %v", err)
	}
	out := &served{network: network, ans: ans, results: make([]json.RawMessage, len(calls))}
	for _, c := range calls {
		out.methods = append(out.methods, c.Method)
	}
	type response struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	var resps []response
	if len(calls) == 1 {
		var r response
		if err := json.Unmarshal(ans.Body, &r); err != nil {
			return nil, failf("unreadable answer: %v", err)
		}
		resps = []response{r}
	} else if err := json.Unmarshal(ans.Body, &resps); err != nil {
		// A body refused whole (a quota) is one error object.
		var r response
		if json.Unmarshal(ans.Body, &r) != nil || r.Error == nil {
			return nil, failf("unreadable answer: %v", err)
		}
		resps = []response{{ID: json.RawMessage("1"), Error: r.Error}}
	}
	for _, r := range resps {
		i, err := strconv.Atoi(string(r.ID))
		if err != nil || i < 1 || i > len(calls) {
			if r.Error != nil { // an error before the calls were read
				return nil, callError(calls[0].Method, network, r.Error)
			}
			continue
		}
		if r.Error != nil {
			return nil, callError(calls[i-1].Method, network, r.Error)
		}
		out.results[i-1] = r.Result
	}
	for i, r := range out.results {
		if r == nil {
			return nil, failf("%s on %s: no answer", calls[i].Method, network)
		}
	}
	return out, nil
}

// callError names a refused or failed call and the gateway's reason.
func callError(method, network string, e *rpcError) *toolError {
	what := "failed"
	switch e.Code {
	case portico.CodeForbidden, portico.CodeUnauthorized, portico.CodeKeyRejected:
		what = "refused"
	case portico.CodeLimitExceeded:
		what = "refused (credits or rate)"
	case -32601:
		what = "not served"
	case -32602:
		what = "refused (params)"
	}
	return &toolError{msg: fmt.Sprintf("%s on %s %s: %s (JSON-RPC error %d)", method, network, what, e.Message, e.Code), rpc: e}
}

// encodeCalls builds the JSON-RPC body of calls, with ids 1..n.
func encodeCalls(calls []rpc) ([]byte, error) {
	var b strings.Builder
	if len(calls) > 1 {
		b.WriteByte('[')
	}
	for i, c := range calls {
		if i > 0 {
			b.WriteByte(',')
		}
		params := []byte("[]")
		if c.Params != nil {
			p, err := json.Marshal(c.Params)
			if err != nil {
				return nil, err
			}
			params = p
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, i+1, c.Method, params)
	}
	if len(calls) > 1 {
		b.WriteByte(']')
	}
	return []byte(b.String()), nil
}

// credits is what a tool call cost, in its answer.
type credits struct {
	Charged   int64 `json:"charged"`
	Remaining int64 `json:"remaining"`
}

// answer is the structured content of a tool's answer: the network, the
// JSON-RPC methods it called, what they cost, whether the answer was
// verified (on networks that verify), and the tool's own fields.
func (sv *served) answer(fields map[string]any) map[string]any {
	out := map[string]any{"network": sv.network, "methods": sv.methods}
	if sv.ans.Metered {
		out["credits"] = credits{Charged: sv.ans.Charged, Remaining: sv.ans.Remaining}
	}
	if sv.ans.Verifying > 0 {
		out["verified"] = sv.ans.Verified == sv.ans.Verifying
	}
	for k, v := range fields {
		out[k] = v
	}
	return out
}

// note is the short text beside the structured content: the tool's own
// line, and what it cost.
func (sv *served) note(line string) *sdk.CallToolResult {
	if sv.ans.Verifying > 0 {
		if sv.ans.Verified == sv.ans.Verifying {
			line += " (verified)"
		} else {
			line += " (not verified)"
		}
	}
	if sv.ans.Metered {
		line += fmt.Sprintf(" [%d credits, %d left today]", sv.ans.Charged, sv.ans.Remaining)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: line}}}
}

// failed turns a tool's error into its answer: an error result with a
// short text and, for a JSON-RPC error, the error as structured content.
func failed(err error) (*sdk.CallToolResult, any, error) {
	te, ok := err.(*toolError)
	if !ok {
		te = &toolError{msg: err.Error()}
	}
	res := &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: te.msg}}}
	if te.rpc != nil {
		return res, map[string]any{"error": te.rpc}, nil
	}
	return res, nil, nil
}
