// Package sessionserver serves the auth session protocol (package
// sessionapi): POST store/set stores a signed, encrypted record under a
// session's public key for a limited time; GET store/get returns it. Records
// live in SQLite (one instance) or PostgreSQL (many instances); expired ones
// are never returned and a sweeper deletes them.
//
// The server checks every write's signature against the key it is stored
// under, so only the holder of the session key can write its record. It
// cannot read the records: they are encrypted to the same key.
package sessionserver

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/auth/sessionapi"
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
}

// Server is the session server's HTTP side.
type Server struct {
	store    Store
	log      *slog.Logger
	now      func() time.Time
	interval time.Duration
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	s := &Server{store: cfg.Store, log: cfg.Logger, now: cfg.Now, interval: cfg.SweepInterval}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.interval <= 0 {
		s.interval = time.Minute
	}
	return s
}

// Register adds the session endpoints to mux under prefix (for example
// "/" or "/session/"), so other handlers (the login pages) can share the
// mux.
func (s *Server) Register(mux *http.ServeMux, prefix string) {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	mux.Handle(prefix+sessionapi.SetPath, cors(http.HandlerFunc(s.set)))
	mux.Handle(prefix+sessionapi.GetPath, cors(http.HandlerFunc(s.get)))
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
			hd.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
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

func (s *Server) set(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		fail(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, sessionapi.MaxBodyBytes)
	var req sessionapi.SetRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body: larger than %d bytes", mbe.Limit))
			return
		}
		fail(w, http.StatusBadRequest, "body: not a JSON object with key, data, signature, timeout: "+err.Error())
		return
	}
	status, err := s.checkSet(&req)
	if err != nil {
		fail(w, status, err.Error())
		return
	}
	now := s.now()
	rec := Record{Key: req.Key, Namespace: req.Namespace, Data: req.Data, ExpiresAt: now.Add(time.Duration(req.Timeout) * time.Second)}
	if err := s.store.Put(r.Context(), rec, now); err != nil {
		s.log.Error("session store", "op", "set", "err", err)
		fail(w, http.StatusInternalServerError, "internal error")
		return
	}
	writeJSON(w, http.StatusOK, sessionapi.SetResponse{Message: "success"})
}

// checkSet validates and normalises a set request, returning the HTTP
// status to answer with when it is bad.
func (s *Server) checkSet(req *sessionapi.SetRequest) (int, error) {
	key, err := parseKey(req.Key)
	if err != nil {
		return http.StatusBadRequest, err
	}
	req.Key = key
	pub, err := eccrypto.ParsePublicKeyHex(key)
	if err != nil {
		return http.StatusBadRequest, errors.New("key: not a point on secp256k1")
	}
	switch {
	case req.Data == "":
		return http.StatusBadRequest, errors.New("data: is required")
	case len(req.Data) > sessionapi.MaxDataBytes:
		return http.StatusRequestEntityTooLarge, fmt.Errorf("data: larger than %d bytes", sessionapi.MaxDataBytes)
	}
	if _, err := eccrypto.ParseEncrypted(req.Data); err != nil {
		return http.StatusBadRequest, fmt.Errorf("data: not an encrypted message (iv, ephemPublicKey, ciphertext, mac): %v", err)
	}
	if req.Signature == "" {
		return http.StatusBadRequest, errors.New("signature: is required")
	}
	var sig eccrypto.Signature
	if err := json.Unmarshal([]byte(req.Signature), &sig); err != nil {
		return http.StatusBadRequest, errors.New(`signature: not a JSON string {"r","s"}`)
	}
	if !eccrypto.Verify(pub, []byte(req.Data), sig) {
		return http.StatusBadRequest, errors.New("signature: does not verify against key")
	}
	switch {
	case req.Timeout == 0:
		req.Timeout = sessionapi.DefaultTimeout
	case req.Timeout < 0:
		return http.StatusBadRequest, errors.New("timeout: must be a positive number of seconds")
	case req.Timeout > sessionapi.MaxTimeout:
		return http.StatusBadRequest, fmt.Errorf("timeout: %d seconds is more than the maximum of %d (7 days)", req.Timeout, sessionapi.MaxTimeout)
	}
	if len(req.Namespace) > 128 {
		return http.StatusBadRequest, errors.New("namespace: longer than 128 characters")
	}
	return 0, nil
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, OPTIONS")
		fail(w, http.StatusMethodNotAllowed, "use GET")
		return
	}
	q := r.URL.Query()
	key, err := parseKey(q.Get("key"))
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
	ns := q.Get("namespace")
	if len(ns) > 128 {
		fail(w, http.StatusBadRequest, "namespace: longer than 128 characters")
		return
	}
	data, err := s.store.Get(r.Context(), key, ns, s.now())
	if errors.Is(err, ErrNotFound) {
		fail(w, http.StatusNotFound, "no session for key (or it expired)")
		return
	}
	if err != nil {
		s.log.Error("session store", "op", "get", "err", err)
		fail(w, http.StatusInternalServerError, "internal error")
		return
	}
	writeJSON(w, http.StatusOK, sessionapi.GetResponse{Message: data})
}
