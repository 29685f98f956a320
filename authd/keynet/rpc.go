package keynet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// call posts one JSON-RPC request and decodes its result into out (if not
// nil). A node's JSON-RPC error comes back as *RPCError.
func call(ctx context.Context, c *http.Client, url, method string, params, out any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: json.RawMessage("1"), Method: method, Params: p})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRequestBytes))
	if err != nil {
		return err
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("keynet: %s: HTTP %d, not a JSON-RPC response", method, resp.StatusCode)
	}
	if r.Error != nil {
		return r.Error
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			return fmt.Errorf("keynet: %s: result: %w", method, err)
		}
	}
	return nil
}
