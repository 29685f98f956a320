// Package sessionserver serves the auth session protocol (package
// sessionapi): POST store/set stores a signed, encrypted record under a
// session's public key for a limited time; GET store/get returns it. Records
// live in SQLite (one instance) or PostgreSQL (many instances); expired ones
// are never returned and a sweeper deletes them.
//
// The server checks every write's signature against the key it is stored
// under, so only the holder of the session key can write its record. It
// cannot read the records: they are encrypted to the same key. A logout
// (a set with timeout 1) leaves a tombstone covering the key in every
// namespace, so the captured request that wrote the record cannot bring
// it back, under its namespace or any other. Every client IP has limits of
// writes and reads per window and of bytes stored (Limits).
package sessionserver

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd/limit"
)

// Config configures a Server. Store is required; the rest have defaults.
type Config struct {
	// Store keeps the records.
	Store Store
	// Logger receives errors and sweeper reports; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SweepInterval is how often RunSweeper deletes expired records;
	// 0 means one minute.
	SweepInterval time.Duration
	// Limits bound what one client IP may do; zero fields take the
	// defaults of DefaultLimits.
	Limits Limits
	// Shared, if set, counts the limits across the instances that share
	// it (Redis, issue 37).
	Shared limit.Shared
	// ClientIPHeader, if set, is the header a reverse proxy puts the
	// client's address in (its last value is used); only set it behind
	// such a proxy, or clients choose their own limit key.
	ClientIPHeader string
}

// Limits bound what one client IP may do with the session server. A
// negative field turns that limit off. The server's own writes (the
// login pages', through Client) are not limited.
type Limits struct {
	// Window is the length of the windows Writes and Reads count in.
	Window time.Duration
	// Writes is how many set and update requests a client may send per
	// Window.
	Writes int
	// Reads is how many get requests a client may send per Window.
	Reads int
	// StoredBytes bounds the size of the unexpired records a client wrote.
	StoredBytes int64
	// MaxClients bounds the client IPs the counters track in memory.
	MaxClients int
}

// Defaults of Limits.
const (
	DefaultLimitWindow      = 10 * time.Minute
	DefaultWritesPerClient  = 120
	DefaultReadsPerClient   = 600
	DefaultStoredPerClient  = 8 << 20
	DefaultMaxLimitedClient = limit.DefaultMaxKeys
)

// DefaultLimits returns the documented defaults.
func DefaultLimits() Limits {
	return Limits{Window: DefaultLimitWindow, Writes: DefaultWritesPerClient, Reads: DefaultReadsPerClient,
		StoredBytes: DefaultStoredPerClient, MaxClients: DefaultMaxLimitedClient}
}

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Window <= 0 {
		l.Window = d.Window
	}
	if l.Writes == 0 {
		l.Writes = d.Writes
	}
	if l.Reads == 0 {
		l.Reads = d.Reads
	}
	if l.StoredBytes == 0 {
		l.StoredBytes = d.StoredBytes
	}
	if l.MaxClients <= 0 {
		l.MaxClients = d.MaxClients
	}
	return l
}

// Server is the session server's HTTP side.
type Server struct {
	store    Store
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration
	limits   Limits
	ipHeader string
	writes   *limit.Window
	reads    *limit.Window
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	s := &Server{store: cfg.Store, log: cfg.Logger, now: cfg.Now, interval: cfg.SweepInterval,
		limits: cfg.Limits.withDefaults(), ipHeader: cfg.ClientIPHeader}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.interval <= 0 {
		s.interval = time.Minute
	}
	s.writes = &limit.Window{Limit: s.limits.Writes, Per: s.limits.Window, MaxKeys: s.limits.MaxClients, Now: s.now, Shared: cfg.Shared, Name: "session-writes"}
	s.reads = &limit.Window{Limit: s.limits.Reads, Per: s.limits.Window, MaxKeys: s.limits.MaxClients, Now: s.now, Shared: cfg.Shared, Name: "session-reads"}
	return s
}

// Limits are the limits in force, defaults filled in.
func (s *Server) Limits() Limits { return s.limits }

// Register adds the session endpoints to mux under prefix (for example
// "/" or "/session/"), so other handlers (the login pages) can share the
// mux.
func (s *Server) Register(mux *http.ServeMux, prefix string) {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	for path, h := range map[string]http.HandlerFunc{
		sessionapi.SetPath: s.set, sessionapi.V2SetPath: s.set,
		sessionapi.GetPath: s.get, sessionapi.V2GetPath: s.get,
		sessionapi.UpdatePath: s.update, sessionapi.V2UpdatePath: s.update,
	} {
		mux.Handle(prefix+path, cors(h))
	}
}

// Handler returns a handler serving only the session endpoints, at the root.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.Register(mux, "/")
	return mux
}

// RunSweeper deletes expired records every SweepInterval until ctx ends.
func (s *Server) RunSweeper(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n, err := s.store.DeleteExpired(ctx, s.now())
			if err != nil && ctx.Err() == nil {
				s.log.Error("session sweeper", "err", err)
			} else if n > 0 {
				s.log.Debug("session sweeper", "deleted", n)
			}
		}
	}
}

// cors lets the login pages (any origin) call the endpoints. Records are
// encrypted and signed, and no cookies are involved, so any origin may.
func cors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			hd.Set("Access-Control-Allow-Methods", "GET, POST, PUT, OPTIONS")
			hd.Set("Access-Control-Allow-Headers", "Content-Type")
			hd.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, sessionapi.ErrorResponse{Error: msg})
}

// client is the limit key of a request, and whether it is limited at all
// (the server's own requests, through Client, are not).
func (s *Server) client(r *http.Request) (string, bool) {
	if r.Context().Value(inProcessKey{}) != nil {
		return "", false
	}
	return limit.ClientIP(r, s.ipHeader), true
}

// tooMany answers 429 with Retry-After.
func tooMany(w http.ResponseWriter, wait time.Duration, msg string) {
	secs := int(wait.Seconds() + 0.999)
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	fail(w, http.StatusTooManyRequests, msg)
}

// parseKey checks a record key: an uncompressed secp256k1 public key in
// hex. It returns the lower-case form.
func parseKey(k string) (string, error) {
	k = strings.ToLower(strings.TrimPrefix(k, "0x"))
	if len(k) != 130 || !strings.HasPrefix(k, "04") {
		return "", errors.New("key: must be an uncompressed secp256k1 public key, 130 hex characters starting 04")
	}
	if _, err := hex.DecodeString(k); err != nil {
		return "", errors.New("key: not hex")
	}
	return k, nil
}
