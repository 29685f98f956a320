package main

import (
	"context"
	"io"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/server"
)

// Streams are the command's standard output and error.
type Streams struct {
	Out io.Writer
	Err io.Writer
	// In is standard input for the commands that read it (wallet's
	// code prompt); nil means os.Stdin.
	In io.Reader
}

// ServeCmd runs the gateway until interrupted.
type ServeCmd struct {
	Config  string `help:"YAML config file; without one the three built-in networks run on embedded defaults." type:"existingfile" env:"PORTICO_CONFIG"`
	Listen  string `help:"Shared listener address (default ${default_listen}); each network also gets the next port of its own, or port 0 when this is port 0." env:"PORTICO_LISTEN"`
	DataDir string `help:"Directory for persistent state (dev key, devnet chains); empty keeps nothing." type:"path" env:"PORTICO_DATA_DIR"`
	Pprof   string `help:"Serve Go's profiling endpoints (/debug/pprof/) on this address, e.g. 127.0.0.1:6060; off when empty." env:"PORTICO_PPROF"`
	// The auth server (login pages, session server, key network) on its own port.
	AuthListen string `help:"Address of the auth server (login pages, session server, embedded key network); default 127.0.0.1:8550, or port 0 when --listen is port 0." env:"PORTICO_SERVE_AUTH_LISTEN"`
	NoAuth     bool   `help:"Do not start the auth server." env:"PORTICO_NO_AUTH"`
	// What portico auth serve takes as --login-config, --dev-log-codes
	// and --node-key-dir.
	AuthLoginConfig string `help:"JSON file with the auth server's login providers (smtp for email codes, oidc, verifiers, passwordless, baseUrls), as portico auth serve --login-config takes; see docs/auth.md." type:"existingfile" env:"PORTICO_SERVE_AUTH_CONFIG"`
	AuthDevLogCodes bool   `help:"DEVELOPMENT ONLY: write the auth server's email login codes to the log instead of mailing them (without smtp in --auth-login-config); make run passes it." env:"PORTICO_SERVE_AUTH_DEV_LOG_CODES"`
	AuthNodeKeyDir  string `help:"Directory of the embedded key nodes' key files, which seal their shares; default <data-dir>.node-keys beside the data directory, so that a copy of the data directory does not carry the keys that open it." type:"path" env:"PORTICO_SERVE_AUTH_NODE_KEY_DIR"`
	DevDashboard    bool   `help:"DEVELOPMENT: without admin.token in the config, turn the admin API and the dashboard on with a dev admin token, kept beside the dev key (<data-dir>/dev-admin-token) and printed on a ready line; make run passes it." env:"PORTICO_DEV_DASHBOARD"`
}

// Run loads the config, starts serving and waits for ctx to end.
func (c *ServeCmd) Run(ctx context.Context, s *Streams) error {
	cfg := config.DefaultConfig()
	if c.Config != "" {
		var err error
		if cfg, err = config.Load(c.Config); err != nil {
			return err
		}
	}
	c.override(&cfg)
	if c.Pprof != "" {
		p, err := server.ServePprof(c.Pprof)
		if err != nil {
			return err
		}
		defer p.Close()
	}
	version, _ := buildVersion()
	m := &server.Server{Config: cfg, Stdout: s.Out, Stderr: s.Err, DevDashboard: c.DevDashboard,
		Version: version, ConfigPath: c.Config, Overrides: c.override}
	if err := m.Run(ctx); err != nil {
		m.Close()
		return err
	}
	// SIGHUP reloads the config file (docs/operations.md).
	stopHUP := m.ReloadOnHangup(ctx)
	defer stopHUP()
	if !c.NoAuth {
		a, err := startServeAuth(ctx, c, cfg.Listen, cfg.DataDir, m.Logger(), s)
		if err != nil {
			m.Close()
			return err
		}
		defer a.Close()
	}
	<-ctx.Done()
	return m.Close()
}

// override applies the command line's settings over a config.
func (c *ServeCmd) override(cfg *config.Config) {
	if c.Listen != "" {
		cfg.Listen = c.Listen
	}
	if c.DataDir != "" {
		cfg.DataDir = c.DataDir
	}
}
