// Package anvil starts Foundry's anvil EVM node as a child process, so tests
// can put a second, independent EVM implementation behind the gateway. The
// binary comes from the npm package @foundry-rs/anvil-linux-amd64, which
// scripts/install-test-deps.sh installs into node_modules.
package anvil

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

// binaryPath is where npm puts the binary, under the module root.
const binaryPath = "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"

// startTimeout bounds how long Start waits for anvil to answer.
const startTimeout = 30 * time.Second

// ErrNotInstalled means the anvil binary was not found under node_modules.
// Tests skip on it unless Strict.
var ErrNotInstalled = errors.New("anvil: binary not found; run scripts/install-test-deps.sh (or set PORTICO_ANVIL)")

// Binary returns the anvil binary: $PORTICO_ANVIL if set, else
// node_modules under the nearest directory, from the working directory up,
// that holds go.mod. A PORTICO_ANVIL naming a missing file is an error, but
// not ErrNotInstalled: it was asked for explicitly.
func Binary() (string, error) {
	if p := os.Getenv("PORTICO_ANVIL"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("anvil: PORTICO_ANVIL: %w", err)
		}
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("anvil: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, binaryPath)
			if _, err := os.Stat(p); err != nil {
				return "", ErrNotInstalled
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNotInstalled
		}
		dir = parent
	}
}

// Options configure Start.
type Options struct {
	// Args are extra anvil flags, such as "--hardfork", "prague". Anvil's
	// default hardfork is its latest, which accepts transactions of every
	// type 0 to 4. --host and --port are set by Start.
	Args []string
	// Logger receives anvil's output at debug level; nil discards it.
	Logger *slog.Logger
}

// Node is a running anvil.
type Node struct {
	cmd  *exec.Cmd
	addr string // host:port from anvil's "Listening on" line
	keys []*ecdsa.PrivateKey
	done chan struct{} // closed once the process has exited and its output is read
	once sync.Once
}

var (
	listening  = regexp.MustCompile(`^Listening on (\S+)$`)
	privateKey = regexp.MustCompile(`^\(\d+\) (0x[0-9a-fA-F]{64})$`)
)

// Start runs anvil on a free loopback port (anvil binds port 0 and prints
// the port it got) and returns once it answers eth_chainId over HTTP. The
// process outlives ctx, which bounds only the start; Close stops it.
func Start(ctx context.Context, opts Options) (*Node, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()

	args := append([]string{"--host", "127.0.0.1", "--port", "0"}, opts.Args...)
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("anvil: %w", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("anvil: %w", err)
	}
	n := &Node{cmd: cmd, done: make(chan struct{})}
	ready := make(chan error, 1)
	go func() {
		defer close(n.done)
		sc := bufio.NewScanner(out)
		signalled := false
		var tail []string // the last lines, to explain an early exit
		for sc.Scan() {
			line := sc.Text()
			log.Debug("anvil", "line", line)
			if signalled {
				continue
			}
			tail = append(tail[max(0, len(tail)-9):], line)
			if m := privateKey.FindStringSubmatch(line); m != nil {
				if k, err := crypto.HexToECDSA(m[1][2:]); err == nil {
					n.keys = append(n.keys, k)
				}
			}
			if m := listening.FindStringSubmatch(line); m != nil {
				n.addr = m[1]
				signalled = true
				ready <- nil
			}
		}
		io.Copy(io.Discard, out)
		err := cmd.Wait()
		if !signalled {
			ready <- fmt.Errorf("anvil: exited before listening (%v): %s", err, strings.Join(tail, " | "))
		}
	}()
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = fmt.Errorf("anvil: not listening: %w", ctx.Err())
	}
	if err == nil {
		err = n.waitRPC(ctx)
	}
	if err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

// waitRPC polls eth_chainId until anvil answers it: the "Listening" line
// comes as the socket is bound, which need not mean requests are served.
func (n *Node) waitRPC(ctx context.Context) error {
	const body = `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}`
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.URL(), strings.NewReader(body))
		if err != nil {
			return fmt.Errorf("anvil: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Close = true // leave no idle connection behind
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("anvil: not answering eth_chainId at %s: %w", n.URL(), ctx.Err())
		case <-n.done:
			return errors.New("anvil: exited while starting")
		case <-t.C:
		}
	}
}

// URL returns the HTTP JSON-RPC endpoint.
func (n *Node) URL() string { return "http://" + n.addr }

// WSURL returns the WebSocket JSON-RPC endpoint (anvil serves both on one
// port).
func (n *Node) WSURL() string { return "ws://" + n.addr }

// DevKeys returns the keys of the prefunded accounts, as anvil printed them
// at start. With the default mnemonic these are anvil's documented public
// test keys, the first being
// 0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80.
func (n *Node) DevKeys() []*ecdsa.PrivateKey { return slices.Clone(n.keys) }

// Signal sends sig to the anvil process: SIGSTOP freezes it (it keeps
// its connections and answers nothing), SIGCONT thaws it.
func (n *Node) Signal(sig os.Signal) error { return n.cmd.Process.Signal(sig) }

// Close kills anvil and waits for it to exit. It is idempotent and always
// returns nil: a killed anvil has nothing to report.
func (n *Node) Close() error {
	n.once.Do(func() {
		if n.cmd.Process != nil {
			n.cmd.Process.Kill()
		}
		<-n.done
	})
	return nil
}

// Strict reports whether tests must fail rather than skip when anvil is
// missing (PORTICO_TEST_STRICT=1, as make test sets it).
func Strict() bool { return strings.TrimSpace(os.Getenv("PORTICO_TEST_STRICT")) == "1" }
