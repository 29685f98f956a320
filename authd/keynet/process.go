package keynet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"

	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/idtoken"
)

// This file runs one node of a network file as its own process (`portico
// auth node`), and writes a network of such nodes on one machine
// (`portico auth node init`); docs/auth-keys.md is the operator's side.

// ProcessConfig says how one node of a network file runs as its own
// process.
type ProcessConfig struct {
	// File is the network file every node shares; Index is this node's.
	File  string
	Index int
	// Listen is the address to listen on; "" takes the host and port of
	// the node's URL in the file.
	Listen string
	// DataDir holds the node's SQLite database and, without KeyFile, its
	// key file; Postgres keeps the shares there instead of SQLite.
	DataDir, Postgres, KeyFile string
	Logger                     *slog.Logger
	// OnNewKey, when set, is told of a key file made on this start.
	OnNewKey func(path, publicKey string)
}

// KeyPath is the node's key file: KeyFile, else node.key in DataDir.
func (c *ProcessConfig) KeyPath() (string, error) {
	switch {
	case c.KeyFile != "":
		return c.KeyFile, nil
	case c.DataDir != "":
		return filepath.Join(c.DataDir, NodeKeyFile), nil
	}
	return "", errors.New("a node needs --data-dir (its database and key file) or --postgres with --key-file")
}

// Process is a key node serving as its own process.
type Process struct {
	// File is the network file the node runs from.
	File *NetworkFile
	// Addr is the address the node listens on.
	Addr string

	cfg    ProcessConfig
	log    *slog.Logger
	store  *Store
	node   *Node
	srv    *http.Server
	served chan error
}

// StartProcess loads the network file and the node's key (making it on
// first start; it must be the file's public key for the node), opens the
// node's store, and serves the node's JSON-RPC API and a health check.
// Wait serves until its context ends.
func StartProcess(ctx context.Context, c ProcessConfig) (_ *Process, err error) {
	p := &Process{cfg: c, log: c.Logger}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.File, err = LoadNetworkFile(c.File); err != nil {
		return nil, err
	}
	self, pos, ok := peerOf(p.File.Network, c.Index)
	if !ok {
		return nil, fmt.Errorf("--index %d: not a node of network %s in %s (indexes 1..%d)", c.Index, p.File.Network.Name, c.File, len(p.File.Network.Nodes))
	}
	key, err := p.nodeKey(self, pos)
	if err != nil {
		return nil, err
	}
	if p.store, err = c.openStore(ctx, p.File.Network.Name); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.closeNode()
		}
	}()
	if p.node, err = NewNode(p.File.NodeConfig(c.Index, key), p.store, NodeOptions{Logger: p.log}); err != nil {
		return nil, err
	}
	if err := p.listen(self, pos); err != nil {
		return nil, err
	}
	return p, nil
}

// nodeKey loads or makes the node's key and checks it is the one the
// network file lists for the node (self, at position pos).
func (p *Process) nodeKey(self Peer, pos int) (*secp256k1.PrivateKey, error) {
	keyPath, err := p.cfg.KeyPath()
	if err != nil {
		return nil, err
	}
	key, created, err := LoadOrCreateNodeKey(keyPath)
	if err != nil {
		return nil, err
	}
	pub := NodePublicKeyHex(key)
	if created && p.cfg.OnNewKey != nil {
		p.cfg.OnNewKey(keyPath, pub)
	}
	if !samePublicKey(self.PublicKey, key) {
		return nil, fmt.Errorf("the key in %s (public key %s) is not network.nodes[%d].publicKey of node %d in %s: put this public key there, or give this node its own key file", keyPath, pub, pos, p.cfg.Index, p.cfg.File)
	}
	return key, nil
}

