package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// HTTP is a Node reached by JSON-RPC over HTTP POST.
type HTTP struct {
	url    string
	client *http.Client
	opts   *Options
	bufs   sync.Pool
}

var _ Node = (*HTTP)(nil)

// NewHTTP returns a node for an http or https URL, with a connection pool
// sized for a gateway (many concurrent calls to few hosts).
func NewHTTP(rawURL string, opts *Options) *HTTP {
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &HTTP{url: rawURL, client: &http.Client{Transport: t}, opts: opts}
}

// Call posts one request and returns the result bytes.
func (h *HTTP) Call(ctx context.Context, method string, params jsontext.Value) (jsontext.Value, error) {
	bp, _ := h.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	body := jsonrpc.AppendRequest((*bp)[:0], []byte("1"), method, params)
	defer func() { *bp = body; h.bufs.Put(bp) }()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, unavailable(scrub(err, h.url))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, classify(ctx, scrub(err, h.url))
	}
	defer resp.Body.Close()
	limit := h.opts.maxResponse()
	data, err := readBody(resp, limit)
	if err != nil {
		return nil, classify(ctx, scrub(err, h.url))
	}
	// A 5xx or 429 means this node cannot serve now: another node may.
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
		return nil, unavailable(fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	r, err := jsonrpc.DecodeResponse(data)
	if err != nil {
		return nil, unavailable(fmt.Errorf("HTTP %d: %v", resp.StatusCode, err))
	}
	if r.Error != nil {
		return nil, r.Error
	}
	return r.Result, nil
}

// readBody reads a whole response, up to limit bytes.
func readBody(resp *http.Response, limit int64) ([]byte, error) {
	var buf []byte
	if resp.ContentLength > 0 && resp.ContentLength <= limit {
		buf = make([]byte, 0, resp.ContentLength)
	}
	b := bytes.NewBuffer(buf)
	n, err := b.ReadFrom(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, errors.New("response larger than the upstream response limit")
	}
	return b.Bytes(), nil
}

// Close releases idle connections.
func (h *HTTP) Close() error {
	h.client.CloseIdleConnections()
	return nil
}
