package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/authd"
)

// AuthCmd groups the auth system's commands.
type AuthCmd struct {
	Serve   AuthServeCmd   `cmd:"" help:"Run the auth server the auth SDK logs in against: login pages, session server and an embedded key network."`
	Migrate AuthMigrateCmd `cmd:"" help:"Migrate a v6 auth SDK init config (JSON) to v7: the v7 JSON on stdout, one line per change on stderr."`
	Node    AuthNodeCmd    `cmd:"" help:"Run one node of the key network as its own process, or set up a network of them (init, key, validate)."`
	Clients AuthClientsCmd `cmd:"" help:"Manage the client registry: the client ids that may log users in and their redirect URLs."`
}

// AuthServeCmd runs the auth server until interrupted.
type AuthServeCmd struct {
	Listen      string   `help:"Address to listen on." default:"127.0.0.1:8550" env:"PORTICO_AUTH_LISTEN"`
	DataDir     string   `help:"Directory of the SQLite session database (auth-sessions.db) and the embedded key nodes' databases (keynet/); without it (and without --postgres) everything is kept in memory." type:"path" env:"PORTICO_DATA_DIR"`
	Postgres    string   `help:"PostgreSQL URL for the session records, shared by many auth server instances (and for the embedded key nodes when there is no --data-dir)." env:"PORTICO_AUTH_POSTGRES"`
	PublicURL   string   `help:"Public base URL of the login pages (the SDK's sdkUrl for buildEnv production); default http://<listen address>." env:"PORTICO_AUTH_PUBLIC_URL"`
	LoginConfig string   `help:"JSON file with the login providers (oidc, verifiers, passwordless, baseUrls); see docs/auth.md." type:"existingfile" env:"PORTICO_AUTH_CONFIG"`
	Networks    []string `help:"Key networks to run embedded (5 nodes each, threshold 3); default all." env:"PORTICO_AUTH_NETWORKS"`
	NodeKeyDir  string   `help:"Directory of the embedded key nodes' key files (each seals its node's shares at rest); default <data-dir>.node-keys beside the data dir, required with --postgres and no --data-dir." type:"path" env:"PORTICO_AUTH_NODE_KEY_DIR"`
	DevLogCodes bool     `help:"DEVELOPMENT ONLY: write email passwordless codes to the log instead of mailing them (without smtp in --login-config)." env:"PORTICO_AUTH_DEV_LOG_CODES"`
	// DevAnyClient is the development mode without a client registry.
	DevAnyClient   bool   `help:"DEVELOPMENT ONLY: accept every client id with any redirect URL (any page can then phish another app's keys)." env:"PORTICO_AUTH_DEV_ANY_CLIENT"`
	ClientIPHeader string `help:"Header a reverse proxy puts the client's address in (e.g. X-Forwarded-For); the per-client limits key on it. Only behind such a proxy." env:"PORTICO_AUTH_CLIENT_IP_HEADER"`
	Redis          string `help:"Redis URL (redis://…) in which the login, code, password and session limits are counted across every auth server instance that shares it; without it each instance counts its own." env:"PORTICO_AUTH_REDIS"`
	RedisPrefix    string `help:"Prefix of the auth server's Redis keys." default:"portico:auth:" env:"PORTICO_AUTH_REDIS_PREFIX"`
}

