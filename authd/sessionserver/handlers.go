package sessionserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/auth/sessionapi"
)

// decodeSet reads a set or update body, answering the error itself.
func decodeSet(w http.ResponseWriter, r *http.Request, req *sessionapi.SetRequest) bool {
	r.Body = http.MaxBytesReader(w, r.Body, sessionapi.MaxBodyBytes)
	if err := json.NewDecoder(r.Body).Decode(req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body: larger than %d bytes", mbe.Limit))
			return false
		}
		fail(w, http.StatusBadRequest, "body: not a JSON object with key, data, signature, timeout: "+err.Error())
		return false
	}
	return true
}

// allowWrite takes one write of the client's window.
func (s *Server) allowWrite(w http.ResponseWriter, client string, limited bool) bool {
	if !limited {
		return true
	}
	if ok, wait := s.writes.Take(client, 1); !ok {
		tooMany(w, wait, fmt.Sprintf("quota: more than %d writes in %s from this client", s.limits.Writes, s.limits.Window))
		return false
	}
	return true
}

// allowStore checks the client's quota of stored bytes for n more.
func (s *Server) allowStore(w http.ResponseWriter, r *http.Request, client string, limited bool, n int, now time.Time) bool {
	if !limited || s.limits.StoredBytes < 0 {
		return true
	}
	used, err := s.store.StoredBytes(r.Context(), client, now)
	if err != nil {
		s.log.Error("session store", "op", "quota", "err", err)
		fail(w, http.StatusInternalServerError, "internal error")
		return false
	}
	if used+int64(n) > s.limits.StoredBytes {
		tooMany(w, s.limits.Window, fmt.Sprintf("quota: this client's records would exceed %d bytes", s.limits.StoredBytes))
		return false
	}
	return true
}

func (s *Server) set(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		fail(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	client, limited := s.client(r)
	if !s.allowWrite(w, client, limited) {
		return
	}
	var req sessionapi.SetRequest
	if !decodeSet(w, r, &req) {
		return
	}
	status, err := s.checkSet(&req, true)
	if err != nil {
		fail(w, status, err.Error())
		return
	}
	now := s.now()
	rec := Record{Key: req.Key, Namespace: req.Namespace, Data: req.Data, ExpiresAt: now.Add(time.Duration(req.Timeout) * time.Second), Client: client}
	if req.Timeout == sessionapi.InvalidateTimeout {
		err = s.store.Invalidate(r.Context(), rec, now)
	} else if s.allowStore(w, r, client, limited, len(req.Data), now) {
		err = s.store.Put(r.Context(), rec, now)
	} else {
		return
	}
	switch {
	case errors.Is(err, ErrInvalidated):
		fail(w, http.StatusGone, "key: this session was logged out; its key cannot be written again")
		return
	case err != nil:
		s.log.Error("session store", "op", "set", "err", err)
		fail(w, http.StatusInternalServerError, "internal error")
		return
	}
	writeJSON(w, http.StatusOK, sessionapi.SetResponse{Message: "success"})
}

// update replaces the data of a live record (PUT store/update), keeping
// its expiry.
func (s *Server) update(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		w.Header().Set("Allow", "PUT, OPTIONS")
		fail(w, http.StatusMethodNotAllowed, "use PUT")
		return
	}
	client, limited := s.client(r)
	if !s.allowWrite(w, client, limited) {
		return
	}
	var req sessionapi.SetRequest
	if !decodeSet(w, r, &req) {
		return
	}
	if status, err := s.checkSet(&req, false); err != nil {
		fail(w, status, err.Error())
		return
	}
	now := s.now()
	if !s.allowStore(w, r, client, limited, len(req.Data), now) {
		return
	}
	err := s.store.Update(r.Context(), Record{Key: req.Key, Namespace: req.Namespace, Data: req.Data}, now)
	switch {
	case errors.Is(err, ErrNotFound):
		fail(w, http.StatusNotFound, "no session for key (or it expired)")
		return
	case err != nil:
		s.log.Error("session store", "op", "update", "err", err)
		fail(w, http.StatusInternalServerError, "internal error")
		return
	}
	writeJSON(w, http.StatusOK, sessionapi.SetResponse{Message: "success"})
}

// checkSet validates and normalises a set (or, without timeout, an
// update) request, returning the HTTP status to answer with when it is bad.
func (s *Server) checkSet(req *sessionapi.SetRequest, timeout bool) (int, error) {
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
	sig, err := eccrypto.ParseSignature(req.Signature)
	if err != nil {
		return http.StatusBadRequest, errors.New(`signature: neither a JSON string {"r","s"} nor DER in hex`)
	}
	if !eccrypto.Verify(pub, []byte(req.Data), sig) {
		return http.StatusBadRequest, errors.New("signature: does not verify against key")
	}
	if timeout {
		switch {
		case req.Timeout == 0:
			req.Timeout = sessionapi.DefaultTimeout
		case req.Timeout < 0:
			return http.StatusBadRequest, errors.New("timeout: must be a positive number of seconds")
		case req.Timeout > sessionapi.MaxTimeout:
			return http.StatusBadRequest, fmt.Errorf("timeout: %d seconds is more than the maximum of %d (7 days)", req.Timeout, sessionapi.MaxTimeout)
		}
	}
	if len(req.Namespace) > 128 {
		return http.StatusBadRequest, errors.New("namespace: longer than 128 characters")
	}
	return 0, nil
}

// get answers GET store/get?key=&namespace= and POST v2/store/get.
func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	var keyParam, ns string
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		q := r.URL.Query()
		keyParam, ns = q.Get("key"), q.Get("namespace")
	case http.MethodPost:
		var req sessionapi.GetRequest
		r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fail(w, http.StatusBadRequest, "body: not a JSON object with key, namespace")
			return
		}
		keyParam, ns = req.Key, req.Namespace
	default:
		w.Header().Set("Allow", "GET, POST, OPTIONS")
		fail(w, http.StatusMethodNotAllowed, "use GET (or POST for v2)")
		return
	}
	if client, limited := s.client(r); limited {
		if ok, wait := s.reads.Take(client, 1); !ok {
			tooMany(w, wait, fmt.Sprintf("quota: more than %d reads in %s from this client", s.limits.Reads, s.limits.Window))
			return
		}
	}
	key, err := parseKey(keyParam)
	if err != nil {
		fail(w, http.StatusBadRequest, err.Error())
		return
	}
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
