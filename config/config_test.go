package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
)

func TestParse(t *testing.T) {
	env := map[string]string{"NODE_KEY": "abc123", "API_KEY": "0123456789abcdef0123456789abcdef"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	yml := `
listen: 0.0.0.0:9000
keys:
  - name: ci
    key: ${API_KEY}
networks:
  - name: mainnet
    family: evm
    hosts: [eth.example.com]
    upstreams:
      - url: https://node.example/v3/${NODE_KEY}
    timeout: 5s
    costs: {eth_call: 20}
`
	cfg, err := config.Parse([]byte(yml), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	n := cfg.Networks[0]
	if cfg.Listen != "0.0.0.0:9000" || cfg.Keys[0].Key != env["API_KEY"] || len(cfg.Networks) != 1 ||
		n.Upstreams[0].URL != "https://node.example/v3/abc123" || n.Timeout != 5*time.Second || n.Costs["eth_call"] != 20 {
		t.Fatalf("parsed %+v", cfg)
	}
	if cfg.Limits.MaxBatch != 100 {
		t.Fatalf("defaults lost: %+v", cfg.Limits)
	}
	if got := cfg.ListenAddr(0); got != "0.0.0.0:9001" {
		t.Fatalf("ListenAddr = %s", got)
	}
}

func TestDefaultListenAddrs(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Networks = make([]config.Network, 3)
	for i, want := range []string{"127.0.0.1:8701", "127.0.0.1:8702", "127.0.0.1:8703"} {
		if got := cfg.ListenAddr(i); got != want {
			t.Errorf("network %d: %s, want %s", i, got, want)
		}
	}
	cfg.Listen = "127.0.0.1:0"
	if got := cfg.ListenAddr(2); got != "127.0.0.1:0" {
		t.Errorf("port 0: %s", got)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		name, yml, want string
	}{
		{"unknown field", "listn: x", "field listn not found"},
		{"unset env", "listen: ${NOPE}", "environment variable NOPE is not set"},
		{"bad listen", "listen: nonsense", `config: listen: "nonsense" is not host:port`},
		{"key and hash", "keys: [{name: a, key: 0123456789abcdef0123456789abcdef, hash: ab}]", "config: keys[0]: set exactly one of key and hash"},
		{"short key", "keys: [{name: a, key: short}]", "config: keys[0].key: must be 32 to 64 characters"},
		{"bad hash", "keys: [{name: a, hash: xyz}]", "config: keys[0].hash: apikey: hash must be 64 hex characters"},
		{"no key name", "keys: [{key: 0123456789abcdef0123456789abcdef}]", "config: keys[0].name: required"},
		{"no family", "networks: [{name: a}]", `config: networks[0].family: required`},
		{"hash with negative balance", "keys: [{name: a, hash: " + strings.Repeat("ab", 32) + ", daily_credits: -1}]", "config: keys[0].daily_credits: must not be negative"},
		{"hash with negative rate", "keys: [{name: a, hash: " + strings.Repeat("ab", 32) + ", rate_per_second: -5}]", "config: keys[0].rate_per_second: must not be negative"},
		{"key with negative balance", "keys: [{name: a, key: 0123456789abcdef0123456789abcdef, daily_credits: -1}]", "config: keys[0].daily_credits: must not be negative"},
		{"bad name", "networks: [{name: A_b, family: evm}]", `config: networks[0].name: "A_b" must be lower-case letters, digits and dashes`},
		{"duplicate name", "networks: [{name: a, family: evm}, {name: a, family: evm}]", `config: networks[1].name: "a" is used twice`},
		{"duplicate host", "networks: [{name: a, family: evm, hosts: [x]}, {name: b, family: evm, hosts: [X]}]", `config: networks[1].hosts: "x" is also a host of a`},
		{"bad upstream", "networks: [{name: a, family: evm, upstreams: [{url: 'ftp://secret@x'}]}]", `config: networks[0].upstreams[0].url: scheme "ftp" is not http, https, ws or wss`},
		{"negative cost", "networks: [{name: a, family: evm, costs: {eth_call: -1}}]", "config: networks[0].costs.eth_call: must not be negative"},
		{"zero limit", "limits: {max_batch: 0}", "config: limits.max_batch: must be positive"},
		{"bad level", "log: {level: loud}", `config: log.level: "loud" is not one of debug, info, warn, error`},
		{"bad duration", "limits: {read_timeout: soon}", "cannot unmarshal"},
		{"unknown logs field", "networks: [{name: a, family: evm, logs: {max_range: 5}}]", "field max_range not found"},
		{"bad logs cost", "networks: [{name: a, family: evm, logs: {cost: free}}]", `config: networks[0].logs.cost: want call, range or logs, got "free"`},
		{"logs parallel", "networks: [{name: a, family: evm, logs: {parallel: 0}}]", "config: networks[0].logs.parallel: want 1 to 64 chunks of one query at the nodes at once, got 0"},
		{"negative logs", "networks: [{name: a, family: evm, logs: {max_logs: -1}}]", "config: networks[0].logs: max_addresses, max_topics and max_logs must not be negative"},

		{"key max_concurrent", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef, max_concurrent: -1}]", "config: keys[0].max_concurrent: must not be negative"},
		{"key address", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef, allow_addresses: ['0x12']}]", `config: keys[0].allow_addresses[0]: want a 0x address of 20 bytes, got "0x12"`},
		{"key jwt pem", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef, jwt_keys: [{name: k1, pem: nope}]}]", "config: keys[0].jwt_keys:"},
		{"key jwt lifetime", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef, jwt_max_lifetime: 48h}]", "config: keys[0].jwt_max_lifetime: must be 0 (the default, 1h) to 24h"},
		{"key logs", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef, logs: {max_logs: -1}}]", "config: keys[0].logs: bounds must not be negative"},
		{"key unknown rule", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef, max_concurrency: 3}]", "field max_concurrency not found"},
		{"verify spelling", "networks: [{name: a, family: evm, verify: yes}]", `config: networks[0].verify: want off, on or strict, got "yes"`},
		{"verify quorum above the nodes", "networks: [{name: a, family: evm, verify: on, verify_quorum: 3, upstreams: [{url: 'http://x'}, {url: 'http://y'}]}]", "config: networks[0].verify_quorum: want 0 (a majority, the default) or 2 to 2, a majority of the 2 nodes at least, got 3"},
		{"verify quorum below a majority", "networks: [{name: a, family: evm, verify: on, verify_quorum: 1, upstreams: [{url: 'http://x'}, {url: 'http://y'}]}]", "config: networks[0].verify_quorum: want 0 (a majority, the default) or 2 to 2, a majority of the 2 nodes at least, got 1"},
		{"verify quorum of five", "networks: [{name: a, family: evm, verify: on, verify_quorum: 2, upstreams: [{url: 'http://a'}, {url: 'http://b'}, {url: 'http://c'}, {url: 'http://d'}, {url: 'http://e'}]}]", "config: networks[0].verify_quorum: want 0 (a majority, the default) or 3 to 5"},
		{"verify quorum of the embedded devnet", "networks: [{name: a, family: evm, verify: on, verify_quorum: 2}]", "config: networks[0].verify_quorum: want 0 (a majority, the default) or 1 to 1"},
		{"poll interval of 1ns", "networks: [{name: a, family: evm, poll_interval: 1ns}]", "config: networks[0].poll_interval: want 0 (the family's default) or at least 50ms, got 1ns"},
		{"poll interval just below", "networks: [{name: a, family: evm, poll_interval: 49ms}]", "config: networks[0].poll_interval: want 0 (the family's default) or at least 50ms, got 49ms"},
		{"negative poll interval", "networks: [{name: a, family: evm, poll_interval: -1s}]", "config: networks[0].poll_interval: want 0 (the family's default) or at least 50ms, got -1s"},
		{"huge batch", "limits: {max_batch: 100000000}", "config: limits.max_batch: at most 10000, got 100000000"},
		{"logs parallel ceiling", "networks: [{name: a, family: evm, logs: {parallel: 100000}}]", "config: networks[0].logs.parallel: want 1 to 64 chunks of one query at the nodes at once, got 100000"},
		{"key user agent empty", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef, allow_user_agents: ['viem/', '']}]", `config: keys[0].allow_user_agents[1]: want 1 to 256 characters, not only spaces, got ""`},
		{"key user agent spaces", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef, allow_user_agents: ['  ']}]", `config: keys[0].allow_user_agents[0]: want 1 to 256 characters`},
		{"key name with a space", "keys: [{name: 'my key', key: k0123456789abcdef0123456789abcdef}]", `config: keys[0].name: "my key": no spaces or control characters`},
		{"key name twice", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef}, {name: a, key: j0123456789abcdef0123456789abcdef}]", `config: keys[1].name: "a" is also the name of keys[0]`},
		{"one key twice", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef}, {name: b, key: k0123456789abcdef0123456789abcdef}]", "config: keys[1]: the same key as keys[0]"},
		{"redis and redis_addrs", "metering: {redis: 'redis://r:6379/0', redis_addrs: ['a:6379']}", "config: metering.redis_addrs: set redis or redis_addrs, not both"},
		{"sentinel without sentinels", "metering: {redis_master_name: m}", "config: metering.redis_master_name: needs the Sentinels in redis_addrs"},
		{"redis addr without port", "metering: {redis_addrs: ['a:6379', 'b']}", "config: metering.redis_addrs[1]: want host:port"},
		{"lease ttl of 1ms", "metering: {lease_ttl: 1ms}", "config: metering.lease_ttl: 0 (no leases) or at least 100ms"},
		{"negative lease ttl", "metering: {lease_ttl: -1s}", "config: metering.lease_ttl: 0 (no leases) or at least 100ms"},
		{"key audience without public keys", "keys: [{name: a, key: k0123456789abcdef0123456789abcdef, jwt_keys: [], jwt_audience: app}]", "config: keys[0].jwt_keys: jwt_max_lifetime and jwt_audience need at least one public key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.yml), func(string) (string, bool) { return "", false })
			if err == nil {
				err = cfg.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error leaks the URL: %v", err)
			}
		})
	}
}

