package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/families/evm/evmdevnet"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/network"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/store"
)

// keys is the test gateway's key set: keys can be added and revoked
// while it runs.
type keys struct {
	mu  sync.Mutex
	ids map[string]apikey.Identity
}

func (k *keys) Authenticate(_ context.Context, key string) (apikey.Identity, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if key == "" {
		return apikey.Identity{}, portico.ErrKeyMissing
	}
	id, ok := k.ids[key]
	if !ok {
		return apikey.Identity{}, portico.ErrKeyUnknown
	}
	return id, nil
}

func (k *keys) revoke(key string) {
	k.mu.Lock()
	delete(k.ids, key)
	k.mu.Unlock()
}

// env is a gateway on the shared listener in front of the embedded EVM
// devnet, with metering on.
type env struct {
	gw     *gateway.Gateway
	url    string
	dev    *evmdevnet.Devnet
	keys   *keys
	st     *store.Store
	meter  *metering.Meter
	net    *gateway.Network
	limits gateway.Limits
}

// evmNet is the devnet's network name and host.
const (
	evmNet  = "evm-devnet"
	evmHost = "evm.localhost"
)

type envOptions struct {
	limits func(*gateway.Limits)
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
	fam, err := families.Get("evm")
	if err != nil {
		t.Fatal(err)
	}
	d, err := evmdevnet.New(evmdevnet.Config{BlockPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	table := fam.Table(true)
	methods, err := gateway.NewMethods(table, gateway.MethodsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.NewPool(upstream.PoolConfig{Network: evmNet, Chain: table.Chain,
		Members: []upstream.Member{{Name: "devnet", Node: upstream.NewInProcess(d.Handler(), nil)}}})
	t.Cleanup(func() { pool.Close() })
	if err := pool.Start(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "portico.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	meter, err := metering.New(ctx, metering.Config{Counter: metering.NewMemory(st.Spent, nil), Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meter.Close() })
	cache := network.NewCache(1<<20, nil)
	t.Cleanup(cache.Close)
	served := network.New(network.Config{Name: evmNet, Upstream: pool, Tags: methods.Chain().Tags, KeyForm: methods.KeyForm(),
		Subs: methods.Subscriptions(), Cache: cache, Meter: meter})
	e := &env{dev: d, keys: &keys{ids: map[string]apikey.Identity{}}, st: st, meter: meter}
	e.net = &gateway.Network{Name: evmNet, Hosts: []string{evmHost}, Methods: methods, Served: served}
	e.limits = portico.DefaultLimits()
	if o.limits != nil {
		o.limits(&e.limits)
	}
	e.gw = gateway.New(gateway.Config{Keys: e.keys, Networks: []*gateway.Network{e.net}, Limits: e.limits, Meter: meter,
		Logger: slog.New(slog.DiscardHandler)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := e.gw.NewServer(e.gw.Handler())
	go srv.Serve(e.gw.Listener(ln))
	t.Cleanup(func() {
		e.gw.Close()
		_ = srv.Shutdown()
		_ = ln.Close()
	})
	e.url = "http://" + ln.Addr().String()
	return e
}

// key makes a key with daily credits and, when methods are given, a
// method allowlist; it returns the key.
func (e *env) key(t testing.TB, name string, daily int64, methods ...string) string {
	t.Helper()
	k, secret, err := e.st.Create(context.Background(), store.KeySpec{Name: name, DailyCredits: daily, AllowMethods: methods})
	if err != nil {
		t.Fatal(err)
	}
	e.keys.mu.Lock()
	e.keys.ids[secret] = apikey.Identity{Name: k.Name, ID: k.ID, DailyCredits: k.DailyCredits, Methods: methods}
	e.keys.mu.Unlock()
	return secret
}

// rpc posts one JSON-RPC call to /v3/<key> on the devnet's host and
// returns the raw result, failing the test on an error answer.
func (e *env) rpc(t testing.TB, key, method string, params any) json.RawMessage {
	t.Helper()
	p, _ := json.Marshal(params)
	req, _ := http.NewRequest(http.MethodPost, e.url+"/v3/"+key, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+string(p)+`}`))
	req.Host = evmHost
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Error != nil {
		t.Fatalf("%s: %s", method, b)
	}
	return out.Result
}

// remaining is the key's balance as portico_getCredits says it.
func (e *env) remaining(t testing.TB, key string) int64 {
	t.Helper()
	var c struct {
		Remaining int64 `json:"remaining"`
	}
	if err := json.Unmarshal(e.rpc(t, key, gateway.MethodGetCredits, []any{}), &c); err != nil {
		t.Fatal(err)
	}
	return c.Remaining
}

// connect opens an MCP session at /mcp/v3/<key> with the Go SDK's client.
func (e *env) connect(t testing.TB, key string) (*sdk.ClientSession, error) {
	t.Helper()
	return connectTo(t, &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp/v3/" + key, MaxRetries: -1})
}

func connectTo(t testing.TB, tr sdk.Transport) (*sdk.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "portico-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// call calls a tool and returns its result, failing the test on a
// protocol error (a tool error is a result).
func call(t testing.TB, cs *sdk.ClientSession, tool string, args map[string]any) *sdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// structured is a result's structured content as a map, failing the
// test on a tool error.
func structured(t testing.TB, res *sdk.CallToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

// text is a result's text content.
func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t testing.TB, a, b any) bool {
	t.Helper()
	norm := func(v any) string {
		var raw []byte
		switch x := v.(type) {
		case json.RawMessage:
			raw = x
		case []byte:
			raw = x
		default:
			var err error
			if raw, err = json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
		var x any
		if err := json.Unmarshal(raw, &x); err != nil {
			t.Fatalf("not JSON: %s", raw)
		}
		out, _ := json.Marshal(x)
		return string(out)
	}
	return norm(a) == norm(b)
}
