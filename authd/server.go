// Package authd is the auth server an auth SDK logs in against: the session
// server (package sessionserver), the login pages (package login) and an
// embedded key network (package keynet) behind one http.Handler, with a
// front page and a health check.
//
// New takes everything from its Config and starts what must run (the key
// nodes, the session sweeper); Close stops it all. Listen serves it on a
// listener of its own (`portico auth serve`), ListenBesideGateway beside
// the gateway (`portico serve`), with the development client registered
// (listen.go).
//
// The package links no part of the SDK (package auth): the types both sides
// put on the wire are in auth/authwire.
package authd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/porticohq/portico/auth/authwire"
	"github.com/porticohq/portico/authd/clients"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/keynet"
	"github.com/porticohq/portico/authd/login"
	"github.com/porticohq/portico/authd/mailer"
	"github.com/porticohq/portico/authd/sessionserver"
)

// Paths the server answers besides the login pages.
const (
	// SessionServerPath is where the session server is mounted: at the
	// root, as an SDK derives it from a custom sdkUrl's origin.
	SessionServerPath = "/"
	// HealthPath answers GET with "ok".
	HealthPath = "/healthz"
)

// Config is what an auth server is made of. Only PublicURL is required.
type Config struct {
	// PublicURL is the login pages' public base URL: an SDK's sdkUrl for
	// buildEnv production, the issuer of the passwordless provider's
	// tokens, and the root of the staging and testing base URLs unless
	// Login.BaseURLs sets them.
	PublicURL string
	// DataDir, if set, holds the session records (auth-sessions.db, unless
	// Postgres is set) and the embedded key nodes' databases
	// (keynet/<network>-node<i>.db). It is made if missing.
	DataDir string
	// Postgres, if set, is the PostgreSQL URL of the session records,
	// shared by many instances, and of the key nodes' shares when there is
	// no DataDir. Without either, everything is kept in memory (a warning
	// says so: users then get new keys after a restart).
	Postgres string
	// NodeKeyDir holds the embedded key nodes' key files, one per node,
	// with which each seals its shares at rest. It must not be inside
	// DataDir; the default is DataDir + ".node-keys" beside it, and it is
	// required with Postgres and no DataDir.
	NodeKeyDir string
	// Login are the sign-in providers and base URLs (the login config
	// file); the zero value has the passwordless provider on.
	Login LoginFile
	// Networks are the key networks to run embedded, 5 nodes each,
	// threshold 3; all of keynet.Networks() if empty.
	Networks []string
	// Clients are registered (or updated) in the client registry at
	// start, next to those registered with `portico auth clients add`.
	Clients []clients.Client
	// DemoClientID, if set, puts a demo login on the front page: a button
	// that starts a real email login for this client (portico serve: its
	// development client), which returns to the server's own /callback/demo
	// page. It shows while the client may return there (a development
	// client's loopback redirects allow it on a loopback PublicURL) and
	// email login is on.
	DemoClientID string
	// Limits bound what a client IP, an email address and a user can do
	// through the login pages; SessionLimits what a client IP can do with
	// the session server. Zero fields take the defaults (docs/auth.md).
	Limits        login.Limits
	SessionLimits sessionserver.Limits
	// Redis, if set (a redis:// URL), counts those limits across every
	// instance that shares it, under RedisPrefix ("portico:auth:" if
	// empty); without it each instance counts its own.
	Redis, RedisPrefix string
	// Now is the session server's clock (record expiry and its limits);
	// time.Now if nil.
	Now func() time.Time
	// ClientIPHeader, if set, is the header a reverse proxy puts the
	// client's address in; every per-client limit keys on it. Set it only
	// behind such a proxy, or clients choose their own limit key.
	ClientIPHeader string
	// DevLogCodes writes the passwordless codes to the log (at WARN,
	// marked DEV ONLY) instead of mailing them: whoever reads the log can
	// sign in as anyone. Development only; without it codes need
	// Login.SMTP.
	DevLogCodes bool
	// DevAnyClient accepts every client id with any redirect URL. Anyone
	// can then start a login with another app's client id and read that
	// app's key for the user: development only, and New logs a warning.
	DevAnyClient bool
	// Logger receives the server's log, the dev-only passwordless codes
	// included; nil discards it.
	Logger *slog.Logger
}

