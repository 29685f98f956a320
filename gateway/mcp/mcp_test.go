package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/porticohq/portico/gateway"
)

// TestEndpoint: the Go SDK's client opens a session at /mcp/v3/<key>,
// lists the tools, each with an input schema that compiles and a
// description, lists the key's networks, and reads a balance equal to
// eth_getBalance over JSON-RPC, charged what eth_getBalance costs.
func TestEndpoint(t *testing.T) {
	e := newEnv(t, envOptions{})
	key := e.key(t, "agent", 1_000_000)
	cs, err := e.connect(t, key)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 60 {
			t.Errorf("%s: description %q is too short for a model to use", tool.Name, tool.Description)
		}
		raw, _ := json.Marshal(tool.InputSchema)
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
		if err != nil {
			t.Fatalf("%s: schema: %v", tool.Name, err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("tool.json", doc); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile("tool.json")
		if err != nil {
			t.Fatalf("%s: input schema does not compile: %v\n%s", tool.Name, err, raw)
		}
		// The schema refuses what the tool cannot take.
		if tool.Name != "list_networks" && sch.Validate(map[string]any{"network": 7}) == nil {
			t.Errorf("%s: schema takes a number for network", tool.Name)
		}
	}
	slices.Sort(names)
	want := []string{"call_contract", "get_account", "get_balance", "get_block", "get_events", "get_logs", "get_signatures_for_address", "get_transaction", "list_networks", "rpc_call"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	nets := structured(t, call(t, cs, "list_networks", nil))["networks"].([]any)
	if len(nets) != 1 {
		t.Fatalf("networks: %v", nets)
	}
	n := nets[0].(map[string]any)
	if n["name"] != evmNet || n["family"] != "evm" || n["methods"].(float64) < 20 {
		t.Fatalf("network: %v", n)
	}

	addr := e.dev.Accounts()[0].Address.Hex()
	wantRaw := e.rpc(t, key, "eth_getBalance", []any{addr, "latest"})
	before := e.remaining(t, key)
	res := call(t, cs, "get_balance", map[string]any{"network": evmNet, "address": addr})
	got := structured(t, res)
	if !sameJSON(t, got["raw"], wantRaw) {
		t.Fatalf("get_balance raw %v, eth_getBalance %s", got["raw"], wantRaw)
	}
	var hexBal string
	json.Unmarshal(wantRaw, &hexBal)
	wei, _ := new(big.Int).SetString(strings.TrimPrefix(hexBal, "0x"), 16)
	if got["balance"] != wei.String() || got["unit"] != "wei" || wei.Sign() == 0 {
		t.Fatalf("balance %v %v, want %s wei", got["balance"], got["unit"], wei)
	}
	if !strings.Contains(text(res), wei.String()) {
		t.Errorf("text %q does not say the balance", text(res))
	}
	cost := int64(e.net.Methods.Lookup("eth_getBalance").Cost)
	cr := got["credits"].(map[string]any)
	if int64(cr["charged"].(float64)) != cost {
		t.Fatalf("charged %v, eth_getBalance costs %d", cr["charged"], cost)
	}
	if after := e.remaining(t, key); after != before-cost || int64(cr["remaining"].(float64)) != after {
		t.Fatalf("remaining %d then %d (answer says %v), cost %d", before, after, cr["remaining"], cost)
	}

	// rpc_call: any method, its result as the node gave it.
	bn := structured(t, call(t, cs, "rpc_call", map[string]any{"network": evmNet, "method": "eth_chainId", "params": []any{}}))
	if !sameJSON(t, bn["result"], e.rpc(t, key, "eth_chainId", []any{})) {
		t.Fatalf("rpc_call eth_chainId: %v", bn["result"])
	}
	// The resources and the prompt.
	rs, err := cs.ListResources(ctx, nil)
	if err != nil || len(rs.Resources) != 1 || rs.Resources[0].URI != "portico://networks" {
		t.Fatalf("resources: %v %v", rs, err)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "portico://networks"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, `"name":"`+evmNet+`"`) {
		t.Fatalf("networks resource: %v %v", rr, err)
	}
	p, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "inspect_address", Arguments: map[string]string{"network": evmNet, "address": addr}})
	if err != nil || len(p.Messages) != 1 || !strings.Contains(p.Messages[0].Content.(*sdk.TextContent).Text, addr) {
		t.Fatalf("prompt: %v %v", p, err)
	}
	// An unknown network is a tool error that says where the names are.
	if r := call(t, cs, "get_balance", map[string]any{"network": "nope", "address": addr}); !r.IsError || !strings.Contains(text(r), "list_networks") {
		t.Fatalf("unknown network: %v %q", r.IsError, text(r))
	}
	// Bad arguments are refused by the schema before the tool runs.
	if r := call(t, cs, "get_balance", map[string]any{"network": evmNet}); !r.IsError {
		t.Fatalf("get_balance without an address: %q", text(r))
	}
}

