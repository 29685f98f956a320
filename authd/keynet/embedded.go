package keynet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/idtoken"
)

// EmbeddedOptions configure in-process networks.
type EmbeddedOptions struct {
	// Networks to start; all of Networks() if empty.
	Networks []string
	// Nodes per network; 5 if zero.
	Nodes int
	// Verifiers every node trusts.
	Verifiers []idtoken.Config
	// Dir holds one SQLite file per node (<network>-node<i>.db); empty
	// means in-memory databases, gone at Close.
	Dir string
	// PostgresDSN, if set, puts every node in this PostgreSQL database
	// instead of SQLite (rows carry the network and node index).
	PostgresDSN string
	// KeyDir holds each node's own key file (<network>-node<i>.key, mode
	// 0600, made at first start): the node signs with it and seals its
	// shares at rest under a key derived from it. It is required with Dir
	// or PostgresDSN and must not be inside Dir: a copy of the databases
	// alone then gives no share. Without storage, keys are made fresh.
	KeyDir string
	// Logger, clock and token verifier options passed to each node.
	Logger  *slog.Logger
	Now     func() time.Time
	IDToken idtoken.Options
	// DKGTimeout of each node; the NodeConfig default if zero.
	DKGTimeout time.Duration
}

type embeddedNode struct {
	node  *Node
	store *Store
	srv   *http.Server
	ln    net.Listener
	done  chan struct{}
}

// Embedded runs networks of nodes in this process, each node on its own
// 127.0.0.1 port with its own storage, talking real HTTP to the others:
// the same code paths as separate processes.
type Embedded struct {
	networks map[string]NetworkConfig
	nodes    map[string][]*embeddedNode
}

// StartEmbedded starts the networks. Each node's key comes from its key
// file in KeyDir (made at first start), or is made fresh when the shares
// are not stored. All nodes of a network run in this process on one host,
// which is then one trust domain: this is a development setup (see
// docs/auth-keys.md for nodes on separate hosts).
func StartEmbedded(ctx context.Context, opts EmbeddedOptions) (_ *Embedded, err error) {
	if len(opts.Networks) == 0 {
		opts.Networks = Networks()
	}
	if opts.Nodes == 0 {
		opts.Nodes = 5
	}
	if opts.Nodes < 1 {
		return nil, &ConfigError{Field: "nodes", Reason: "must be positive"}
	}
	if (opts.Dir != "" || opts.PostgresDSN != "") && opts.KeyDir == "" {
		return nil, &ConfigError{Field: "keyDir", Reason: "required with stored shares: the node keys seal them at rest"}
	}
	if opts.Dir != "" && opts.KeyDir != "" && within(opts.KeyDir, opts.Dir) {
		return nil, &ConfigError{Field: "keyDir", Reason: "must not be inside dir: a copy of the databases would carry the keys that open them"}
	}
	e := &Embedded{networks: map[string]NetworkConfig{}, nodes: map[string][]*embeddedNode{}}
	defer func() {
		if err != nil {
			_ = e.Close()
		}
	}()
	for _, name := range opts.Networks {
		if !slices.Contains(Networks(), name) {
			return nil, &ConfigError{Field: "networks", Reason: fmt.Sprintf("unknown network %q", name)}
		}
		nc := NetworkConfig{Name: name}
		keys := make([]string, opts.Nodes)
		lns := make([]net.Listener, opts.Nodes)
		for i := range opts.Nodes {
			k, err := embeddedKey(opts.KeyDir, name, i+1)
			if err != nil {
				for _, l := range lns[:i] {
					_ = l.Close()
				}
				return nil, err
			}
			keys[i] = eccrypto.PrivateKeyHex(k)
			if lns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				for _, l := range lns[:i] {
					_ = l.Close()
				}
				return nil, err
			}
			nc.Nodes = append(nc.Nodes, Peer{Index: i + 1, URL: "http://" + lns[i].Addr().String() + "/jrpc", PublicKey: eccrypto.PublicKeyHex(k.PubKey())})
		}
		e.networks[name] = nc
		for i := range opts.Nodes {
			path := ""
			if opts.Dir != "" {
				path = filepath.Join(opts.Dir, fmt.Sprintf("%s-node%d.db", name, i+1))
			}
			var st *Store
			if opts.PostgresDSN != "" {
				st, err = OpenPostgres(ctx, opts.PostgresDSN)
			} else {
				st, err = OpenSQLite(ctx, path)
			}
			if err != nil {
				for _, l := range lns[i:] {
					_ = l.Close()
				}
				return nil, err
			}
			node, err := NewNode(NodeConfig{Network: nc, Index: i + 1, SigningKey: keys[i], Verifiers: opts.Verifiers, DKGTimeout: opts.DKGTimeout},
				st, NodeOptions{Logger: opts.Logger, Now: opts.Now, IDToken: opts.IDToken})
			if err != nil {
				_ = st.Close()
				for _, l := range lns[i:] {
					_ = l.Close()
				}
				return nil, err
			}
			en := &embeddedNode{node: node, store: st, ln: lns[i], done: make(chan struct{}),
				srv: &http.Server{Handler: node.Handler(), ReadHeaderTimeout: 10 * time.Second}}
			go func() {
				defer close(en.done)
				_ = en.srv.Serve(en.ln)
			}()
			e.nodes[name] = append(e.nodes[name], en)
		}
	}
	return e, nil
}

// embeddedKey is a node's key: its key file in keyDir, or a fresh one.
func embeddedKey(keyDir, network string, index int) (*secp256k1.PrivateKey, error) {
	if keyDir == "" {
		return eccrypto.GenerateKey()
	}
	k, _, err := LoadOrCreateNodeKey(filepath.Join(keyDir, fmt.Sprintf("%s-node%d.key", network, index)))
	return k, err
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Network returns a started network's config (what a client needs).
func (e *Embedded) Network(name string) (NetworkConfig, bool) {
	nc, ok := e.networks[name]
	return nc, ok
}

// Client returns a client for a started network.
func (e *Embedded) Client(name string, httpClient *http.Client) (*Client, error) {
	nc, ok := e.networks[name]
	if !ok {
		return nil, &ConfigError{Field: "network", Reason: fmt.Sprintf("%q is not started", name)}
	}
	return NewClient(nc, httpClient)
}

// Store returns a node's storage (for inspection by tests and tools).
func (e *Embedded) Store(network string, index int) *Store {
	ns := e.nodes[network]
	if index < 1 || index > len(ns) {
		return nil
	}
	return ns[index-1].store
}

// StopNode stops one node's server (its storage stays open), as if it
// went down.
func (e *Embedded) StopNode(network string, index int) error {
	ns := e.nodes[network]
	if index < 1 || index > len(ns) {
		return errors.New("keynet: no such node")
	}
	return ns[index-1].stop()
}

func (en *embeddedNode) stop() error {
	// Close, not Shutdown: connections a client dialed but never used
	// would hold Shutdown for seconds, and a stopped node must look down.
	err := en.srv.Close()
	<-en.done
	return err
}

// Close stops every node and closes its storage. Nodes stop first, which
// ends key assignments in progress, so that servers drain quickly.
func (e *Embedded) Close() error {
	var errs []error
	for _, ns := range e.nodes {
		for _, en := range ns {
			errs = append(errs, en.node.Close())
		}
	}
	for _, ns := range e.nodes {
		for _, en := range ns {
			if err := en.stop(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs = append(errs, err)
			}
			errs = append(errs, en.store.Close())
		}
	}
	return errors.Join(errs...)
}