// ConfigError names a bad field of Config.
type ConfigError struct {
	// Field is the Config field.
	Field string
	// Reason says what is wrong.
	Reason string
}

// Error names the field and the reason.
func (e *ConfigError) Error() string { return "authd: config: " + e.Field + ": " + e.Reason }

// Server is a running auth server. Its handler serves the session server
// at the root (/store/set, /store/get), GET /healthz, a front page at /
// and the login pages (<base>/start, <base>/login/…, /oidc/callback,
// /jwks.json).
type Server struct {
	handler  http.Handler
	baseURLs map[authwire.BuildEnv]string
	networks []string

	closers []func() error // in start order; Close runs them backwards
	once    sync.Once
	err     error
}

// New opens the session store, starts the embedded key network and the
// session sweeper, and builds the pages. On error, whatever it started is
// stopped again.
func New(ctx context.Context, cfg Config) (_ *Server, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	public := strings.TrimRight(cfg.PublicURL, "/")
	if public == "" {
		return nil, &ConfigError{Field: "PublicURL", Reason: "required"}
	}
	s := &Server{networks: slices.Clone(cfg.Networks)}
	if len(s.networks) == 0 {
		s.networks = keynet.Networks()
	}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	db, err := openSessions(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, db.Close)
	shared, err := openShared(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if shared != nil {
		s.closers = append(s.closers, shared.Close)
	}
	sessions := sessionserver.New(sessionserver.Config{Store: db, Logger: log, ClientIPHeader: cfg.ClientIPHeader, Limits: cfg.SessionLimits, Now: cfg.Now,
		Shared: shared.limits()})

	registry, err := openClients(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, registry.Close)
	for _, c := range cfg.Clients {
		if err := registry.Put(ctx, c); err != nil {
			return nil, &ConfigError{Field: "Clients", Reason: err.Error()}
		}
	}
	var reg clients.Registry = registry
	if cfg.DevAnyClient {
		reg = clients.AnyClient{}
		log.Warn("DEV MODE: every client id is accepted with any redirect URL; any page can start a login for another app and read its users' keys. Never use this where real users log in.", "devOnly", true)
	}

	pages := login.Config{BaseURLs: login.DefaultBaseURLs(public), OIDC: cfg.Login.OIDC, Verifiers: cfg.Login.Verifiers,
		Logger: log, Sessions: sessions.Client(), Clients: reg, Limits: cfg.Limits, ClientIPHeader: cfg.ClientIPHeader, Shared: shared.limits()}
	maps.Copy(pages.BaseURLs, cfg.Login.BaseURLs)
	on, err := cfg.Login.passwordless(cfg.DevLogCodes)
	if err != nil {
		return nil, err
	}
	if on {
		if pages.Passwordless, err = login.NewPasswordless(public); err != nil {
			return nil, err
		}
		if cfg.Login.SMTP != nil {
			m, err := mailer.New(*cfg.Login.SMTP)
			if err != nil {
				return nil, &ConfigError{Field: "Login.smtp", Reason: err.Error()}
			}
			pages.Passwordless.Mailer = m
		} else {
			pages.Passwordless.DevLogCodes = true
			log.Warn("DEV MODE: passwordless codes are written to this log instead of mailed; whoever reads it can sign in as anyone. Configure smtp in the login config for real users.", "devOnly", true)
		}
	} else if cfg.Login.Passwordless == nil {
		log.Info("email passwordless is off: no smtp in the login config")
	}
	kn, err := startKeyNetwork(ctx, cfg, s.networks, pages.VerifierConfigs(), log)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, kn.Close)
	pages.Networks = map[string]*keynet.Client{}
	for _, n := range s.networks {
		if pages.Networks[n], err = kn.Client(n, nil); err != nil {
			return nil, err
		}
	}
	h, err := login.New(pages)
	if err != nil {
		return nil, err
	}
	s.baseURLs = pages.BaseURLs

	sweepCtx, stopSweep := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { sessions.RunSweeper(sweepCtx) })
	s.closers = append(s.closers, func() error { stopSweep(); wg.Wait(); return nil })

	mux := http.NewServeMux()
	sessions.Register(mux, SessionServerPath)
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	})
	ix := login.Index{SessionServer: SessionServerPath, Health: HealthPath}
	if cfg.DemoClientID != "" {
		ix.Demo = &login.Demo{ClientID: cfg.DemoClientID, RedirectURL: public + login.DemoDonePath}
		demo := h.DemoHandler(*ix.Demo)
		mux.Handle("POST "+login.DemoPath, demo)
		mux.Handle("GET "+login.DemoDonePath, demo)
	}
	mux.Handle("GET /{$}", h.IndexHandler(ix))
	mux.Handle("/", h)
	s.handler = mux
	return s, nil
}

