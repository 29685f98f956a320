package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/metering/membudget"
)

// fakeBackend answers every call with a plausible result and records
// every body it was given that is not a well-formed JSON-RPC request.
type fakeBackend struct {
	mu   sync.Mutex
	bad  []string
	mem  *membudget.Budget
	seen int
}

var fakeNets = map[string]portico.Family{"eth": "evm", "sol": "solana", "stark": "starknet"}

func (b *fakeBackend) Networks(apikey.Identity) []Network {
	var out []Network
	for name, f := range fakeNets {
		out = append(out, Network{Name: name, Family: f, Methods: []Method{{Name: "m", Cost: 1}}})
	}
	return out
}

func (b *fakeBackend) Family(_ apikey.Identity, network string) (portico.Family, bool) {
	f, ok := fakeNets[network]
	return f, ok
}

func (b *fakeBackend) Call(_ context.Context, _ apikey.Identity, _, _ string, body []byte) (Answer, error) {
	calls, batch, err := jsonrpc.Decode(body)
	problem := ""
	switch {
	case err != nil:
		problem = err.Error()
	case batch != (len(calls) > 1):
		problem = "a batch of one, or several calls not in a batch"
	}
	for _, c := range calls {
		if problem != "" {
			break
		}
		switch {
		case c.Err != nil:
			problem = c.Err.Error()
		case c.Method == "" || c.IsNotification():
			problem = "no method, or no id"
		case len(c.Params) > 0 && c.Params[0] != '[' && c.Params[0] != '{':
			problem = "params neither array nor object"
		}
	}
	b.mu.Lock()
	b.seen++
	if problem != "" {
		b.bad = append(b.bad, problem+": "+string(body))
	}
	b.mu.Unlock()
	var out bytes.Buffer
	if batch {
		out.WriteByte('[')
	}
	for i, c := range calls {
		if i > 0 {
			out.WriteByte(',')
		}
		res := `"0x` + strings.Repeat("0", 64) + `"`
		switch c.Method {
		case "getBalance", "getAccountInfo":
			res = `{"context":{"slot":1},"value":5}`
		case "getSlot":
			res = `7`
		}
		fmt.Fprintf(&out, `{"jsonrpc":"2.0","id":%s,"result":%s}`, c.ID, res)
	}
	if batch {
		out.WriteByte(']')
	}
	return Answer{Body: out.Bytes(), Status: 200, Metered: true, Charged: 1, Remaining: 9}, nil
}

func (b *fakeBackend) Bounds() Bounds                  { return Bounds{} }
func (b *fakeBackend) Memory(string) *membudget.Budget { return b.mem }

