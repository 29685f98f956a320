package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// env is a gateway on the shared listener in front of embedded devnets
// (the EVM one always), with metering on.
type env struct {
	gw     *gateway.Gateway
	url    string
	dev    *evmdevnet.Devnet
	devs   map[string]families.Devnet // by network name
	keys   *keys
	st     *store.Store
	meter  *metering.Ledger
	net    *gateway.Network   // the EVM devnet's
	nets   []*gateway.Network // all of them
	limits gateway.Limits
}

// evmNet is the EVM devnet's network name and host; every network's
// host is its name under .localhost.
const (
	evmNet  = "evm-devnet"
	evmHost = evmNet + ".localhost"
	solNet  = "solana-devnet"
	starNet = "starknet-devnet"
)

type envOptions struct {
	limits func(*gateway.Limits)
	// solana and starknet add those families' devnets, with traffic.
	solana, starknet bool
	// verify turns verification on for the EVM devnet (one node: a
	// quorum of one).
	verify bool
	// log, when set, receives the gateway's log with every call in the
	// access log.
	log io.Writer
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	ctx := context.Background()
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
	e := &env{keys: &keys{ids: map[string]apikey.Identity{}}, st: st, meter: meter, devs: map[string]families.Devnet{}}
	add := func(family portico.Family, cfg families.DevnetConfig, vc network.VerifyConfig) *gateway.Network {
		fam, err := families.Get(family)
		if err != nil {
			t.Fatal(err)
		}
		d, err := fam.NewDevnet(cfg)
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
		pool := upstream.NewPool(upstream.PoolConfig{Network: fam.Network, Chain: table.Chain,
			Members: []upstream.Member{{Name: "devnet", Node: upstream.NewInProcess(d.Handler(), nil)}}})
		t.Cleanup(func() { pool.Close() })
		if err := pool.Start(ctx); err != nil {
			t.Fatal(err)
		}
		served := network.New(network.Config{Name: fam.Network, Upstream: pool, Tags: methods.Chain().Tags, KeyForm: methods.KeyForm(),
			Subs: methods.Subscriptions(), Cache: cache, Meter: meter, Verify: vc})
		n := &gateway.Network{Name: fam.Network, Hosts: []string{fam.Network + ".localhost"}, Methods: methods, Served: served}
		e.devs[fam.Network] = d
		e.nets = append(e.nets, n)
		return n
	}
	var vc network.VerifyConfig
	if o.verify {
		evmFam, err := families.Get("evm")
		if err != nil {
			t.Fatal(err)
		}
		vc = network.VerifyConfig{Verifier: evmFam.Verifier, Mode: network.VerifyOn, Quorum: 1}
	}
	e.net = add("evm", families.DevnetConfig{BlockPeriod: -1}, vc)
	e.dev = e.devs[evmNet].(*evmdevnet.Devnet)
	if o.solana {
		add("solana", families.DevnetConfig{BlockPeriod: 100 * time.Millisecond, Traffic: true}, network.VerifyConfig{})
	}
	if o.starknet {
		add("starknet", families.DevnetConfig{BlockPeriod: 200 * time.Millisecond, Traffic: true}, network.VerifyConfig{})
	}
	e.limits = portico.DefaultLimits()
	if o.limits != nil {
		o.limits(&e.limits)
	}
	cfg := gateway.Config{Keys: e.keys, Networks: e.nets, Limits: e.limits, Meter: meter, Logger: slog.New(slog.DiscardHandler)}
	if o.log != nil {
		cfg.Logger, cfg.AccessLog = slog.New(slog.NewTextHandler(o.log, nil)), &gateway.AccessLog{Sample: 1}
	}
	e.gw = gateway.New(cfg)
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

// rpc posts one JSON-RPC call to /v3/<key> on the EVM devnet's host
// and returns the raw result, failing the test on an error answer.
func (e *env) rpc(t testing.TB, key, method string, params any) json.RawMessage {
	t.Helper()
	return e.rpcOn(t, key, evmNet, method, params)
}

// rpcOn is rpc on the named network.
func (e *env) rpcOn(t testing.TB, key, network, method string, params any) json.RawMessage {
	t.Helper()
	res, b, err := e.post(key, network, method, params)
	if err != nil {
		t.Fatalf("%s: %v: %s", method, err, b)
	}
	return res
}

// tryRPC is rpcOn that reports an error answer instead of failing.
func (e *env) tryRPC(key, network, method string, params any) (json.RawMessage, bool) {
	res, _, err := e.post(key, network, method, params)
	return res, err == nil
}

func (e *env) post(key, network, method string, params any) (json.RawMessage, []byte, error) {
	p, _ := json.Marshal(params)
	req, _ := http.NewRequest(http.MethodPost, e.url+"/v3/"+key, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+string(p)+`}`))
	req.Host = network + ".localhost"
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, b, err
	}
	if out.Error != nil {
		return nil, b, fmt.Errorf("error answer")
	}
	return out.Result, b, nil
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
