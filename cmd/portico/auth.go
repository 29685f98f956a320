package main

import (
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
	"sync"
	"time"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/sessionserver"
)

// AuthCmd groups the auth system's commands.
type AuthCmd struct {
	Serve   AuthServeCmd   `cmd:"" help:"Run the auth server (the session server the auth SDK logs in against)."`
	Migrate AuthMigrateCmd `cmd:"" help:"Migrate a v6 auth SDK init config (JSON) to v7: the v7 JSON on stdout, one line per change on stderr."`
	Node    AuthNodeCmd    `cmd:"" help:"Run one node of the key network as its own process, or set up a network of them (init, key, validate)."`
}

// AuthServeCmd runs the auth server until interrupted.
type AuthServeCmd struct {
	Listen   string `help:"Address to listen on." default:"127.0.0.1:8550" env:"PORTICO_AUTH_LISTEN"`
	DataDir  string `help:"Directory of the SQLite session database (auth-sessions.db); without it (and without --postgres) sessions are kept in memory." type:"path" env:"PORTICO_DATA_DIR"`
	Postgres string `help:"PostgreSQL URL for the session records, shared by many auth server instances." env:"PORTICO_AUTH_POSTGRES"`
}

// Run serves until ctx ends, then shuts down gracefully.
func (c *AuthServeCmd) Run(ctx context.Context, s *Streams) error {
	log := slog.New(slog.NewTextHandler(s.Err, nil))
	var (
		db  *sessionserver.DB
		err error
	)
	switch {
	case c.Postgres != "":
		db, err = sessionserver.OpenPostgres(ctx, c.Postgres)
	case c.DataDir != "":
		if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		db, err = sessionserver.OpenSQLite(ctx, filepath.Join(c.DataDir, "auth-sessions.db"))
	default:
		log.Warn("no --data-dir or --postgres: sessions are kept in memory and lost on exit")
		db, err = sessionserver.OpenSQLite(ctx, "")
	}
	if err != nil {
		return err
	}
	defer db.Close()

	sessions := sessionserver.New(sessionserver.Config{Store: db, Logger: log})
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           authMux(sessions),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	sweepCtx, stopSweep := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { sessions.RunSweeper(sweepCtx) })
	defer func() { stopSweep(); wg.Wait() }()

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(s.Out, "portico auth: serving the session server on http://%s/\n", ln.Addr())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// authMux routes the auth server: the session server at the root (its
// base URL is the server's), and a health check. The login pages and the
// key network are to be registered here as well.
func authMux(sessions *sessionserver.Server) *http.ServeMux {
	mux := http.NewServeMux()
	sessions.Register(mux, "/")
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	})
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