// openSessions opens the session store: PostgreSQL, else SQLite in the
// data directory, else SQLite in memory.
func openSessions(ctx context.Context, cfg Config, log *slog.Logger) (*sessionserver.DB, error) {
	switch {
	case cfg.Postgres != "":
		return sessionserver.OpenPostgres(ctx, cfg.Postgres)
	case cfg.DataDir != "":
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		return sessionserver.OpenSQLite(ctx, filepath.Join(cfg.DataDir, DatabaseFile))
	}
	log.Warn("no data dir or PostgreSQL: sessions are kept in memory and lost on exit")
	return sessionserver.OpenSQLite(ctx, "")
}

// openClients opens the client registry where the session records are:
// PostgreSQL, else the SQLite database in the data directory, else memory.
func openClients(ctx context.Context, cfg Config) (*clients.DB, error) {
	switch {
	case cfg.Postgres != "":
		return clients.OpenPostgres(ctx, cfg.Postgres)
	case cfg.DataDir != "":
		return clients.OpenSQLite(ctx, filepath.Join(cfg.DataDir, DatabaseFile))
	}
	return clients.OpenSQLite(ctx, "")
}

// DatabaseFile is the SQLite database in the data directory that holds
// the session records and the client registry.
const DatabaseFile = "auth-sessions.db"

// startKeyNetwork starts the embedded nodes: SQLite in the data directory,
// else PostgreSQL, else SQLite in memory.
func startKeyNetwork(ctx context.Context, cfg Config, networks []string, verifiers []idtoken.Config, log *slog.Logger) (*keynet.Embedded, error) {
	opts := keynet.EmbeddedOptions{Networks: networks, Verifiers: verifiers, Logger: log.With("component", "keynet"), KeyDir: cfg.NodeKeyDir}
	switch {
	case cfg.DataDir != "":
		opts.Dir = filepath.Join(cfg.DataDir, "keynet")
		if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		if opts.KeyDir == "" {
			opts.KeyDir = filepath.Clean(cfg.DataDir) + ".node-keys"
		}
	case cfg.Postgres != "":
		opts.PostgresDSN = cfg.Postgres
		if opts.KeyDir == "" {
			return nil, &ConfigError{Field: "NodeKeyDir", Reason: "required with Postgres and no DataDir: the embedded key nodes' key files seal their shares"}
		}
	default:
		log.Warn("no data dir or PostgreSQL: the key network's shares are kept in memory; users get new keys after a restart")
	}
	log.Warn("DEVELOPMENT SETUP: the embedded key network runs every node of each network in this process, so this host is one trust domain: whoever controls it can rebuild any user's network key. Run the nodes on separate hosts for real users (docs/auth-keys.md).",
		"devOnly", true, "nodeKeyDir", opts.KeyDir)
	kn, err := keynet.StartEmbedded(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("key network: %w", err)
	}
	return kn, nil
}

// Handler serves the auth server.
func (s *Server) Handler() http.Handler { return s.handler }

// BaseURLs are the login pages' base URLs per build environment: what an
// SDK is given as sdkUrl. The map is a copy.
func (s *Server) BaseURLs() map[authwire.BuildEnv]string { return maps.Clone(s.baseURLs) }

// Networks are the key networks served, in start order.
func (s *Server) Networks() []string { return slices.Clone(s.networks) }

// Close stops the session sweeper and the key network and closes the
// session store. Stop serving the handler first: requests in flight need
// them.
func (s *Server) Close() error {
	s.once.Do(func() {
		var errs []error
		for _, c := range slices.Backward(s.closers) {
			errs = append(errs, c())
		}
		s.err = errors.Join(errs...)
	})
	return s.err
}
