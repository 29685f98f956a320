package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porticohq/portico/config"
)

// TestConfigCheck runs `portico config check` over configs with one bad
// field each: it prints ok or names the field, and fails on an error. serve
// refuses the same configs with the same message before it starts anything.
func TestConfigCheck(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		name, yml, want string
	}{
		{"embedded defaults", "", "ok"},
		{"one evm network", "networks: [{name: a, family: evm, upstreams: [{url: 'http://127.0.0.1:1'}]}]", "ok"},
		{"unknown family", "networks: [{name: a, family: btc}]", `config: networks[0].family: unknown family "btc": not one of solana, evm, starknet`},
		{"cost of an unknown method", "networks: [{name: a, family: evm, costs: {eth_nope: 5}}]", "config: networks[0].costs.eth_nope: not a method of the evm family, nor in its allowlist"},
		{"allowlist of another family", "networks: [{name: a, family: evm, methods: [eth_call, getBlock]}]", `config: networks[0].methods[1]: "getBlock" is not a method name of the evm family`},
		{"a misspelt group", "networks: [{name: a, family: evm, upstreams: [{url: 'http://127.0.0.1:1'}], enable: [debug, tracer]}]", `config: networks[0].enable[1]: "tracer" is neither a method group of the evm family (accounts, debug, trace, txpool) nor a method name`},
		{"groups and a method enabled", "networks: [{name: a, family: evm, upstreams: [{url: 'http://127.0.0.1:1'}], enable: [debug, trace, txpool, testing_buildBlockV1], costs: {debug_traceCall: 500}}]", "ok"},
		{"cost of a method outside the allowlist", "networks: [{name: a, family: solana, methods: [getSlot], costs: {getSupply: 5}}]", "config: networks[0].costs.getSupply: not a method of the solana family, nor in its allowlist"},
		{"key by hash, negative balance", "keys: [{name: a, hash: " + hash + ", daily_credits: -1}]", "config: keys[0].daily_credits: must not be negative"},
		{"key by hash, negative rate", "keys: [{name: a, hash: " + hash + ", rate_per_second: -1}]", "config: keys[0].rate_per_second: must not be negative"},
		{"devnet setting of another family", "networks: [{name: a, family: solana, devnet: {accounts: 3}}]", "config: networks[0].devnet: the solana devnet has no setting accounts"},
		{"bad upstream", "networks: [{name: a, family: evm, upstreams: [{url: 'gopher://x'}]}]", `config: networks[0].upstreams[0].url: scheme "gopher" is not http, https, ws or wss`},
		{"bad limit", "limits: {max_batch: -1}", "config: limits.max_batch: must be positive"},
	}
	tests = append(tests, issue33Configs...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"config", "check"}
			var path string
			if tc.yml != "" {
				path = filepath.Join(t.TempDir(), "portico.yaml")
				if err := os.WriteFile(path, []byte(tc.yml), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--config", path)
			}
			var out, errOut bytes.Buffer
			err := run(context.Background(), args, &out, &errOut)
			if tc.want == "ok" {
				if err != nil || out.String() != "ok\n" {
					t.Fatalf("got %q, %v", out.String(), err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %s", err, tc.want)
			}
			if path == "" {
				return
			}
			// serve: the same refusal, and no devnet was started.
			cfg, lerr := config.Load(path)
			if lerr != nil {
				t.Fatal(lerr)
			}
			cfg.Listen = "127.0.0.1:0"
			m := &Main{Config: cfg, Stdout: &out, Stderr: &errOut}
			serr := m.Run(context.Background())
			m.Close()
			if serr == nil || serr.Error() != err.Error() {
				t.Fatalf("serve: %v, want %v", serr, err)
			}
			if len(m.Devnets) != 0 || m.Store != nil {
				t.Fatalf("serve opened things before refusing the config: %d devnets, store %v", len(m.Devnets), m.Store)
			}
		})
	}
}

// issue33Configs are the values that passed the checks and hurt (issue
// 33), and a key setting that `config check` passed and a reload refused:
// each is refused naming its field, by `config check`, serve and reload.
var issue33Configs = []struct{ name, yml, want string }{
	{"a User-Agent allowlist entry of nothing", "keys: [{name: app, key: app0123456789abcdef0123456789abc, allow_user_agents: ['']}]",
		`config: keys[0].allow_user_agents[0]: want 1 to 256 characters, not only spaces, got ""`},
	{"a key name the store refuses", "keys: [{name: 'my app', key: app0123456789abcdef0123456789abc}]", `config: keys[0].name: "my app": no spaces or control characters`},
	{"a key name twice", "keys: [{name: app, key: app0123456789abcdef0123456789abc}, {name: app, key: bpp0123456789abcdef0123456789abc}]", `config: keys[1].name: "app" is also the name of keys[0]`},
	{"poll_interval: 1ns", "networks: [{name: a, family: evm, upstreams: [{url: 'http://127.0.0.1:1'}], poll_interval: 1ns}]", "config: networks[0].poll_interval: want 0 (the family's default) or at least 50ms, got 1ns"},
	{"verify_quorum: 1 of two nodes", "networks: [{name: a, family: evm, verify: on, verify_quorum: 1, upstreams: [{url: 'http://127.0.0.1:1'}, {url: 'http://127.0.0.1:2'}]}]",
		"config: networks[0].verify_quorum: want 0 (a majority, the default) or 2 to 2, a majority of the 2 nodes at least, got 1"},
	{"max_batch: 100000000", "limits: {max_batch: 100000000}", "config: limits.max_batch: at most 10000, got 100000000"},
	{"logs.parallel: 100000", "networks: [{name: a, family: evm, upstreams: [{url: 'http://127.0.0.1:1'}], logs: {parallel: 100000}}]", "config: networks[0].logs.parallel: want 1 to 64"},
	{"a verified network's chain_id that is no number", "networks: [{name: a, family: evm, verify: on, chain_id: mainnet, upstreams: [{url: 'http://127.0.0.1:1'}]}]", "config: networks[0].chain_id: verify needs an EVM chain id"},
}

// TestCheckAndReloadAgree: a running serve reloading each of
// issue33Configs refuses it with the error `config check` gives for the
// same file, and keeps serving.
func TestCheckAndReloadAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "portico.yaml")
	// As start runs it (port 0, debug log), so that reloading it changes
	// nothing that needs a restart.
	const same = "listen: 127.0.0.1:0\nlog: {level: debug}\n"
	good := same + "networks: [{name: a, family: evm, upstreams: [{url: 'http://127.0.0.1:1'}]}]\n"
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, cfg, func(m *Main) { m.ConfigPath = path })
	for _, tc := range issue33Configs {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(same+tc.yml), 0o600); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			checkErr := run(context.Background(), []string{"config", "check", "--config", path}, &out, &errOut)
			reloadErr := s.m.Reload(context.Background())
			if checkErr == nil || reloadErr == nil || checkErr.Error() != reloadErr.Error() || !strings.HasPrefix(checkErr.Error(), tc.want) {
				t.Fatalf("config check: %v\nreload: %v\nwant both %s", checkErr, reloadErr, tc.want)
			}
		})
	}
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.m.Reload(context.Background()); err != nil {
		t.Fatalf("the good file again: %v", err)
	}
}
