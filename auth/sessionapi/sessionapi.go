// Package sessionapi holds the session server's wire protocol, shared by
// the client (the SDK, the login pages) and the server: the request and
// response bodies and a Client that encrypts, signs and stores payloads.
//
// A session is a random secp256k1 private key (the session id, or the
// loginId of a pending login). Its record lives under the uncompressed
// public key in hex. The stored data is the ECIES encryption of a JSON
// payload to that public key (eccrypto JSON form), signed by the private
// key over keccak256 of the data string, so only the key's holder can
// write the record and only the key's holder can read it.
package sessionapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/eccrypto"
)

// Timeouts of a record, in seconds.
const (
	// DefaultTimeout is a record's lifetime when a request gives none.
	DefaultTimeout = 86400
	// MaxTimeout is the longest lifetime the server accepts: seven days.
	MaxTimeout = 7 * 86400
)

// Paths of the endpoints, relative to the server's base URL. SetPath and
// GetPath (GET with key and namespace in the query) are what the Swift and
// the older JavaScript session managers use, UpdatePath (PUT, the body of
// a set without timeout) what the older JavaScript one updates with; the
// V2 paths are the newer JavaScript session manager's, with the get's key
// and namespace in a POST body (GetRequest).
const (
	SetPath      = "store/set"
	GetPath      = "store/get"
	UpdatePath   = "store/update"
	V2SetPath    = "v2/store/set"
	V2GetPath    = "v2/store/get"
	V2UpdatePath = "v2/store/update"
)

// InvalidateTimeout is the timeout every SDK's logout sends with its
// overwrite of the record: a set with it invalidates the key for good (for
// as long as its record would have lived).
const InvalidateTimeout = 1

// SetRequest is the body of POST store/set.
type SetRequest struct {
	// Key is the session's uncompressed public key in hex (130 chars).
	Key string `json:"key"`
	// Data is the eccrypto JSON string of the encrypted payload.
	Data string `json:"data"`
	// Signature is the key's signature over keccak256(Data): the JSON
	// string {"r","s"} (the Swift SDK, and this package's Client) or DER in
	// hex (the JavaScript session managers).
	Signature string `json:"signature"`
	// Timeout is the record's lifetime in seconds (1 to MaxTimeout).
	Timeout int `json:"timeout"`
	// Namespace separates records of the same key; empty is the default.
	Namespace string `json:"namespace,omitempty"`
	// AllowedOrigin is sent by the newer JavaScript session manager; it is
	// accepted and not enforced (records are encrypted and signed).
	AllowedOrigin string `json:"allowedOrigin,omitempty"`
}

// GetRequest is the body of POST v2/store/get.
type GetRequest struct {
	// Key is the session's uncompressed public key in hex (130 chars).
	Key string `json:"key"`
	// Namespace separates records of the same key; empty is the default.
	Namespace string `json:"namespace,omitempty"`
}

// GetResponse is the body of a successful GET store/get.
type GetResponse struct {
	// Message is the stored Data string.
	Message string `json:"message"`
}

// SetResponse is the body of a successful POST store/set.
type SetResponse struct {
	// Message is "success".
	Message string `json:"message"`
}

// ErrorResponse is the body of every error answer of the server.
type ErrorResponse struct {
	// Error says what went wrong; it names the field for a bad request.
	Error string `json:"error"`
}

// ErrNotFound: the server holds no unexpired record for the key.
var ErrNotFound = errors.New("sessionapi: no such session (or it expired)")

// StatusError is an error answer of the server other than not found.
type StatusError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the server's error text.
	Message string
}

// Error returns the status and the server's message.
func (e *StatusError) Error() string {
	return fmt.Sprintf("sessionapi: server answered %d: %s", e.Status, e.Message)
}

// Client talks to one session server.
type Client struct {
	// BaseURL is the server's base URL; the paths are appended to it.
	BaseURL string
	// HTTP sends the requests; nil means http.DefaultClient.
	HTTP *http.Client
}

func (c *Client) url(path string) string {
	base := c.BaseURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return base + path
}

func (c *Client) do(req *http.Request, out any) error {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("sessionapi: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes))
	if err != nil {
		return fmt.Errorf("sessionapi: read answer: %w", err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return ErrNotFound
	}
	if resp.StatusCode/100 != 2 {
		var e ErrorResponse
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
			if len(e.Error) > 200 {
				e.Error = e.Error[:200]
			}
		}
		return &StatusError{Status: resp.StatusCode, Message: e.Error}
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("sessionapi: bad answer: %w", err)
		}
	}
	return nil
}

// Limits shared by client and server.
const (
	// MaxDataBytes bounds a record's Data string.
	MaxDataBytes = 128 << 10
	// MaxBodyBytes bounds a request or answer body.
	MaxBodyBytes = MaxDataBytes + 16<<10
)

// Set encrypts payload to key's public key, signs it and stores it for
// timeout seconds.
func (c *Client) Set(ctx context.Context, key *secp256k1.PrivateKey, payload []byte, timeout int) error {
	enc, err := eccrypto.Encrypt(key.PubKey(), payload)
	if err != nil {
		return err
	}
	data := enc.String()
	sig := eccrypto.Sign(key, []byte(data))
	body, _ := json.Marshal(SetRequest{
		Key:       eccrypto.PublicKeyHex(key.PubKey()),
		Data:      data,
		Signature: sig.String(),
		Timeout:   timeout,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url(SetPath), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("sessionapi: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, nil)
}

// Get fetches key's record and decrypts it. A record that does not decrypt
// with key returns an error wrapping eccrypto.ErrMACMismatch.
func (c *Client) Get(ctx context.Context, key *secp256k1.PrivateKey) ([]byte, error) {
	q := url.Values{"key": {eccrypto.PublicKeyHex(key.PubKey())}, "namespace": {""}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url(GetPath)+"?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("sessionapi: %w", err)
	}
	var r GetResponse
	if err := c.do(req, &r); err != nil {
		return nil, err
	}
	enc, err := eccrypto.ParseEncrypted(r.Message)
	if err != nil {
		return nil, fmt.Errorf("sessionapi: stored data: %w", err)
	}
	pt, err := eccrypto.Decrypt(key, enc)
	if err != nil {
		return nil, fmt.Errorf("sessionapi: stored data: %w", err)
	}
	return pt, nil
}

// Invalidate overwrites key's record with an encrypted empty string and
// InvalidateTimeout, as the SDKs log out. The server then refuses every
// further write of the key for as long as the record would have lived.
func (c *Client) Invalidate(ctx context.Context, key *secp256k1.PrivateKey) error {
	return c.Set(ctx, key, []byte(""), InvalidateTimeout)
}