// listen binds the node's address and serves it.
func (p *Process) listen(self Peer, pos int) error {
	listen := p.cfg.Listen
	if listen == "" {
		var err error
		if listen, err = HostPort(self.URL); err != nil {
			return fmt.Errorf("network.nodes[%d].url: %w; give --listen", pos, err)
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	p.Addr = ln.Addr().String()
	if want, err := HostPort(self.URL); err == nil && !samePort(want, p.Addr) {
		p.log.Warn("this node listens on another port than its URL in the network file: the other nodes and clients use the URL",
			"url", self.URL, "listen", p.Addr)
	}
	dkg := time.Duration(p.File.DKGTimeout)
	if dkg == 0 {
		dkg = 30 * time.Second
	}
	p.srv = &http.Server{
		Handler:           nodeMux(p.node.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A first login waits for the key assignment (up to DKGTimeout).
		WriteTimeout: dkg + 30*time.Second,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
	}
	p.served = make(chan error, 1)
	go func() { p.served <- p.srv.Serve(ln) }()
	verifiers := make([]string, len(p.File.Verifiers))
	for i, v := range p.File.Verifiers {
		verifiers[i] = v.Verifier
	}
	p.log.Info("key node serving", "network", p.File.Network.Name, "node", p.cfg.Index, "nodes", len(p.File.Network.Nodes),
		"threshold", p.File.Network.Threshold(), "addr", p.Addr, "store", p.store.Backend(), "verifiers", verifiers)
	return nil
}

// Wait serves until ctx ends, then stops the node gracefully; it returns
// early with the listener's error if serving fails.
func (p *Process) Wait(ctx context.Context) error {
	defer p.closeNode()
	select {
	case err := <-p.served:
		return err
	case <-ctx.Done():
	}
	// The node stops first: key assignments in progress fail at once, so
	// the requests waiting on them end and the server drains quickly.
	_ = p.node.Close()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(shutdownCtx); err != nil {
		_ = p.srv.Close()
	}
	if err := <-p.served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	p.log.Info("key node stopped", "network", p.File.Network.Name, "node", p.cfg.Index)
	return nil
}

// closeNode closes the node, then its store.
func (p *Process) closeNode() {
	if p.node != nil {
		_ = p.node.Close()
	}
	if p.store != nil {
		_ = p.store.Close()
	}
}

func (c *ProcessConfig) openStore(ctx context.Context, network string) (*Store, error) {
	if c.Postgres != "" {
		return OpenPostgres(ctx, c.Postgres)
	}
	if c.DataDir == "" {
		return nil, errors.New("a node needs --data-dir or --postgres: its shares must outlive the process")
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	return OpenSQLite(ctx, filepath.Join(c.DataDir, fmt.Sprintf("%s-node%d.db", network, c.Index)))
}

// nodeMux serves a health check beside the node's JSON-RPC API (POST, any
// path).
func nodeMux(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("/", api)
	return mux
}

// peerOf returns the node with that index and its position in the file.
func peerOf(nc NetworkConfig, index int) (Peer, int, bool) {
	for i, p := range nc.Nodes {
		if p.Index == index {
			return p, i, true
		}
	}
	return Peer{}, 0, false
}

// samePublicKey reports whether hexPub (compressed or uncompressed) is
// key's public key.
func samePublicKey(hexPub string, key *secp256k1.PrivateKey) bool {
	pub, err := eccrypto.ParsePublicKeyHex(hexPub)
	return err == nil && pub.IsEqual(key.PubKey())
}

// HostPort is the address the server of a node's URL listens on.
func HostPort(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", errors.New("not a URL")
	}
	if u.Port() == "" {
		return "", errors.New("no port in the URL (a node behind a proxy)")
	}
	return u.Host, nil
}

func samePort(a, b string) bool {
	_, pa, err1 := net.SplitHostPort(a)
	_, pb, err2 := net.SplitHostPort(b)
	return err1 == nil && err2 == nil && pa == pb
}

// InitConfig describes a network of nodes on one machine.
type InitConfig struct {
	// Nodes is how many (1 to 64); Dir gets network.json and one data
	// directory per node (InitNodeDir).
	Nodes int
	Dir   string
	// Network is the network's name.
	Network string
	// Node i's URL is http://Host:BasePort+i-1/, unless URLs gives one per
	// node.
	Host     string
	BasePort int
	URLs     []string
	// Force overwrites an existing network.json (node keys already in the
	// node directories are kept).
	Force bool
	// Verifier is the id token verifier the nodes accept.
	Verifier idtoken.Config
}

// InitNodeDir is node i's data directory under dir.
func InitNodeDir(dir string, i int) string { return filepath.Join(dir, "node"+strconv.Itoa(i)) }

// InitNetwork makes a key per node (kept if there is one) and writes the
// network file, Dir/network.json; it returns the file and its path.
func InitNetwork(c InitConfig) (*NetworkFile, string, error) {
	if c.Nodes < 1 || c.Nodes > 64 {
		return nil, "", errors.New("--nodes: want 1 to 64")
	}
	if len(c.URLs) > 0 && len(c.URLs) != c.Nodes {
		return nil, "", fmt.Errorf("--url: %d given, want one per node (%d)", len(c.URLs), c.Nodes)
	}
	v := c.Verifier
	if v.JWKSURL == "" && v.PEM == "" && v.DiscoveryURL == "" {
		return nil, "", errors.New("the nodes need a verifier: give --jwks-url or --pem-file with --issuer and --audience, or --discovery-url with --client-id")
	}
	netPath := filepath.Join(c.Dir, "network.json")
	if _, err := os.Stat(netPath); err == nil && !c.Force {
		return nil, "", fmt.Errorf("%s exists; give --force to overwrite it", netPath)
	}
	file := &NetworkFile{Network: NetworkConfig{Name: c.Network}, Verifiers: []idtoken.Config{v}}
	for i := 1; i <= c.Nodes; i++ {
		key, _, err := LoadOrCreateNodeKey(filepath.Join(InitNodeDir(c.Dir, i), NodeKeyFile))
		if err != nil {
			return nil, "", err
		}
		u := fmt.Sprintf("http://%s/", net.JoinHostPort(c.Host, strconv.Itoa(c.BasePort+i-1)))
		if len(c.URLs) > 0 {
			u = c.URLs[i-1]
		}
		file.Network.Nodes = append(file.Network.Nodes, Peer{Index: i, URL: u, PublicKey: NodePublicKeyHex(key)})
	}
	if err := file.Validate(); err != nil {
		return nil, "", err
	}
	b, err := file.Marshal()
	if err != nil {
		return nil, "", err
	}
	if err := writeFileAtomic(netPath, b, 0o644); err != nil {
		return nil, "", err
	}
	return file, netPath, nil
}

// writeFileAtomic replaces path with data through a temporary file.
func writeFileAtomic(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".network-*.json")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
