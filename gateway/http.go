package gateway

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
)

// Paths of the two transports; the key is the segment after them.
const (
	httpPrefix = "/v3"
	wsPrefix   = "/ws/v3"
)

// serve is the entry of both listeners. fixed names the network of a
// network's own listener, "" on the shared one. ctx is only valid until
// serve returns; nothing started here outlives it.
func (g *Gateway) serve(ctx *fasthttp.RequestCtx, fixed string) {
	serving(ctx.Conn()) // the request is here whole: not stalled
	path := ctx.Path()
	var ws bool
	var rest []byte
	switch {
	case string(path) == "/healthz":
		ctx.SetContentType("text/plain")
		ctx.SetBodyString("ok\n")
		return
	case hasSegment(path, wsPrefix):
		ws, rest = true, path[len(wsPrefix):]
	case hasSegment(path, httpPrefix):
		rest = path[len(httpPrefix):]
	case fixed == "" && hasSegment(path, mcpPrefix):
		g.serveMCP(ctx, path[len(mcpPrefix):]) // inproc.go
		return
	default:
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		ctx.SetBodyString("404 page not found\n")
		return
	}
	start := time.Now()
	key := strings.TrimPrefix(string(rest), "/")
	id, err := g.keys.Authenticate(context.Background(), key)
	if err == nil && id.Rules != nil {
		err = g.authorize(&ctx.Request.Header, id)
	}
	if err != nil {
		g.fail(ctx, err, start)
		return
	}
	var st *state
	var n *Network
	if fixed == "" {
		host := hostOnly(string(ctx.Host()))
		if st, n = g.acquire(func(s *state) *Network { return s.byHost[host] }); n == nil {
			g.fail(ctx, portico.ErrNetworkUnknown, start)
			return
		}
	} else if st, n = g.acquire(func(s *state) *Network { return s.byName[fixed] }); n == nil {
		g.fail(ctx, networkGone(fixed), start)
		return
	}
	defer n.use.release()
	rq := request{net: n, id: id, st: st}
	origin := ctx.Request.Header.Peek("Origin")
	if err := allowed(id, n.Name, string(origin)); err != nil {
		g.fail(ctx, err, start)
		return
	}
	if id.Rules != nil && !id.Rules.UserAgentAllowed(string(ctx.Request.Header.UserAgent())) {
		g.fail(ctx, &portico.ForbiddenError{What: portico.AllowUserAgent, Value: string(ctx.Request.Header.UserAgent())}, start)
		return
	}
	if ws {
		// The socket keeps what its key is checked against again, on
		// each message (wskey.go).
		g.wsHandler(ctx, rq, newSocket(n.Name, key, string(origin), string(ctx.Request.Header.UserAgent()), id))
		return
	}
	cors(&ctx.Response.Header)
	switch {
	case ctx.IsPost():
	case ctx.IsOptions():
		ctx.Response.Header.Set("Access-Control-Max-Age", "600")
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return
	default:
		ctx.Response.Header.Set("Allow", "POST, OPTIONS")
		g.write(ctx, fasthttp.StatusMethodNotAllowed, errorBody(portico.ErrHTTPMethod), rq, start)
		return
	}
	if !isJSON(ctx.Request.Header.ContentType()) {
		g.write(ctx, fasthttp.StatusUnsupportedMediaType, errorBody(portico.ErrWrongContentType), rq, start)
		return
	}
	body := ctx.PostBody()
	// The answer is built in the response's own pooled buffer: no copy.
	// fasthttp's RequestCtx is a context only in name (it ends with the
	// server, not the request, and every context derived from it would
	// start a goroutine); upstream calls are bounded by their timeouts.
	out, status, info := g.handle(g.obs.traceContext(context.Background(), &ctx.Request.Header), rq, body, ctx.Response.SwapBody(nil)[:0])
	if info.bill != nil {
		creditHeaders(&ctx.Response.Header, info.bill)
	}
	switch {
	case info.cacheable == 0:
	case info.batch:
		ctx.Response.Header.Set(HeaderCacheHits, strconv.Itoa(info.hits))
	case info.hits == 1:
		ctx.Response.Header.SetCanonical([]byte(HeaderCache), []byte("HIT"))
	default:
		ctx.Response.Header.SetCanonical([]byte(HeaderCache), []byte("MISS"))
	}
	verifiedHeaders(&ctx.Response.Header, info)
	if info.retryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.FormatInt(int64(max(time.Second, info.retryAfter+time.Second-1)/time.Second), 10))
	}
	g.write(ctx, status, out, rq, start)
}

