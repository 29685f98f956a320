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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

// binaryPath is where npm puts the binary, under the module root.
const binaryPath = "node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"

// ErrNotInstalled means the anvil binary was not found.
var ErrNotInstalled = errors.New("anvil: binary not found; run scripts/install-test-deps.sh (or set PORTICO_ANVIL)")

// Binary returns the anvil binary: $PORTICO_ANVIL, or node_modules under
// the nearest directory holding go.mod.
func Binary() (string, error) {
	if p := os.Getenv("PORTICO_ANVIL"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
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
	// Args are extra anvil flags, such as "--hardfork", "prague".
	Args []string
	// Logger receives anvil's output at debug level; nil discards it.
	Logger *slog.Logger
}

// Node is a running anvil.
type Node struct {
	cmd  *exec.Cmd
	addr string
	keys []*ecdsa.PrivateKey
	done chan struct{}
	once sync.Once
}

var (
	listening  = regexp.MustCompile(`^Listening on (\S+)$`)
	privateKey = regexp.MustCompile(`^\(\d+\) (0x[0-9a-fA-F]{64})$`)
)

// Start runs anvil on a free loopback port and returns once it listens.
func Start(ctx context.Context, opts Options) (*Node, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	args := append([]string{"--host", "127.0.0.1", "--port", "0"}, opts.Args...)
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
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
		for sc.Scan() {
			line := sc.Text()
			log.Debug("anvil", "line", line)
			if signalled {
				continue
			}
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
		if !signalled {
			ready <- errors.New("anvil: exited before listening")
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
	}()
	select {
	case err := <-ready:
		if err != nil {
			n.Close()
			return nil, err
		}
	case <-ctx.Done():
		n.Close()
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		n.Close()
		return nil, errors.New("anvil: not listening after 30s")
	}
	return n, nil
}

// URL returns the HTTP JSON-RPC endpoint.
func (n *Node) URL() string { return "http://" + n.addr }

// WSURL returns the WebSocket JSON-RPC endpoint.
func (n *Node) WSURL() string { return "ws://" + n.addr }

// DevKeys returns the prefunded accounts' keys anvil printed (its public
// test keys).
func (n *Node) DevKeys() []*ecdsa.PrivateKey { return n.keys }

// Close stops anvil and waits for it.
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
