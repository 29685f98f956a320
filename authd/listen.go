package authd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/porticohq/portico/authd/clients"
)

// Listener serves an auth server on a listener of its own.
type Listener struct {
	// Server is the auth server.
	Server *Server
	// URL is the listener's http:// URL, without a trailing slash.
	URL string

	srv    *http.Server
	served chan error
	once   sync.Once
	err    error
}

// Listen listens on addr and serves the auth server built from cfg there;
// cfg.PublicURL defaults to the listener's URL, and log is the server's
// logger.
func Listen(ctx context.Context, addr string, cfg Config, log *slog.Logger) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	a := &Listener{URL: "http://" + ln.Addr().String(), served: make(chan error, 1)}
	if cfg.PublicURL == "" {
		cfg.PublicURL = a.URL
	}
	cfg.Logger = log
	if a.Server, err = New(ctx, cfg); err != nil {
		ln.Close()
		return nil, err
	}
	a.srv = &http.Server{
		Handler:           a.Server.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() { a.served <- a.srv.Serve(ln) }()
	return a, nil
}

// Wait returns when ctx ends (nil) or when serving fails (its error).
func (a *Listener) Wait(ctx context.Context) error {
	select {
	case err := <-a.served:
		a.served <- err // for Close
		return err
	case <-ctx.Done():
		return nil
	}
}

// Close shuts the listener down gracefully, then the auth server.
func (a *Listener) Close() error {
	a.once.Do(func() {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := a.srv.Shutdown(shutdownCtx)
		select {
		case serr := <-a.served:
			if !errors.Is(serr, http.ErrServerClosed) && err == nil {
				err = serr
			}
		default:
		}
		a.err = errors.Join(err, a.Server.Close())
	})
	return a.err
}

// BesideGateway says how `portico serve` runs the auth server beside the
// gateway.
type BesideGateway struct {
	// Listen is the auth server's address; "" is 127.0.0.1:8550, or port
	// 0 when GatewayListen is port 0 (as in tests).
	Listen, GatewayListen string
	// DataDir is the gateway's data directory: the auth server keeps its
	// state under DataDir/auth and its node keys beside DataDir
	// (NodeKeyDirBeside), unless NodeKeyDir names them.
	DataDir, NodeKeyDir string
	// Login are the login providers; DevLogCodes logs email codes instead
	// of mailing them (development only).
	Login       LoginFile
	DevLogCodes bool
}

// ListenBesideGateway starts the auth server beside `portico serve` on
// its own port, with the development client (DevClient) registered and
// its log through log.
func ListenBesideGateway(ctx context.Context, b BesideGateway, log *slog.Logger) (*Listener, error) {
	listen := b.Listen
	if listen == "" {
		listen = "127.0.0.1:8550"
		if _, port, err := net.SplitHostPort(b.GatewayListen); err == nil && port == "0" {
			listen = "127.0.0.1:0"
		}
	}
	keyDir, err := NodeKeyDirBeside(b.DataDir, b.NodeKeyDir, log)
	if err != nil {
		return nil, err
	}
	dataDir := b.DataDir
	if dataDir != "" {
		dataDir = filepath.Join(dataDir, "auth")
	}
	return Listen(ctx, listen, Config{DataDir: dataDir, NodeKeyDir: keyDir, Login: b.Login,
		Clients: []clients.Client{DevClient()}, DemoClientID: DevClientID, DevLogCodes: b.DevLogCodes}, log)
}

// NodeKeyDirBeside is where `portico serve` keeps the embedded key nodes'
// key files: keyDir if given, else <dataDir>.node-keys beside the data
// directory (none without one: the nodes then keep nothing). The keys seal
// the shares kept under dataDir/auth; apart from them, a copy or backup
// of the data directory alone opens no share. Before, the default was
// dataDir/auth.node-keys: keys found there are moved to the new place,
// so the shares they sealed still open.
func NodeKeyDirBeside(dataDir, keyDir string, log *slog.Logger) (string, error) {
	if keyDir != "" || dataDir == "" {
		return keyDir, nil
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", err
	}
	keyDir = abs + ".node-keys"
	old := filepath.Join(dataDir, "auth.node-keys")
	if _, err := os.Stat(old); err != nil {
		return keyDir, nil
	}
	switch _, err := os.Stat(keyDir); {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Rename(old, keyDir); err != nil {
			return "", fmt.Errorf("move the node keys out of the data directory, from %s to %s: %w", old, keyDir, err)
		}
		log.Warn("moved the key nodes' key files out of the data directory, so that a copy of it does not carry them", "from", old, "to", keyDir)
	case err == nil:
		log.Warn("node keys found at the old place inside the data directory are not used; remove them once the shares open", "old", old, "used", keyDir)
	default:
		return "", err
	}
	return keyDir, nil
}

// DevClientID is the client id `portico serve` registers for the SDK's
// logins from this machine.
const DevClientID = "portico-dev"

// DevClient is `portico serve`'s development client: the SDK's loopback
// callbacks (RFC 8252: any port) on this machine, nothing else.
func DevClient() clients.Client {
	return clients.Client{ID: DevClientID, Name: "portico serve development client",
		RedirectURLs: []string{"http://127.0.0.1/callback/", "http://[::1]/callback/", "http://localhost/callback/"}}
}

// OpenClients opens the client registry of an auth server that keeps its
// state in dataDir (its SQLite database) or in PostgreSQL at postgres, for
// the commands that manage it.
func OpenClients(ctx context.Context, dataDir, postgres string) (*clients.DB, error) {
	switch {
	case postgres != "":
		return clients.OpenPostgres(ctx, postgres)
	case dataDir != "":
		return clients.OpenSQLite(ctx, filepath.Join(dataDir, DatabaseFile))
	}
	return nil, errors.New("give --data-dir or --postgres: where the auth server keeps its state")
}