// FuzzToolArguments sends arbitrary arguments to every tool through the
// SDK's client and the Streamable HTTP endpoint: the server never
// panics or hangs, every call is answered (a result or an error), and
// every JSON-RPC body a tool builds from its arguments is a well-formed
// request (a call, or a batch of several, each with an id, a method and
// array or object params).
func FuzzToolArguments(f *testing.F) {
	fb := &fakeBackend{mem: membudget.New("key", 0, nil)}
	s := New(fb, Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { s.Serve(ctx, apikey.Identity{Name: "fuzz"}) }}
	go srv.Serve(ln)
	f.Cleanup(func() {
		s.Close()
		_ = srv.Shutdown()
	})
	ctx := context.Background()
	c := sdk.NewClient(&sdk.Implementation{Name: "fuzz", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String() + "/", MaxRetries: -1}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { cs.Close() })
	tools := []string{"list_networks", "rpc_call", "get_balance", "get_block", "get_transaction", "get_logs", "call_contract",
		"get_account", "get_signatures_for_address", "get_events"}
	seeds := []struct {
		tool int
		args string
	}{
		{0, `{}`},
		{1, `{"network":"eth","method":"eth_call","params":[{"to":"0x1"},"latest"]}`},
		{1, `{"network":"sol","method":"getSlot","params":{"commitment":"finalized"}}`},
		{2, `{"network":"eth","address":"0x0000000000000000000000000000000000000001","block":"12"}`},
		{2, `{"network":"sol","address":"11111111111111111111111111111111","block":"finalized"}`},
		{3, `{"network":"eth","block":"0x` + strings.Repeat("ab", 32) + `","full_transactions":true}`},
		{3, `{"network":"sol","block":"latest"}`},
		{3, `{"network":"stark","block":"0x10"}`},
		{4, `{"network":"stark","hash":"0x1"}`},
		{5, `{"network":"eth","address":["0x1","0x2"],"topics":[null,["0xaa","0xbb"]],"from_block":"1","to_block":"latest"}`},
		{6, `{"network":"eth","to":"0x0000000000000000000000000000000000000001","signature":"f(uint256,(address,bool)[],bytes) returns (uint256)","args":["7",[["0x0000000000000000000000000000000000000002",true]],"0x00ff"]}`},
		{6, `{"network":"eth","to":"0x0000000000000000000000000000000000000001","signature":"g(int8[2],string)","args":[[-1,2],"hi"]}`},
		{7, `{"network":"sol","address":"x","encoding":"jsonParsed"}`},
		{8, `{"network":"sol","address":"x","limit":3,"before":"s"}`},
		{9, `{"network":"stark","keys":[["0x1"],[]],"from_block":"0","chunk_size":2,"continuation_token":"t"}`},
	}
	for _, sd := range seeds {
		f.Add(uint8(sd.tool), []byte(sd.args))
	}
	f.Fuzz(func(t *testing.T, tool uint8, args []byte) {
		if !json.Valid(args) {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: tools[int(tool)%len(tools)], Arguments: json.RawMessage(args)})
		if err != nil && !strings.Contains(err.Error(), "invalid") {
			t.Fatalf("%s %s: %v", tools[int(tool)%len(tools)], args, err)
		}
		if err == nil && res == nil {
			t.Fatalf("%s %s: no result", tools[int(tool)%len(tools)], args)
		}
		fb.mu.Lock()
		defer fb.mu.Unlock()
		if len(fb.bad) > 0 {
			t.Fatalf("%s %s sent a malformed body: %s", tools[int(tool)%len(tools)], args, fb.bad[0])
		}
	})
}

// FuzzCallData: whatever signature and arguments call_contract is given,
// it either refuses them or encodes call data that decodes, by the same
// parameter types, back to the same arguments (encoded again, the same
// bytes).
func FuzzCallData(f *testing.F) {
	f.Add("f(uint256,address,bool)", `["12","0x0000000000000000000000000000000000000001",true]`)
	f.Add("g(int8[2],string,bytes)", `[[-1,2],"hi","0x00ff"]`)
	f.Add("h((uint64,bytes32)[],int256)", `[[["9","0x`+strings.Repeat("11", 32)+`"]],"-0x10"]`)
	f.Add("function k(address owner, uint16[] memory ids) view returns (uint256)", `["0x0000000000000000000000000000000000000002",[1,65535]]`)
	f.Fuzz(func(t *testing.T, sig, args string) {
		fn, err := parseSignature(sig)
		if err != nil {
			return
		}
		var list []any
		if json.Unmarshal([]byte(args), &list) != nil {
			return
		}
		data, err := fn.encode(list)
		if err != nil {
			return
		}
		if len(data) < 4 || (len(data)-4)%32 != 0 || !bytes.Equal(data[:4], fn.method.ID) {
			t.Fatalf("%s %s: call data %x", sig, args, data)
		}
		vals, err := fn.method.Inputs.Unpack(data[4:])
		if err != nil {
			t.Fatalf("%s %s: the call data does not decode: %v", sig, args, err)
		}
		back := make([]any, len(vals))
		for i, v := range vals {
			j, _ := json.Marshal(jsonValueOf(v))
			json.Unmarshal(j, &back[i])
		}
		again, err := fn.encode(back)
		if err != nil {
			t.Fatalf("%s %s: decoded %v does not encode: %v", sig, args, back, err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("%s %s: %x, then %x", sig, args, data, again)
		}
	})
}

func jsonValueOf(v any) any { return jsonValue(reflect.ValueOf(v)) }
