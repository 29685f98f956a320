package main

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
	"github.com/porticohq/portico/authd/keynet"
)

// AuthNodeCmd runs one node of the key network as its own process, and
// sets up networks of such nodes. Without a subcommand it runs a node.
type AuthNodeCmd struct {
	Run      AuthNodeRunCmd      `cmd:"" name:"run" default:"withargs" help:"Run one key node (the default: portico auth node --config FILE --index N)."`
	Init     AuthNodeInitCmd     `cmd:"" help:"Write a network file and one key per node for N nodes on this machine, and print the commands that start them."`
	Key      AuthNodeKeyCmd      `cmd:"" help:"Print a node's public key (for the network file), making its key file if there is none."`
	Validate AuthNodeValidateCmd `cmd:"" help:"Check a network file and print what it describes."`
}

// AuthNodeRunCmd runs one key node until interrupted.
type AuthNodeRunCmd struct {
	Config   string `help:"The network file (JSON: network name, nodes, verifiers), shared by every node; see docs/auth-keys.md." type:"existingfile" required:"" env:"PORTICO_NODE_CONFIG"`
	Index    int    `help:"This node's index in the network file (1..n)." required:"" env:"PORTICO_NODE_INDEX"`
	Listen   string `help:"Address to listen on; the host and port of this node's URL in the network file if empty. Port 0 picks a free port." env:"PORTICO_NODE_LISTEN"`
	DataDir  string `help:"Directory of this node's SQLite database and, unless --key-file is given, its key file (node.key, made on first start)." type:"path" env:"PORTICO_DATA_DIR"`
	Postgres string `help:"PostgreSQL URL for this node's shares instead of SQLite; several nodes may share one database." env:"PORTICO_NODE_POSTGRES"`
	KeyFile  string `help:"This node's signing key file (64 hex characters, mode 0600); <data-dir>/node.key if empty." type:"path" env:"PORTICO_NODE_KEY_FILE"`
}