func TestEmptyFileKeepsDefaults(t *testing.T) {
	cfg, err := config.Parse(nil, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	// No networks: the caller serves the built-in ones.
	if err := cfg.Validate(); err != nil || len(cfg.Networks) != 0 || cfg.Limits != config.DefaultConfig().Limits {
		t.Fatalf("%v %+v", err, cfg)
	}
}

// TestLoadPaths: relative paths in a config file are the file's folder's,
// whatever the working directory.
func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(t.TempDir(), "chain.rlp")
	yml := "data_dir: state\nnetworks:\n  - name: a\n    family: evm\n    devnet: {genesis: fixtures/genesis.json, chain_rlp: " + abs + "}\n"
	path := filepath.Join(dir, "conf", "portico.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Networks[0].Devnet
	if want := filepath.Join(dir, "conf", "state"); cfg.DataDir != want {
		t.Errorf("data_dir %s, want %s", cfg.DataDir, want)
	}
	if want := filepath.Join(dir, "conf", "fixtures", "genesis.json"); d.Genesis != want {
		t.Errorf("genesis %s, want %s", d.Genesis, want)
	}
	if d.ChainRLP != abs {
		t.Errorf("an absolute path changed: %s", d.ChainRLP)
	}
	// Parse keeps paths as written.
	raw, _ := os.ReadFile(path)
	if cfg, _ := config.Parse(raw, os.LookupEnv); cfg.DataDir != "state" {
		t.Errorf("Parse: data_dir %s", cfg.DataDir)
	}
}

// TestLogs: a network without a logs block gets the defaults; fields left
// out of one keep theirs; 0 turns a bound off.
func TestLogs(t *testing.T) {
	cfg, err := config.Parse([]byte(`networks:
- {name: a, family: evm}
- {name: b, family: evm, logs: {max_block_range: 20000, max_logs: 0, node_range: 500, cost: logs, cost_per_log: 2}}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Networks[0].Logs.Settings(), portico.DefaultLogSettings(); got != want {
		t.Errorf("no logs block: %+v, want the defaults %+v", got, want)
	}
	want := portico.DefaultLogSettings()
	want.MaxBlockRange, want.MaxLogs, want.NodeRange, want.Cost, want.CostPerLog = 20000, 0, 500, portico.LogCostLogs, 2
	if got := cfg.Networks[1].Logs.Settings(); got != want {
		t.Errorf("logs block: %+v, want %+v", got, want)
	}
}

// TestLogsDoc keeps the defaults docs/logs.md shows in step with
// portico.DefaultLogSettings.
func TestLogsDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/logs.md")
	if err != nil {
		t.Fatal(err)
	}
	d := portico.DefaultLogSettings()
	for field, value := range map[string]string{
		"max_block_range": fmt.Sprint(d.MaxBlockRange),
		"max_addresses":   fmt.Sprint(d.MaxAddresses),
		"max_topics":      fmt.Sprint(d.MaxTopics),
		"max_logs":        fmt.Sprint(d.MaxLogs),
		"node_range":      fmt.Sprint(d.NodeRange),
		"parallel":        fmt.Sprint(d.Parallel),
		"cost":            "`" + d.Cost + "`",
		"cost_blocks":     fmt.Sprint(d.CostBlocks),
		"cost_per_log":    fmt.Sprint(d.CostPerLog),
	} {
		if row := fmt.Sprintf("| `%s` | %s |", field, value); !strings.Contains(string(doc), row) {
			t.Errorf("docs/logs.md has no row %q", row)
		}
	}
}

// TestBoundsAccepted: the values at each bound pass, as do the defaults.
func TestBoundsAccepted(t *testing.T) {
	for _, yml := range []string{
		"networks: [{name: a, family: evm, poll_interval: 50ms}]",
		"networks: [{name: a, family: evm, poll_interval: 0s}]",
		"limits: {max_batch: 10000}",
		"networks: [{name: a, family: evm, logs: {parallel: 64}}]",
		"networks: [{name: a, family: evm, verify: on, verify_quorum: 2, upstreams: [{url: 'http://a'}, {url: 'http://b'}, {url: 'http://c'}]}]",
		"networks: [{name: a, family: evm, verify: on, verify_quorum: 1, upstreams: [{url: 'http://a'}]}]",
		"networks: [{name: a, family: evm, verify: on, chain_id: '0x1', upstreams: [{url: 'http://a'}]}]",
		"keys: [{name: a, key: k0123456789abcdef0123456789abcdef, allow_user_agents: ['viem/'], jwt_audience: app}]",
	} {
		cfg, err := config.Parse([]byte(yml), func(string) (string, bool) { return "", false })
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			t.Errorf("%s: %v", yml, err)
		}
	}
}

// TestNodeRange: a network's log chunks fit the narrowest node that says
// its range, and the logs block's node_range when that is narrower.
func TestNodeRange(t *testing.T) {
	n := config.Network{Upstreams: []config.Upstream{{MaxLogRange: 5000}, {}, {MaxLogRange: 2000}}}
	def := config.Network{}.NodeRange()
	if got := n.NodeRange(); got != min(2000, def) {
		t.Errorf("NodeRange = %d, want %d", got, min(2000, def))
	}
	n = config.Network{Upstreams: []config.Upstream{{MaxLogRange: def / 2}, {MaxLogRange: def * 2}}}
	if got := n.NodeRange(); got != def/2 {
		t.Errorf("NodeRange = %d, want %d (a node narrower than the default)", got, def/2)
	}
}
