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

// This file runs erpc (github.com/erpc/erpc, built outside this
// repository: docs/benchmarks.md says how) in front of the fake node, for
// the fixed setup's erpc columns. Its config turns off what erpc's config
// lets us turn off, so that, like Portico with its cache off, it forwards
// every call once: no cache (no database), no retries, no hedging, no
// circuit breaker, no integrity checks, no gzip (Go's client asks for it
// unasked, Portico sends none), no metrics server, no auth. What is left
// is its request path: selection among upstreams (one here), its state
// poller, its JSON-RPC client, the checks it runs on every block answer
// whatever the config (architecture/evm/eth_getBlockByNumber.go,
// validateBlock: the block parsed with sonic, each full transaction
// marshalled and parsed again), and its response writer.

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
func startErpc(ctx context.Context, bin, nodeURL string, multiplexing bool) (*portico, error) {
	dir, err := os.MkdirTemp("", "portico-bench-erpc")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "erpc.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, erpcConfig, port, multiplexing, nodeURL), 0o600); err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(dir, "erpc.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own descriptor
	cmd := exec.CommandContext(ctx, bin, "start", "--config", path)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "portico-bench: erpc (multiplexing %t) logs to %s\n", multiplexing, log.Name())
	p := &portico{cmd: cmd, urls: map[string]string{"evm": fmt.Sprintf("http://127.0.0.1:%d/main/evm/1", port)}}
	if err := waitAnswer(ctx, p.urls["evm"], []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`), time.Minute); err != nil {
		p.stop()
		return nil, fmt.Errorf("erpc: %w", err)
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