// Run serves until ctx ends, then shuts down gracefully.
func (c *AuthServeCmd) Run(ctx context.Context, s *Streams) error {
	login, err := authd.LoadLoginFile(c.LoginConfig)
	if err != nil {
		return err
	}
	a, err := authd.Listen(ctx, c.Listen, authd.Config{DataDir: c.DataDir, Postgres: c.Postgres, PublicURL: c.PublicURL,
		Login: login, Networks: c.Networks, DevAnyClient: c.DevAnyClient, DevLogCodes: c.DevLogCodes, ClientIPHeader: c.ClientIPHeader, NodeKeyDir: c.NodeKeyDir,
		Redis: c.Redis, RedisPrefix: c.RedisPrefix}, slog.New(slog.NewTextHandler(s.Err, nil)))
	if err != nil {
		return err
	}
	if c.DevAnyClient {
		fmt.Fprintln(s.Out, "portico auth: DEVELOPMENT MODE (--dev-any-client): every client id is accepted with any redirect URL; never use it where real users log in")
	}
	base := a.Server.BaseURLs()
	fmt.Fprintf(s.Out, "portico auth: serving the session server on %s/\n", a.URL)
	fmt.Fprintf(s.Out, "portico auth: login pages at %s/start (sdkUrl %s; staging %s, testing %s)\n", base[authwire.Production],
		base[authwire.Production], base[authwire.Staging], base[authwire.Testing])
	fmt.Fprintf(s.Out, "portico auth: key networks %s (embedded, 5 nodes, threshold 3)\n", strings.Join(a.Server.Networks(), ", "))
	fmt.Fprintln(s.Out, "portico auth: the embedded key network is a DEVELOPMENT SETUP: all nodes on one host, one trust domain (docs/auth-keys.md shows nodes on separate hosts)")
	if err := a.Wait(ctx); err != nil {
		a.Close()
		return err
	}
	return a.Close()
}

// startServeAuth starts the auth server beside `portico serve` on its own
// port: c.AuthListen, or 127.0.0.1:8550 (port 0 when the gateway's
// listener is port 0, as in tests), with its state under dataDir/auth, its
// node keys beside dataDir (authd.NodeKeyDirBeside) and its log through
// the gateway's logger. Email codes are mailed by the SMTP server of
// c.AuthLoginConfig, or logged with c.AuthDevLogCodes (development only),
// as with portico auth serve; with neither, email login is off. It prints
// its lines and returns the server to close.
func startServeAuth(ctx context.Context, c *ServeCmd, gatewayListen, dataDir string, log *slog.Logger, s *Streams) (*authd.Listener, error) {
	login, err := authd.LoadLoginFile(c.AuthLoginConfig)
	if err != nil {
		return nil, fmt.Errorf("auth server: %w", err)
	}
	a, err := authd.ListenBesideGateway(ctx, authd.BesideGateway{Listen: c.AuthListen, GatewayListen: gatewayListen,
		DataDir: dataDir, NodeKeyDir: c.AuthNodeKeyDir, Login: login, DevLogCodes: c.AuthDevLogCodes}, log.With("component", "auth"))
	if err != nil {
		return nil, fmt.Errorf("auth server: %w", err)
	}
	fmt.Fprintf(s.Out, "auth: %s/ (login pages, session server)\n", a.URL)
	fmt.Fprintf(s.Out, "auth: dev client id %s (redirects to loopback callbacks http://127.0.0.1:*/callback/…); register others with portico auth clients add\n", DevClientID)
	switch {
	case login.SMTP != nil:
		fmt.Fprintf(s.Out, "auth: email login codes are mailed through %s\n", login.SMTP.Host)
	case c.AuthDevLogCodes:
		fmt.Fprintln(s.Out, "auth: email login codes are written to the log (--auth-dev-log-codes: development only)")
	default:
		fmt.Fprintln(s.Out, "auth: email login is off: give smtp in --auth-login-config (or, for development only, --auth-dev-log-codes)")
	}
	if login.SMTP != nil || c.AuthDevLogCodes {
		fmt.Fprintf(s.Out, "auth: demo login: open %s/ and press the button; it logs in by email for %s, as an app's SDK would\n", a.URL, DevClientID)
	}
	return a, nil
}

// DevClientID is the client id `portico serve` registers for the SDK's
// logins from this machine.
const DevClientID = authd.DevClientID

// AuthMigrateCmd migrates a v6 init config to v7.
type AuthMigrateCmd struct {
	File string `arg:"" help:"The v6 JSON file: init params, or {\"init\": …, \"params\": …}; - reads standard input."`
}

// Run prints the v7 init params and the report.
func (c *AuthMigrateCmd) Run(s *Streams) error {
	var (
		in  []byte
		err error
	)
	if c.File == "-" {
		in, err = io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
	} else {
		in, err = os.ReadFile(c.File)
	}
	if err != nil {
		return err
	}
	out, report, err := auth.MigrateV6(in)
	for _, ch := range report {
		fmt.Fprintln(s.Err, ch.String())
	}
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.Out, "%s\n", b)
	return err
}
