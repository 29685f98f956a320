package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/keynet"
	"github.com/porticohq/portico/authd/login"
	"github.com/porticohq/portico/authd/sessionserver"
)

// AuthCmd groups the auth system's commands.
type AuthCmd struct {
	Serve   AuthServeCmd   `cmd:"" help:"Run the auth server the auth SDK logs in against: login pages, session server and an embedded key network."`
	Migrate AuthMigrateCmd `cmd:"" help:"Migrate a v6 auth SDK init config (JSON) to v7: the v7 JSON on stdout, one line per change on stderr."`
	Node    AuthNodeCmd    `cmd:"" help:"Run one node of the key network as its own process, or set up a network of them (init, key, validate)."`
}

// AuthServeCmd runs the auth server until interrupted.
type AuthServeCmd struct {
	Listen      string   `help:"Address to listen on." default:"127.0.0.1:8550" env:"PORTICO_AUTH_LISTEN"`
	DataDir     string   `help:"Directory of the SQLite session database (auth-sessions.db) and the embedded key nodes' databases (keynet/); without it (and without --postgres) everything is kept in memory." type:"path" env:"PORTICO_DATA_DIR"`
	Postgres    string   `help:"PostgreSQL URL for the session records, shared by many auth server instances (and for the embedded key nodes when there is no --data-dir)." env:"PORTICO_AUTH_POSTGRES"`
	PublicURL   string   `help:"Public base URL of the login pages (the SDK's sdkUrl for buildEnv production); default http://<listen address>." env:"PORTICO_AUTH_PUBLIC_URL"`
	LoginConfig string   `help:"JSON file with the login providers (oidc, verifiers, passwordless, baseUrls); see docs/auth.md." type:"existingfile" env:"PORTICO_AUTH_CONFIG"`
	Networks    []string `help:"Key networks to run embedded (5 nodes each, threshold 3); default all." env:"PORTICO_AUTH_NETWORKS"`
}

// Run serves until ctx ends, then shuts down gracefully.
func (c *AuthServeCmd) Run(ctx context.Context, s *Streams) error {
	a, err := startAuthServer(ctx, authServerOptions{Listen: c.Listen, DataDir: c.DataDir, Postgres: c.Postgres,
		PublicURL: c.PublicURL, LoginConfig: c.LoginConfig, Networks: c.Networks}, s.Err)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "portico auth: serving the session server on %s/\n", a.URL)
	fmt.Fprintf(s.Out, "portico auth: login pages at %s/start (sdkUrl %s; staging %s, testing %s)\n", a.BaseURLs[auth.Production],
		a.BaseURLs[auth.Production], a.BaseURLs[auth.Staging], a.BaseURLs[auth.Testing])
	fmt.Fprintf(s.Out, "portico auth: key networks %s (embedded, 5 nodes, threshold 3)\n", strings.Join(a.Networks, ", "))
	select {
	case err := <-a.served:
		a.Close()
		return err
	case <-ctx.Done():
	}
	return a.Close()
}

// authServerOptions configure an auth server.
type authServerOptions struct {
	Listen, DataDir, Postgres, PublicURL, LoginConfig string
	Networks                                          []string
}

// authServer is a running auth server: the session server, the login
// pages and the embedded key network on one listener.
type authServer struct {
	URL      string
	BaseURLs map[auth.BuildEnv]string
	Networks []string

	srv    *http.Server
	served chan error
	stop   func()
	once   sync.Once
	err    error
}

// loginFile is the --login-config file: the providers of the login pages.
type loginFile struct {
	// BaseURLs per build environment; default from the public URL.
	BaseURLs map[auth.BuildEnv]string `json:"baseUrls,omitempty"`
	// Passwordless turns the dev-only email passwordless provider on or
	// off (default on).
	Passwordless *bool `json:"passwordless,omitempty"`
	// OIDC providers and custom JWT verifiers.
	OIDC      []login.OIDCProvider `json:"oidc,omitempty"`
	Verifiers []idtoken.Config     `json:"verifiers,omitempty"`
}

// loadLoginFile reads the file strictly, with ${ENV} expanded.
func loadLoginFile(path string) (loginFile, error) {
	var f loginFile
	if path == "" {
		return f, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return f, err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(os.Expand(string(b), os.Getenv))))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("login config %s: %w", path, err)
	}
	return f, nil
}