// TestRefusedMethod: a method outside the key's allowlist is a tool
// error naming the method and the reason, with the JSON-RPC error as
// structured content, and costs nothing.
func TestRefusedMethod(t *testing.T) {
	e := newEnv(t, envOptions{})
	key := e.key(t, "narrow", 1_000_000, "eth_getBalance", "eth_blockNumber")
	cs, err := e.connect(t, key)
	if err != nil {
		t.Fatal(err)
	}
	before := e.remaining(t, key)
	res := call(t, cs, "rpc_call", map[string]any{"network": evmNet, "method": "eth_sendRawTransaction", "params": []any{"0x00"}})
	if !res.IsError || !strings.Contains(text(res), "eth_sendRawTransaction") || !strings.Contains(text(res), "refused") {
		t.Fatalf("refused method: error %v, text %q", res.IsError, text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"code":-32002`) {
		t.Fatalf("structured error %s", b)
	}
	if after := e.remaining(t, key); after != before {
		t.Fatalf("a refused call cost %d", before-after)
	}
	// The key's methods are what list_networks counts and the method
	// table resource lists.
	n := structured(t, call(t, cs, "list_networks", nil))["networks"].([]any)[0].(map[string]any)
	if n["methods"].(float64) != 2 {
		t.Fatalf("list_networks: %v", n)
	}
	rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "portico://networks/" + evmNet + "/methods"})
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Methods []struct {
			Name string `json:"name"`
			Cost int    `json:"cost"`
		} `json:"methods"`
	}
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &table); err != nil || len(table.Methods) != 2 || table.Methods[0].Name != "eth_blockNumber" {
		t.Fatalf("methods resource: %s (%v)", rr.Contents[0].Text, err)
	}
	// A key out of credits: the tool says so.
	poor := e.key(t, "poor", 1)
	cp, err := e.connect(t, poor)
	if err != nil {
		t.Fatal(err)
	}
	res = call(t, cp, "get_balance", map[string]any{"network": evmNet, "address": e.dev.Accounts()[0].Address.Hex()})
	if !res.IsError || !strings.Contains(text(res), "credit") {
		t.Fatalf("out of credits: error %v, text %q", res.IsError, text(res))
	}
}

// TestKeyRefused: a wrong key gets 401 before any session, on both
// paths; a revoked key's session can call nothing more.
func TestKeyRefused(t *testing.T) {
	e := newEnv(t, envOptions{})
	key := e.key(t, "agent", 1_000_000)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(path, bearer string) int {
		req, _ := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" && resp.StatusCode != 200 {
			t.Errorf("a refused request got session %s", id)
		}
		return resp.StatusCode
	}
	wrong := strings.Repeat("0", len(key))
	for _, c := range []struct {
		path, bearer string
		want         int
	}{
		{"/mcp/v3/" + wrong, "", 401},
		{"/mcp/v3/", "", 401},
		{"/mcp", wrong, 401},
		{"/mcp", "", 401},
		{"/mcp/v3/" + key, "", 200},
		{"/mcp", key, 200},
		{"/mcp/elsewhere", key, 404},
	} {
		if got := post(c.path, c.bearer); got != c.want {
			t.Errorf("POST %s (bearer %v): %d, want %d", strings.Replace(c.path, key, "<key>", 1), c.bearer != "", got, c.want)
		}
	}
	if _, err := e.connect(t, wrong); err == nil {
		t.Fatal("a wrong key connected")
	}
	// The SDK's client with the key as a bearer token.
	hc := &http.Client{Transport: bearer{key: key}}
	cs, err := connectTo(t, &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: hc, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	call(t, cs, "list_networks", nil)
	e.keys.revoke(key)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_networks"}); err == nil {
		t.Fatal("a revoked key's session still calls tools")
	}
}

type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestSessionBounds: a key's sessions are bounded (429 past the bound,
// room again once one is closed), count in its memory budget, and
// survive a config reload.
func TestSessionBounds(t *testing.T) {
	e := newEnv(t, envOptions{limits: func(l *gateway.Limits) { l.MaxWSConnectionsPerKey = 2 }})
	key := e.key(t, "agent", 1_000_000)
	other := e.key(t, "other", 1_000_000)
	a, err := e.connect(t, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.connect(t, key); err != nil {
		t.Fatal(err)
	}
	if _, err := e.connect(t, key); err == nil || !strings.Contains(err.Error(), "429") && !strings.Contains(err.Error(), "Too Many") {
		t.Fatalf("a third session of a key bounded to 2: %v", err)
	}
	if _, err := e.connect(t, other); err != nil {
		t.Fatalf("another key's session: %v", err)
	}
	if used := e.gw.Memory().Used(); used < 3*64<<10 {
		t.Fatalf("three sessions hold %d bytes of the process budget", used)
	}
	a.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := e.connect(t, key)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room after a session closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A reload keeps sessions: the next call is served by the new state.
	cs, err := e.connect(t, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.gw.Reload(gateway.Reload{Networks: []*gateway.Network{e.net}, Limits: e.limits}); err != nil {
		t.Fatal(err)
	}
	structured(t, call(t, cs, "get_balance", map[string]any{"network": evmNet, "address": e.dev.Accounts()[1].Address.Hex()}))
	// GET (a stream of the server's own) is refused as the spec allows.
	req, _ := http.NewRequest(http.MethodGet, e.url+"/mcp/v3/"+key, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
}

// TestAccessLog: each JSON-RPC call a tool makes is in the access log
// like an HTTP call, with its key, method and credits, and the key
// itself is in no line.
func TestAccessLog(t *testing.T) {
	var log syncBuffer
	e := newEnv(t, envOptions{log: &log})
	key := e.key(t, "auditor", 1_000_000)
	cs, err := e.connect(t, key)
	if err != nil {
		t.Fatal(err)
	}
	structured(t, call(t, cs, "get_balance", map[string]any{"network": evmNet, "address": e.dev.Accounts()[0].Address.Hex()}))
	structured(t, call(t, cs, "rpc_call", map[string]any{"network": evmNet, "method": "eth_chainId"}))
	lines := log.String()
	for _, m := range []string{"eth_getBalance", "eth_chainId"} {
		if !strings.Contains(lines, "msg=call network="+evmNet+" method="+m+" outcome=ok") || !strings.Contains(lines, "key=auditor") {
			t.Fatalf("no access-log line for %s:\n%s", m, lines)
		}
	}
	if strings.Contains(lines, key) {
		t.Fatalf("the key reached the log:\n%s", lines)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMessageAndMemoryBounds: a message past the body bound is refused
// (413, -32042) like any request; a session that does not fit in its
// key's memory budget is refused (503, -32057), and fits again once
// another is closed.
func TestMessageAndMemoryBounds(t *testing.T) {
	e := newEnv(t, envOptions{limits: func(l *gateway.Limits) {
		l.MaxBodyBytes = 64 << 10
		l.KeyMemoryBytes = 100 << 10 // one session (64 KiB), not two
	}})
	key := e.key(t, "agent", 1_000_000)
	a, err := e.connect(t, key)
	if err != nil {
		t.Fatal(err)
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rpc_call","arguments":{"network":"` + evmNet +
		`","method":"eth_chainId","params":["` + strings.Repeat("a", 70<<10) + `"]}}}`
	// The body's first bytes go out, then the client waits for the
	// answer, as a client does that reads the answer while it sends: the
	// server refuses by Content-Length and closes, and a client still
	// writing then would see its write reset before the answer (a flake
	// of the test, not of the server).
	body := &heldBody{first: []byte(big[:1<<10]), done: make(chan struct{})}
	req, _ := http.NewRequest(http.MethodPost, e.url+"/mcp/v3/"+key, body)
	req.ContentLength = int64(len(big))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", a.ID())
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	body.Close()
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(answer), "-32042") {
		t.Fatalf("a message past the body bound: %d %s", resp.StatusCode, answer)
	}
	_, err = e.connect(t, key)
	if err == nil || !strings.Contains(err.Error(), "503") && !strings.Contains(err.Error(), "Service Unavailable") {
		t.Fatalf("a second session past the key's memory: %v", err)
	}
	a.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err = e.connect(t, key); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room after a session closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// heldBody is a request body that gives its first bytes, then holds the
// rest back until it is closed.
type heldBody struct {
	first []byte
	done  chan struct{}
	once  sync.Once
}

func (b *heldBody) Read(p []byte) (int, error) {
	if len(b.first) > 0 {
		n := copy(p, b.first)
		b.first = b.first[n:]
		return n, nil
	}
	<-b.done
	return 0, io.EOF
}

// Close lets a Read waiting for the rest end.
func (b *heldBody) Close() error {
	b.once.Do(func() { close(b.done) })
	return nil
}
