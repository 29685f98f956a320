// Package clients is the auth server's client registry: which client ids
// may log users in, the redirect URLs each may send a user's session to,
// and the web origins its pages run on. A user's app key is derived from
// the client id, so a login for a client id must only ever return to that
// client's own redirect URLs: without the registry any page could start a
// login with a victim app's client id and read the victim's key from the
// session it is sent.
//
// Redirect URLs match exactly, except loopback ones (http on 127.0.0.1,
// [::1] or localhost, for native and command-line apps, RFC 8252 §7.3):
// those match on any port, and a registered path ending in "/" matches
// the paths below it (the Go SDK's callback path carries a random part).
//
// The registry lives in SQLite or PostgreSQL next to the session records
// (DB); Static is an in-memory one for programs and tests; AnyClient is
// the development mode that accepts every client and redirect.
package clients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Errors of the registry.
var (
	// ErrNotFound: the client id is not registered.
	ErrNotFound = errors.New("clients: client id not registered")
	// ErrRedirect: the redirect URL is not one of the client's.
	ErrRedirect = errors.New("clients: redirect URL not registered for this client id")
)

// Client is one registered client id.
type Client struct {
	// ID is the client id an SDK sends as InitParams.clientId.
	ID string `json:"clientId"`
	// Name is a label for operators.
	Name string `json:"name,omitempty"`
	// RedirectURLs are where logins for this client may return.
	RedirectURLs []string `json:"redirectUrls"`
	// Origins are the web origins (scheme://host[:port]) the client's
	// pages run on; whiteLabel.appUrl, which the pages show the user as
	// the app's address, must be on one of them.
	Origins []string `json:"origins,omitempty"`
	// CreatedAt is when the client was registered.
	CreatedAt time.Time `json:"createdAt,omitzero"`
	// Any marks the development registry's clients, which allow every
	// redirect URL and origin.
	Any bool `json:"-"`
}

// Registry finds a registered client. DB, Static and AnyClient implement
// it.
type Registry interface {
	// Client returns the client registered under id, or ErrNotFound.
	Client(ctx context.Context, id string) (*Client, error)
}

var (
	_ Registry = (*DB)(nil)
	_ Registry = Static(nil)
	_ Registry = AnyClient{}
)

// Validate checks a client before it is registered; the error names the
// field.
func (c Client) Validate() error {
	if strings.TrimSpace(c.ID) == "" || len(c.ID) > 256 {
		return errors.New("clientId: required, at most 256 characters")
	}
	if len(c.RedirectURLs) == 0 {
		return errors.New("redirectUrls: at least one is required")
	}
	for i, r := range c.RedirectURLs {
		if err := CheckRedirectURL(r); err != nil {
			return fmt.Errorf("redirectUrls[%d]: %v", i, err)
		}
	}
	for i, o := range c.Origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("origins[%d]: %q is not an origin (scheme://host[:port])", i, o)
		}
	}
	return nil
}

// CheckRedirectURL refuses redirect URLs that are not absolute, carry a
// fragment (the pages put the session there), or whose scheme could run
// script. Custom schemes (com.example.app://auth) are allowed for mobile
// apps.
func CheckRedirectURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Fragment != "" || strings.Contains(s, "#") {
		return errors.New("not an absolute URL without a fragment")
	}
	switch strings.ToLower(u.Scheme) {
	case "javascript", "data", "vbscript", "file", "blob", "about":
		return errors.New("scheme " + u.Scheme + " is not allowed")
	}
	if (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
		return errors.New("no host")
	}
	return nil
}

// isLoopback reports whether u is an http URL on a loopback host.
func isLoopback(u *url.URL) bool {
	if u.Scheme != "http" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// AllowsRedirect reports whether a login may return to redirect.
func (c *Client) AllowsRedirect(redirect string) bool {
	if c.Any {
		return CheckRedirectURL(redirect) == nil
	}
	if CheckRedirectURL(redirect) != nil {
		return false
	}
	got, err := url.Parse(redirect)
	if err != nil {
		return false
	}
	for _, r := range c.RedirectURLs {
		if r == redirect {
			return true
		}
		reg, err := url.Parse(r)
		if err != nil || !isLoopback(reg) || !isLoopback(got) {
			continue
		}
		if reg.Hostname() != got.Hostname() || reg.RawQuery != got.RawQuery || got.User != nil {
			continue
		}
		if got.Path == reg.Path || (strings.HasSuffix(reg.Path, "/") && strings.HasPrefix(got.Path, reg.Path) &&
			!slices.Contains(strings.Split(got.Path, "/"), "..") && !strings.Contains(got.Path, "%")) {
			return true
		}
	}
	return false
}

// AllowsOrigin reports whether the origin of u (a URL) is one of the
// client's origins.
func (c *Client) AllowsOrigin(u string) bool {
	if c.Any {
		return true
	}
	p, err := url.Parse(u)
	if err != nil || p.Scheme == "" || p.Host == "" {
		return false
	}
	origin := strings.ToLower(p.Scheme + "://" + p.Host)
	for _, o := range c.Origins {
		if strings.ToLower(strings.TrimRight(o, "/")) == origin {
			return true
		}
	}
	return false
}

// Static is an in-memory registry keyed by client id.
type Static map[string]Client

// NewStatic makes a Static registry of cs, checking each.
func NewStatic(cs ...Client) (Static, error) {
	s := Static{}
	for _, c := range cs {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("clients: %s: %w", c.ID, err)
		}
		s[c.ID] = c
	}
	return s, nil
}

// Client returns the client registered under id.
func (s Static) Client(_ context.Context, id string) (*Client, error) {
	c, ok := s[id]
	if !ok {
		return nil, ErrNotFound
	}
	return &c, nil
}

// AnyClient is the development registry: every client id is accepted and
// may return to any redirect URL the pages accept. Anyone can then start
// a login for another app's client id and read that app's key for the
// user from the session it is sent: never use it where real users log in.
type AnyClient struct{}

// Client returns a client that allows everything.
func (AnyClient) Client(_ context.Context, id string) (*Client, error) {
	return &Client{ID: id, Any: true}, nil
}
