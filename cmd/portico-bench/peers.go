package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// This file runs the peers the fixed setup compares with, built outside
// this repository (docs/benchmarks.md says how), in front of the fake
// node: erpc (github.com/erpc/erpc) and proxyd
// (github.com/ethereum-optimism/infra, proxyd/).
//
// erpc's config turns off what erpc's config lets us turn off, so that,
// like Portico with its cache off, it forwards every call once: no cache
// (no database), no retries, no hedging, no circuit breaker, no integrity
// checks, no gzip (Go's client asks for it unasked, Portico sends none),
// no metrics server, no auth. What is left is its request path: selection
// among upstreams (one here), its state poller, its JSON-RPC client, the
// checks it runs on every block answer whatever the config
// (architecture/evm/eth_getBlockByNumber.go, validateBlock: the block
// parsed with sonic, each full transaction marshalled and parsed again),
// and its response writer. Multiplexing (identical calls in flight merged
// into one) is the one switch the fixed setup measures both ways.

// erpcConfig is erpc's YAML config; the placeholders are the port, the
// network's multiplexing (erpc's merging of identical calls in flight,
// on by default) and the node's URL.
const erpcConfig = `logLevel: warn
metrics:
  enabled: false
server:
  httpHostV4: 127.0.0.1
  httpPortV4: %d
  listenV6: false
  enableGzip: false
  waitBeforeShutdown: 0s
  waitAfterShutdown: 0s
projects:
  - id: main
    networks:
      - architecture: evm
        evm:
          chainId: 1
          integrity:
            enforceHighestBlock: false
            enforceGetLogsBlockRange: false
            enforceNonNullTaggedBlocks: false
        directiveDefaults:
          validateTransactionsRoot: false
        multiplexing: %t
        failsafe:
          - matchMethod: "*"
            timeout:
              duration: 30s
    upstreams:
      - id: fake
        endpoint: %s
        evm:
          chainId: 1
        failsafe:
          - matchMethod: "*"
            timeout:
              duration: 30s
`

// startErpc runs the erpc binary bin in front of nodeURL and waits until
// it answers.
func startErpc(ctx context.Context, bin, nodeURL string, multiplexing bool) (*process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return startPeer(ctx, "erpc", fmt.Sprintf("erpc (multiplexing %t)", multiplexing), fmt.Sprintf(erpcConfig, port, multiplexing, nodeURL),
		fmt.Sprintf("http://127.0.0.1:%d/main/evm/1", port), func(path string) []string { return []string{bin, "start", "--config", path} })
}

// proxydConfig is proxyd's TOML config: one backend, no cache (none
// configured), no retries, no rate limits, no metrics, no WebSocket; the
// measured methods and eth_chainId (its readiness probe) allowed. The
// placeholders are the port and the node's URL.
const proxydConfig = `[server]
rpc_host = "127.0.0.1"
rpc_port = %d
ws_port = 0
max_body_size_bytes = 10485760
log_level = "warn"

[metrics]
enabled = false

[backend]
response_timeout_seconds = 30
max_response_size_bytes = 10485760
max_retries = 0

[backends.fake]
rpc_url = %q

[backend_groups.main]
backends = ["fake"]

[rpc_method_mappings]
eth_chainId = "main"
eth_getTransactionByHash = "main"
eth_getBlockByHash = "main"
`

// startProxyd runs the proxyd binary bin in front of nodeURL and waits
// until it answers.
func startProxyd(ctx context.Context, bin, nodeURL string) (*process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return startPeer(ctx, "proxyd", "proxyd", fmt.Sprintf(proxydConfig, port, nodeURL),
		fmt.Sprintf("http://127.0.0.1:%d/", port), func(path string) []string { return []string{bin, path} })
}

// startPeer writes config to a file of its own, runs the command args
// gives for that file with its output in a log file next to it, and waits
// until url answers.
func startPeer(ctx context.Context, kind, name, config, url string, args func(path string) []string) (*process, error) {
	dir, err := os.MkdirTemp("", "portico-bench-"+kind)
	if err != nil {
		return nil, err
	}
	ext := ".yaml"
	if kind == "proxyd" {
		ext = ".toml"
	}
	path := filepath.Join(dir, kind+ext)
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, kind+".log"))
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own descriptor
	a := args(path)
	cmd := exec.CommandContext(ctx, a[0], a[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "portico-bench: %s logs to %s\n", name, log.Name())
	p := &process{cmd: cmd, urls: map[string]string{"evm": url}}
	if err := waitAnswer(ctx, url, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`), time.Minute); err != nil {
		p.stop()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// freePort returns a port that was free a moment ago, for a program that
// takes its port from its config.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
