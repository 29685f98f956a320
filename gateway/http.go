package gateway

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/apikey"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering"
)

// Paths of the two transports; the key is the segment after them.
const (
	httpPrefix = "/v3"
	wsPrefix   = "/ws/v3"
)

// serve is the entry of both listeners. fixed is the network of a
// network's own listener, nil on the shared one.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, fixed *Network) {
	path := r.URL.Path
	var ws bool
	var rest string
	switch {
	case path == "/healthz":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
		return
	case hasSegment(path, wsPrefix):
		ws, rest = true, path[len(wsPrefix):]
	case hasSegment(path, httpPrefix):
		rest = path[len(httpPrefix):]
	default:
		http.NotFound(w, r)
		return
	}
	start := time.Now()
	key := strings.TrimPrefix(rest, "/")
	id, err := g.keys.Authenticate(r.Context(), key)
	if err != nil {
		g.fail(w, r, err, start)
		return
	}
	n := fixed
	if n == nil {
		if n = g.byHost[hostOnly(r.Host)]; n == nil {
			g.fail(w, r, portico.ErrNetworkUnknown, start)
			return
		}
	}
	rq := request{net: n, id: id}
	if err := allowed(id, n.Name, r.Header.Get("Origin")); err != nil {
		cors(w.Header())
		g.fail(w, r, err, start)
		return
	}
	if ws {
		g.serveWebSocket(w, r, rq)
		return
	}
	cors(w.Header())
	switch r.Method {
	case http.MethodPost:
	case http.MethodOptions:
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		w.Header().Set("Allow", "POST, OPTIONS")
		g.write(w, r, http.StatusMethodNotAllowed, jsonrpc.AppendError(nil, nil, errMethodNotAllowed), rq, start)
		return
	}
	if !isJSON(r.Header.Get("Content-Type")) {
		g.write(w, r, http.StatusUnsupportedMediaType, jsonrpc.AppendError(nil, nil, errWrongContentType), rq, start)
		return
	}
	bp := g.getBuf()
	defer g.putBuf(bp)
	body, err := g.readBody(w, r, (*bp)[:0])
	if err != nil {
		g.fail(w, r, err, start)
		return
	}
	out, status, info := g.handle(r.Context(), rq, body, body[len(body):])
	*bp = out[:0]
	if len(out) == 0 {
		*bp = body[:0]
	}
	if info.bill != nil {
		creditHeaders(w.Header(), info.bill)
	}
	if info.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(max(time.Second, info.retryAfter+time.Second-1)/time.Second), 10))
	}
	g.write(w, r, status, out, rq, start)
}

// Credit headers on every metered HTTP response (docs/errors.md).
const (
	HeaderCreditsUsed      = "X-Credits-Used"
	HeaderCreditsRemaining = "X-Credits-Remaining"
	HeaderCreditsReset     = "X-Credits-Reset"
)

// creditHeaders tells the client what the request cost and what is left.
func creditHeaders(h http.Header, b *metering.Bill) {
	h.Set(HeaderCreditsUsed, strconv.FormatInt(b.Charged, 10))
	h.Set(HeaderCreditsRemaining, strconv.FormatInt(b.Remaining(), 10))
	h.Set(HeaderCreditsReset, b.ResetAt.Format(time.RFC3339))
}

// allowed applies a key's network and Origin allowlists.
func allowed(id apikey.Identity, network, origin string) error {
	if len(id.Networks) > 0 && !slices.Contains(id.Networks, network) {
		return &portico.ForbiddenError{What: "network", Value: network}
	}
	if len(id.Origins) == 0 {
		return nil
	}
	if origin == "" {
		return &portico.ForbiddenError{What: "origin"}
	}
	if !originAllowed(id.Origins, origin) {
		return &portico.ForbiddenError{What: "origin", Value: origin}
	}
	return nil
}

// originAllowed matches an Origin header against allowlist entries: an
// entry with a scheme ("https://app.example.com") must equal the origin;
// a bare host ("example.com") matches that host over any scheme and port;
// "*.example.com" matches its subdomains.
func originAllowed(list []string, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, e := range list {
		e = strings.ToLower(e)
		switch {
		case strings.Contains(e, "://"):
			if strings.EqualFold(strings.TrimSuffix(e, "/"), origin) {
				return true
			}
		case strings.HasPrefix(e, "*."):
			if strings.HasSuffix(host, e[1:]) {
				return true
			}
		case host == e:
			return true
		}
	}
	return false
}

// readBody reads the request body into buf, within the size limit.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, error) {
	max := g.limits.MaxBodyBytes
	if r.ContentLength > max {
		return nil, &portico.LimitError{Limit: portico.LimitBody, Max: max, Got: r.ContentLength}
	}
	b := bytes.NewBuffer(buf)
	_, err := b.ReadFrom(http.MaxBytesReader(w, r.Body, max))
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case err == nil:
		return b.Bytes(), nil
	case errors.As(err, &tooBig):
		return nil, &portico.LimitError{Limit: portico.LimitBody, Max: max}
	case errors.As(err, &ne) && ne.Timeout():
		return nil, portico.ErrClientTimeout
	}
	return nil, err
}

// fail answers a request that was refused before its body was served.
func (g *Gateway) fail(w http.ResponseWriter, r *http.Request, err error, start time.Time) {
	e, status, known := wireError(err)
	if !known {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return // the client went away; nothing to answer
		}
		g.log.Error("request failed", "path", redactPath(r.URL.Path), "err", err)
	}
	if errors.Is(err, portico.ErrNetworkUnknown) {
		e = &jsonrpc.Error{Code: e.Code, Message: "unknown network host " + strconv.Quote(hostOnly(r.Host))}
	}
	cors(w.Header())
	g.write(w, r, status, jsonrpc.AppendError(nil, nil, e), request{}, start)
}

// write sends a JSON response and logs it.
func (g *Gateway) write(w http.ResponseWriter, r *http.Request, status int, body []byte, rq request, start time.Time) {
	h := w.Header()
	if status == http.StatusNoContent {
		w.WriteHeader(status)
	} else {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}
	level := slog.LevelDebug
	if status >= 500 && r.Context().Err() == nil {
		// A client that went away mid-call is not a server fault.
		level = slog.LevelWarn
	}
	if g.log.Enabled(r.Context(), level) {
		network := ""
		if rq.net != nil {
			network = rq.net.Name
		}
		// The key is part of the path: only the redacted path is logged.
		g.log.Log(r.Context(), level, "http", "status", status, "path", redactPath(r.URL.Path), "network", network,
			"key", rq.id.Name, "remote", r.RemoteAddr, "bytes", len(body), "took", time.Since(start))
	}
}

func (g *Gateway) getBuf() *[]byte {
	if bp, ok := g.bufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 4096)
	return &b
}

func (g *Gateway) putBuf(bp *[]byte) {
	if cap(*bp) <= 1<<20 { // do not pin very large buffers
		g.bufs.Put(bp)
	}
}

// hasSegment reports whether path is prefix or starts with prefix + "/".
func hasSegment(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// redactPath masks the key segment of a gateway path.
func redactPath(path string) string {
	for _, p := range []string{wsPrefix, httpPrefix} {
		if hasSegment(path, p) {
			if len(path) > len(p)+1 {
				return p + "/***"
			}
			return path
		}
	}
	return path
}

func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// cors lets browser dapps call the gateway; the key in the path is the
// credential, so no cookies are involved.
func cors(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type")
}
