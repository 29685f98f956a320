package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Headers of a delivery.
const (
	// HeaderDelivery is the delivery's id, the same on every retry: a
	// receiver that has seen it drops the delivery.
	HeaderDelivery = "X-Portico-Delivery"
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256 of the body
	// with the webhook's secret.
	HeaderSignature = "X-Portico-Signature"
)

// ErrPrivateAddress is a URL whose host is, or resolves to, an address
// webhooks may not reach (loopback, link-local, private, unspecified,
// multicast) while webhooks.allow_private_urls is off.
var ErrPrivateAddress = errors.New("webhook: the URL's address is not public (loopback, link-local or private); set webhooks.allow_private_urls to allow it")

// Sign returns the X-Portico-Signature value of body under secret.
func Sign(body []byte, secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// SenderConfig configures a Sender.
type SenderConfig struct {
	// AllowPrivate lets URLs reach loopback, link-local and private
	// addresses (webhooks.allow_private_urls).
	AllowPrivate bool
	// Timeout bounds one delivery attempt; 0 means 10s.
	Timeout time.Duration
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver *net.Resolver
}

// Sender posts deliveries. Every connection it dials resolves the URL's
// host again and checks the address actually dialled (a net.Dialer
// Control hook), so a name that resolves to a public address when the
// webhook is made and to a private one later is refused; a delivery
// reuses an idle connection to the same host, checked when it was
// dialled. Redirects are not followed.
type Sender struct {
	client *http.Client
}

// NewSender returns a Sender.
func NewSender(cfg SenderConfig) *Sender {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	d := &net.Dialer{Timeout: cfg.Timeout, Resolver: cfg.Resolver}
	if !cfg.AllowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrPrivateAddress, address)
			}
			if !Public(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrPrivateAddress, ap.Addr())
			}
			return nil
		}
	}
	tr := &http.Transport{
		DialContext:           d.DialContext,
		Proxy:                 nil, // a proxy would dial for us, unchecked
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		// Many webhooks often post to one receiver: their deliveries
		// reuse connections (each was checked when dialled) rather than
		// dial one each (a tenth of the CPU of 1,000 webhooks to one
		// host with 2, docs/benchmarks.md, issue 38).
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &Sender{client: &http.Client{
		Transport: tr,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}}
}

// Public reports whether a is an address webhooks may reach without
// allow_private_urls.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsPrivate() ||
		a.IsUnspecified() || a.IsMulticast() || a.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// nonPublic are ranges that netip's predicates do not cover: shared
// address space (carrier NAT), this network, benchmarking and reserved.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
}

// StatusError is a receiver's answer other than 2xx.
type StatusError struct{ Status int }

// Error names the status.
func (e *StatusError) Error() string { return fmt.Sprintf("webhook: receiver answered %d", e.Status) }

// CheckURL checks a webhook URL's form: http or https, a host, no user
// info. Its address is checked at each delivery.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %v", err)
	case u.Scheme != "https" && u.Scheme != "http":
		return errors.New("want an https:// URL")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("has no host")
	case u.User != nil:
		return errors.New("must not hold a user or password")
	}
	return nil
}

// Post sends one delivery and returns nil when the receiver answered 2xx.
func (s *Sender) Post(ctx context.Context, rawURL, secret, id string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Portico-Webhook/1")
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set(HeaderSignature, Sign(body, secret))
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &StatusError{Status: resp.StatusCode}
	}
	return nil
}

// CloseIdle closes idle connections.
func (s *Sender) CloseIdle() { s.client.CloseIdleConnections() }