// Run serves the node until ctx ends, then stops it gracefully.
func (c *AuthNodeRunCmd) Run(ctx context.Context, s *Streams) error {
	log := slog.New(slog.NewTextHandler(s.Err, nil))
	file, err := keynet.LoadNetworkFile(c.Config)
	if err != nil {
		return err
	}
	self, pos, ok := peerOf(file.Network, c.Index)
	if !ok {
		return fmt.Errorf("--index %d: not a node of network %s in %s (indexes 1..%d)", c.Index, file.Network.Name, c.Config, len(file.Network.Nodes))
	}
	keyPath, err := c.keyPath()
	if err != nil {
		return err
	}
	key, created, err := keynet.LoadOrCreateNodeKey(keyPath)
	if err != nil {
		return err
	}
	pub := keynet.NodePublicKeyHex(key)
	if created {
		fmt.Fprintf(s.Out, "portico auth node: made a new node key %s; its public key is %s\n", keyPath, pub)
	}
	if !samePublicKey(self.PublicKey, key) {
		return fmt.Errorf("the key in %s (public key %s) is not network.nodes[%d].publicKey of node %d in %s: put this public key there, or give this node its own key file", keyPath, pub, pos, c.Index, c.Config)
	}

	store, err := c.openStore(ctx, file.Network.Name)
	if err != nil {
		return err
	}
	defer store.Close()
	node, err := keynet.NewNode(file.NodeConfig(c.Index, key), store, keynet.NodeOptions{Logger: log})
	if err != nil {
		return err
	}
	defer node.Close()

	listen := c.Listen
	if listen == "" {
		if listen, err = hostPort(self.URL); err != nil {
			return fmt.Errorf("network.nodes[%d].url: %w; give --listen", pos, err)
		}
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	if want, err := hostPort(self.URL); err == nil && !samePort(want, ln.Addr().String()) {
		log.Warn("this node listens on another port than its URL in the network file: the other nodes and clients use the URL",
			"url", self.URL, "listen", ln.Addr().String())
	}
	dkg := time.Duration(file.DKGTimeout)
	if dkg == 0 {
		dkg = 30 * time.Second
	}
	srv := &http.Server{
		Handler:           nodeMux(node.Handler()),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A first login waits for the key assignment (up to DKGTimeout).
		WriteTimeout: dkg + 30*time.Second,
		IdleTimeout:  2 * time.Minute,
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	verifiers := make([]string, len(file.Verifiers))
	for i, v := range file.Verifiers {
		verifiers[i] = v.Verifier
	}
	log.Info("key node serving", "network", file.Network.Name, "node", c.Index, "nodes", len(file.Network.Nodes),
		"threshold", file.Network.Threshold(), "addr", ln.Addr().String(), "store", store.Backend(), "verifiers", verifiers)
	fmt.Fprintf(s.Out, "portico auth node %d/%d (network %s) listening on http://%s/\n", c.Index, len(file.Network.Nodes), file.Network.Name, ln.Addr())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// The node stops first: key assignments in progress fail at once, so
	// the requests waiting on them end and the server drains quickly.
	_ = node.Close()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("key node stopped", "network", file.Network.Name, "node", c.Index)
	return nil
}

func (c *AuthNodeRunCmd) keyPath() (string, error) {
	switch {
	case c.KeyFile != "":
		return c.KeyFile, nil
	case c.DataDir != "":
		return filepath.Join(c.DataDir, keynet.NodeKeyFile), nil
	}
	return "", errors.New("a node needs --data-dir (its database and key file) or --postgres with --key-file")
}

func (c *AuthNodeRunCmd) openStore(ctx context.Context, network string) (*keynet.Store, error) {
	if c.Postgres != "" {
		return keynet.OpenPostgres(ctx, c.Postgres)
	}
	if c.DataDir == "" {
		return nil, errors.New("a node needs --data-dir or --postgres: its shares must outlive the process")
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	return keynet.OpenSQLite(ctx, filepath.Join(c.DataDir, fmt.Sprintf("%s-node%d.db", network, c.Index)))
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
func peerOf(nc keynet.NetworkConfig, index int) (keynet.Peer, int, bool) {
	for i, p := range nc.Nodes {
		if p.Index == index {
			return p, i, true
		}
	}
	return keynet.Peer{}, 0, false
}

// samePublicKey reports whether hexPub (compressed or uncompressed) is
// key's public key.
func samePublicKey(hexPub string, key *secp256k1.PrivateKey) bool {
	pub, err := eccrypto.ParsePublicKeyHex(hexPub)
	return err == nil && pub.IsEqual(key.PubKey())
}

// hostPort is the address a URL's server listens on.
func hostPort(raw string) (string, error) {
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

// AuthNodeInitCmd writes a network of N nodes on this machine.
type AuthNodeInitCmd struct {
	Nodes    int      `help:"Number of nodes (threshold ⌊n/2⌋+1)." default:"5"`
	Dir      string   `help:"Directory for network.json and one data directory per node (node1, node2, …)." type:"path" required:""`
	Network  string   `help:"Network name." default:"sapphire_devnet" enum:"mainnet,testnet,cyan,aqua,celeste,sapphire_devnet,sapphire_mainnet"`
	Host     string   `help:"Host of the node URLs." default:"127.0.0.1"`
	BasePort int      `help:"Node i listens on base-port+i-1." default:"8561"`
	URL      []string `name:"url" help:"Node URLs in index order, instead of --host and --base-port (repeat once per node)."`
	Force    bool     `help:"Overwrite an existing network.json (node keys already in the node directories are kept)."`

	Verifier          string   `help:"Name of the id token verifier the nodes accept." default:"portico-jwt"`
	JWKSURL           string   `name:"jwks-url" help:"The verifier's JWK set URL (custom JWT)."`
	PEMFile           string   `name:"pem-file" help:"A PEM file of the verifier's public keys or certificates (custom JWT), inlined into the network file." type:"existingfile"`
	Issuer            string   `help:"Required iss of the tokens (custom JWT)."`
	Audience          []string `help:"Accepted aud of the tokens (custom JWT; repeat for several)."`
	DiscoveryURL      string   `name:"discovery-url" help:"OpenID Connect issuer or discovery URL, instead of custom JWT keys."`
	ClientID          string   `name:"client-id" help:"OpenID Connect client id (the tokens' aud)."`
	Leeway            int      `help:"Clock skew allowed on exp, nbf and iat, in seconds."`
	VerifierIDField   string   `name:"verifier-id-field" help:"Claim holding the verifier id (default sub)."`
	CaseInsensitiveID bool     `name:"case-insensitive-id" help:"Lower-case verifier ids (isVerifierIdCaseSensitive: false)."`
}

// Run writes the keys and the network file and prints the start commands.
func (c *AuthNodeInitCmd) Run(s *Streams) error {
	if c.Nodes < 1 || c.Nodes > 64 {
		return errors.New("--nodes: want 1 to 64")
	}
	if len(c.URL) > 0 && len(c.URL) != c.Nodes {
		return fmt.Errorf("--url: %d given, want one per node (%d)", len(c.URL), c.Nodes)
	}
	v := idtoken.Config{Verifier: c.Verifier, TypeOfLogin: "jwt", JWKSURL: c.JWKSURL, Issuer: c.Issuer, Audience: c.Audience,
		DiscoveryURL: c.DiscoveryURL, ClientID: c.ClientID, Leeway: c.Leeway, VerifierIDField: c.VerifierIDField}
	if c.DiscoveryURL != "" {
		v.TypeOfLogin = ""
	}
	if c.PEMFile != "" {
		b, err := os.ReadFile(c.PEMFile)
		if err != nil {
			return err
		}
		v.PEM = string(b)
	}
	if c.CaseInsensitiveID {
		f := false
		v.IsVerifierIDCaseSensitive = &f
	}
	if v.JWKSURL == "" && v.PEM == "" && v.DiscoveryURL == "" {
		return errors.New("the nodes need a verifier: give --jwks-url or --pem-file with --issuer and --audience, or --discovery-url with --client-id")
	}
	netPath := filepath.Join(c.Dir, "network.json")
	if _, err := os.Stat(netPath); err == nil && !c.Force {
		return fmt.Errorf("%s exists; give --force to overwrite it", netPath)
	}
	file := keynet.NetworkFile{Network: keynet.NetworkConfig{Name: c.Network}, Verifiers: []idtoken.Config{v}}
	for i := 1; i <= c.Nodes; i++ {
		key, _, err := keynet.LoadOrCreateNodeKey(filepath.Join(c.Dir, "node"+strconv.Itoa(i), keynet.NodeKeyFile))
		if err != nil {
			return err
		}
		u := fmt.Sprintf("http://%s/", net.JoinHostPort(c.Host, strconv.Itoa(c.BasePort+i-1)))
		if len(c.URL) > 0 {
			u = c.URL[i-1]
		}
		file.Network.Nodes = append(file.Network.Nodes, keynet.Peer{Index: i, URL: u, PublicKey: keynet.NodePublicKeyHex(key)})
	}
	if err := file.Validate(); err != nil {
		return err
	}
	b, err := file.Marshal()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(netPath, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "wrote %s: network %s, %d nodes, threshold %d\n", netPath, c.Network, c.Nodes, file.Network.Threshold())
	fmt.Fprintln(s.Out, "start each node in its own terminal (or with &):")
	for i := 1; i <= c.Nodes; i++ {
		fmt.Fprintf(s.Out, "  portico auth node --config %s --index %d --data-dir %s\n", netPath, i, filepath.Join(c.Dir, "node"+strconv.Itoa(i)))
	}
	return nil
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

// AuthNodeKeyCmd prints a node's public key.
type AuthNodeKeyCmd struct {
	DataDir string `help:"The node's data directory; its key file is node.key in it." type:"path" xor:"where" required:""`
	KeyFile string `help:"The node's key file." type:"path" xor:"where" required:""`
}

// Run prints the public key, making the key file first if needed.
func (c *AuthNodeKeyCmd) Run(s *Streams) error {
	path := c.KeyFile
	if path == "" {
		path = filepath.Join(c.DataDir, keynet.NodeKeyFile)
	}
	key, created, err := keynet.LoadOrCreateNodeKey(path)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(s.Err, "made a new node key %s\n", path)
	}
	_, err = fmt.Fprintln(s.Out, keynet.NodePublicKeyHex(key))
	return err
}

// AuthNodeValidateCmd checks a network file.
type AuthNodeValidateCmd struct {
	Config string `help:"The network file." type:"existingfile" required:""`
}

// Run loads the file, builds every verifier, and prints a summary.
func (c *AuthNodeValidateCmd) Run(s *Streams) error {
	file, err := keynet.LoadNetworkFile(c.Config)
	if err != nil {
		return err
	}
	reg, err := idtoken.NewRegistry(file.Verifiers, idtoken.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "%s: network %s, %d nodes, threshold %d, verifiers %v\n", c.Config, file.Network.Name,
		len(file.Network.Nodes), file.Network.Threshold(), reg.Names())
	for _, p := range file.Network.Nodes {
		fmt.Fprintf(s.Out, "  node %d  %s\n", p.Index, p.URL)
	}
	return nil
}