// Cache headers: a single call that could be served from cache says
// whether it was (HIT or MISS); a batch says how many of its calls were.
const (
	HeaderCache     = "X-Cache"
	HeaderCacheHits = "X-Cache-Hits"
)

// Verification headers, on networks with verify on or strict
// (docs/verify.md): a single call says whether its answer was checked
// against a trusted header; a batch says how many of its calls' were.
const (
	HeaderVerified      = "X-Portico-Verified"
	HeaderVerifiedCalls = "X-Portico-Verified-Calls"
)

func verifiedHeaders(h *fasthttp.ResponseHeader, info billing) {
	switch {
	case info.verifying == 0:
	case info.batch:
		h.Set(HeaderVerifiedCalls, strconv.Itoa(info.verified))
	case info.verified == 1:
		h.SetCanonical([]byte(HeaderVerified), []byte("true"))
	default:
		h.SetCanonical([]byte(HeaderVerified), []byte("false"))
	}
}

// Credit headers on every metered HTTP response (docs/errors.md).
const (
	HeaderCreditsUsed      = "X-Credits-Used"
	HeaderCreditsRemaining = "X-Credits-Remaining"
	HeaderCreditsReset     = "X-Credits-Reset"
)

// creditHeaders tells the client what the request cost and what is left.
// The names are canonical already and the values are appended into one
// buffer on the stack: a call's credit headers allocate nothing.
func creditHeaders(h *fasthttp.ResponseHeader, b *metering.Bill) {
	var buf [64]byte
	h.SetCanonical([]byte(HeaderCreditsUsed), strconv.AppendInt(buf[:0], b.Charged, 10))
	h.SetCanonical([]byte(HeaderCreditsRemaining), strconv.AppendInt(buf[:0], b.Remaining(), 10))
	h.SetCanonical([]byte(HeaderCreditsReset), b.ResetAt.AppendFormat(buf[:0], time.RFC3339))
}

