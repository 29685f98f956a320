package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

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
	p, err := keynet.StartProcess(ctx, keynet.ProcessConfig{File: c.Config, Index: c.Index, Listen: c.Listen,
		DataDir: c.DataDir, Postgres: c.Postgres, KeyFile: c.KeyFile, Logger: slog.New(slog.NewTextHandler(s.Err, nil)),
		OnNewKey: func(path, pub string) {
			fmt.Fprintf(s.Out, "portico auth node: made a new node key %s; its public key is %s\n", path, pub)
		}})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "portico auth node %d/%d (network %s) listening on http://%s/\n", c.Index, len(p.File.Network.Nodes), p.File.Network.Name, p.Addr)
	return p.Wait(ctx)
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
	file, netPath, err := keynet.InitNetwork(keynet.InitConfig{Nodes: c.Nodes, Dir: c.Dir, Network: c.Network,
		Host: c.Host, BasePort: c.BasePort, URLs: c.URL, Force: c.Force, Verifier: v})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "wrote %s: network %s, %d nodes, threshold %d\n", netPath, c.Network, c.Nodes, file.Network.Threshold())
	fmt.Fprintln(s.Out, "start each node in its own terminal (or with &):")
	for i := 1; i <= c.Nodes; i++ {
		fmt.Fprintf(s.Out, "  portico auth node --config %s --index %d --data-dir %s\n", netPath, i, keynet.InitNodeDir(c.Dir, i))
	}
	return nil
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