// startAuthServer opens the session store, starts the embedded key
// network, builds the login pages and serves them all on one listener.
func startAuthServer(ctx context.Context, o authServerOptions, logOut io.Writer) (_ *authServer, err error) {
	log := slog.New(slog.NewTextHandler(logOut, nil))
	file, err := loadLoginFile(o.LoginConfig)
	if err != nil {
		return nil, err
	}
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	var db *sessionserver.DB
	switch {
	case o.Postgres != "":
		db, err = sessionserver.OpenPostgres(ctx, o.Postgres)
	case o.DataDir != "":
		if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		db, err = sessionserver.OpenSQLite(ctx, filepath.Join(o.DataDir, "auth-sessions.db"))
	default:
		log.Warn("no --data-dir or --postgres: sessions are kept in memory and lost on exit")
		db, err = sessionserver.OpenSQLite(ctx, "")
	}
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { db.Close() })

	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { ln.Close() })
	public := strings.TrimRight(o.PublicURL, "/")
	if public == "" {
		public = "http://" + ln.Addr().String()
	}
	cfg := login.Config{BaseURLs: login.DefaultBaseURLs(public), OIDC: file.OIDC, Verifiers: file.Verifiers, Logger: log,
		Sessions: &sessionapi.Client{BaseURL: "http://" + ln.Addr().String() + "/"}}
	for env, u := range file.BaseURLs {
		cfg.BaseURLs[env] = u
	}
	if file.Passwordless == nil || *file.Passwordless {
		if cfg.Passwordless, err = login.NewPasswordless(public); err != nil {
			return nil, err
		}
	}
	nodeDir := ""
	if o.DataDir != "" {
		nodeDir = filepath.Join(o.DataDir, "keynet")
		if err := os.MkdirAll(nodeDir, 0o700); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
	}
	networks := o.Networks
	if len(networks) == 0 {
		networks = keynet.Networks()
	}
	nodePostgres := ""
	switch {
	case nodeDir == "" && o.Postgres != "":
		nodePostgres = o.Postgres
	case nodeDir == "":
		log.Warn("no --data-dir or --postgres: the key network's shares are kept in memory; users get new keys after a restart")
	}
	kn, err := keynet.StartEmbedded(ctx, keynet.EmbeddedOptions{Networks: networks, Verifiers: cfg.VerifierConfigs(), Dir: nodeDir,
		PostgresDSN: nodePostgres, Logger: log.With("component", "keynet")})
	if err != nil {
		return nil, fmt.Errorf("key network: %w", err)
	}
	closers = append(closers, func() { kn.Close() })
	cfg.Networks = map[string]*keynet.Client{}
	for _, n := range networks {
		if cfg.Networks[n], err = kn.Client(n, nil); err != nil {
			return nil, err
		}
	}
	pages, err := login.New(cfg)
	if err != nil {
		return nil, err
	}
	sessions := sessionserver.New(sessionserver.Config{Store: db, Logger: log})
	a := &authServer{URL: "http://" + ln.Addr().String(), BaseURLs: cfg.BaseURLs, Networks: networks, served: make(chan error, 1)}
	a.srv = &http.Server{
		Handler:           authMux(sessions, pages),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { sessions.RunSweeper(sweepCtx) })
	closers = append(closers, func() { stopSweep(); wg.Wait() })
	go func() { a.served <- a.srv.Serve(ln) }()
	a.stop = cleanup
	return a, nil
}

// Close shuts the server down gracefully, then stops the key network and
// closes the session store.
func (a *authServer) Close() error {
	a.once.Do(func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a.err = a.srv.Shutdown(shutdownCtx)
		select {
		case err := <-a.served:
			if !errors.Is(err, http.ErrServerClosed) && a.err == nil {
				a.err = err
			}
		default:
		}
		a.stop()
	})
	return a.err
}

// startServeAuth starts the auth server beside `portico serve` on its own
// port: listen, or 127.0.0.1:8550 (port 0 when the gateway's listener is
// port 0, as in tests), with its state under dataDir/auth. It prints one
// line and returns the server to close.
func startServeAuth(ctx context.Context, listen, gatewayListen, dataDir string, s *Streams) (*authServer, error) {
	if listen == "" {
		listen = "127.0.0.1:8550"
		if _, port, err := net.SplitHostPort(gatewayListen); err == nil && port == "0" {
			listen = "127.0.0.1:0"
		}
	}
	if dataDir != "" {
		dataDir = filepath.Join(dataDir, "auth")
	}
	a, err := startAuthServer(ctx, authServerOptions{Listen: listen, DataDir: dataDir}, s.Err)
	if err != nil {
		return nil, fmt.Errorf("auth server: %w", err)
	}
	fmt.Fprintf(s.Out, "auth: %s/ (login pages, session server)\n", a.URL)
	return a, nil
}

// authMux routes the auth server: the session server at the root (its
// base URL is the server's), a health check, and the login pages for
// everything else (<base>/start, <base>/login/…, /oidc/callback, /jwks.json).
func authMux(sessions *sessionserver.Server, pages http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	sessions.Register(mux, "/")
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.Handle("/", pages)
	return mux
}

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