// allowed applies a key's network and Origin allowlists.
func allowed(id apikey.Identity, network, origin string) error {
	if len(id.Networks) > 0 && !slices.Contains(id.Networks, network) {
		return &portico.ForbiddenError{What: portico.AllowNetwork, Value: network}
	}
	if len(id.Origins) == 0 {
		return nil
	}
	if origin == "" {
		return &portico.ForbiddenError{What: portico.AllowOrigin}
	}
	if !originAllowed(id.Origins, origin) {
		return &portico.ForbiddenError{What: portico.AllowOrigin, Value: origin}
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

// fail answers a request that was refused before its body was served.
func (g *Gateway) fail(ctx *fasthttp.RequestCtx, err error, start time.Time) {
	e, status, known := jsonrpc.ErrorFor(err)
	if !known {
		g.log.Error("request failed", "path", redactPath(string(ctx.Path())), "err", err)
	}
	var gone *goneError
	switch {
	case errors.As(err, &gone):
		e = &jsonrpc.Error{Code: e.Code, Message: gone.Error()}
	case errors.Is(err, portico.ErrNetworkUnknown):
		e = &jsonrpc.Error{Code: e.Code, Message: "unknown network host " + strconv.Quote(hostOnly(string(ctx.Host())))}
	}
	cors(&ctx.Response.Header)
	g.write(ctx, status, jsonrpc.AppendError(ctx.Response.SwapBody(nil)[:0], nil, e), request{}, start)
}

// networkGone is the error of a call to a network that a config reload
// removed, on the network's own listener (which stays open until a
// restart) or on a WebSocket opened before.
func networkGone(name string) error {
	return &goneError{name: name}
}

// goneError is networkGone's error: -32048 with HTTP 404, like an
// unknown host.
type goneError struct{ name string }

func (e *goneError) Error() string {
	return "network " + strconv.Quote(e.name) + " is no longer served"
}

func (e *goneError) Unwrap() error { return portico.ErrNetworkUnknown }

// errorBody is the response body of a request refused with err.
func errorBody(err error) []byte {
	e, _, _ := jsonrpc.ErrorFor(err)
	return jsonrpc.AppendError(nil, nil, e)
}

// serverError answers what fasthttp refused before the gateway saw the
// request: a body over the limit, a client too slow to send it, a request
// it could not parse. The answer follows docs/errors.md like any other.
func (g *Gateway) serverError(ctx *fasthttp.RequestCtx, err error) {
	var e error
	var ne net.Error
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		e = &portico.LimitError{Limit: portico.LimitBody, Max: g.serverLimits.MaxBodyBytes}
	case errors.As(err, &small) || errors.Is(err, fasthttp.ErrSmallReadBuffer):
		e = &portico.LimitError{Limit: portico.LimitHeaders, Max: maxHeaderBytes}
	case errors.As(err, &ne) && ne.Timeout():
		e = portico.ErrClientTimeout
	default:
		// Not HTTP/1.1 that can be read: a JSON-RPC parse error, with no
		// detail from the HTTP parser (it may quote the request line,
		// which holds the key).
		e = &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: malformed HTTP request"}
	}
	ctx.SetConnectionClose()
	g.fail(ctx, e, time.Now())
}

// write sends a JSON response and logs it. body becomes the response's
// body buffer.
func (g *Gateway) write(ctx *fasthttp.RequestCtx, status int, body []byte, rq request, start time.Time) {
	ctx.SetStatusCode(status)
	if status != fasthttp.StatusNoContent {
		ctx.SetContentType("application/json")
		ctx.Response.SwapBody(body)
	}
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelWarn
	}
	if g.log.Enabled(ctx, level) {
		network := ""
		if rq.net != nil {
			network = rq.net.Name
		}
		// The key is part of the path: only the redacted path is logged.
		g.log.Log(ctx, level, "http", "status", status, "path", redactPath(string(ctx.Path())), "network", network,
			"key", rq.id.Name, "remote", ctx.RemoteAddr().String(), "bytes", len(body), "took", time.Since(start))
	}
}

// hasSegment reports whether path is prefix or starts with prefix + "/".
func hasSegment[S ~string | ~[]byte](path S, prefix string) bool {
	return string(path) == prefix || (len(path) > len(prefix) && string(path[:len(prefix)]) == prefix && path[len(prefix)] == '/')
}

// redactPath masks the key segment of a gateway path.
func redactPath(path string) string {
	for _, p := range []string{wsPrefix, httpPrefix, mcpPrefix + httpPrefix} {
		if hasSegment(path, p) {
			if len(path) > len(p)+1 {
				return p + "/***"
			}
			return path
		}
	}
	return path
}

// keyInText finds the key segment of a gateway path inside free text, such
// as a request line in a server message.
var keyInText = regexp.MustCompile(`(/v3/)[^\s?"'/]+`)

// redactKeys masks every key segment in a message.
func redactKeys(s string) string {
	return keyInText.ReplaceAllString(s, "${1}***")
}

func hostOnly(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

func isJSON(ct []byte) bool {
	if string(ct) == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(string(ct))
	return err == nil && mt == "application/json"
}

// cors lets browser dapps call the gateway; the key in the path is the
// credential, so no cookies are involved.
func cors(h *fasthttp.ResponseHeader) {
	h.SetCanonical([]byte("Access-Control-Allow-Origin"), []byte("*"))
	h.SetCanonical([]byte("Access-Control-Allow-Methods"), []byte("POST, OPTIONS"))
	// A string, not a []byte conversion: past 32 bytes that would allocate.
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, "+portico.HeaderKeySecret)
}
