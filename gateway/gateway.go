// Package gateway serves JSON-RPC 2.0 to clients: POST /v3/<key> and
// WebSocket /ws/v3/<key>, one network per Host on a shared listener and on
// listeners of its own, and the MCP endpoint /mcp/v3/<key> on the shared
// listener (package mcp, whose tool calls come back here: inproc.go). The
// transports check the key and hand each request body to one pipeline
// (pipeline.go: decode, admit, price, charge, run, settle, encode): it
// resolves methods, validates params, holds the key to its bounds through
// metering, and has each call's network answer it (from heads, the cache
// or a node). Node result bytes are copied into the response untouched.
package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/gateway/mcp"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network"
)

// Authenticator checks the API key of a request.
type Authenticator interface {
	Authenticate(ctx context.Context, key string) (apikey.Identity, error)
}

var _ Authenticator = (*apikey.Set)(nil)

// Meter is metering's one interface to the bounds on a key's credits
// (metering.Meter), under the name the gateway's callers and tests already
// use: the gateway charges accepted calls through it and gives back what
// they did not cost.
type Meter = metering.Meter

// Network is one served network: the hosts and methods the gateway
// checks calls against, and the network that serves the calls that pass.
type Network struct {
	// Name identifies the network in logs, errors and metrics.
	Name string
	// Hosts select the network on the shared listener (lower case, no
	// port).
	Hosts []string
	// Methods is the network's resolved method table.
	Methods *Methods
	// Served answers the calls that pass the gateway's checks: the cache,
	// the nodes and the subscriptions.
	Served *network.Network

	use *inUse // calls in flight and subscriptions open on Served (state.go)
}

// Limits are the limits the gateway holds clients to: portico.Limits,
// the one model that the config file decodes into, under the name the
// gateway's callers and tests already use.
type Limits = portico.Limits

// Config holds what a Gateway needs. Keys, Networks and Limits are required.
type Config struct {
	Keys     Authenticator
	Networks []*Network
	Limits   Limits
	// Memory, when set, is the process's memory budget, shared with what
	// else counts in it (the networks' kept transactions); the gateway
	// sets its limit from Limits. nil makes one.
	Memory *membudget.Budget
	// CacheHitDiscount is the share of a call's cost, in percent, given
	// back when the answer came from cache. 0, the default, charges hits
	// like misses: a user pays for the answer, not for our node.
	CacheHitDiscount int
	// Meter charges accepted calls; nil turns metering off.
	Meter Meter
	// Bounds holds each key to its bounds on calls in flight and per
	// second, WebSocket connections and subscriptions: across instances
	// (metering.SharedBounds) or, when nil, in this process.
	Bounds metering.Bounds
	// Logger receives access and error logs; keys never reach it.
	Logger *slog.Logger
	// AccessLog, when set, logs a line per call to Logger at info level.
	AccessLog *AccessLog
	// Metrics records calls, cache use, credits, WebSocket connections
	// and subscriptions; nil records nothing.
	Metrics *metrics.Metrics
	// Tracer, when set, starts a span per call (a child of the client's
	// traceparent, if it sent one); the pool's attempts are its children.
	Tracer trace.Tracer
	// KeyTTL is how long Keys may answer with a key's settings as they
	// were (the store's key cache, store.key_cache_ttl): each message on
	// an open WebSocket is checked through Keys, and a socket that sends
	// nothing is checked this often. 0 means DefaultKeyTTL.
	KeyTTL time.Duration
}

// Gateway is the request-serving core with its two transports.
type Gateway struct {
	keys Authenticator
	// cur is what is served now: networks and limits (state.go).
	cur      atomic.Pointer[state]
	reloadMu sync.Mutex
	// serverLimits are those NewServer builds into a server; a reload
	// keeps them.
	serverLimits Limits
	meter        Meter
	log          *slog.Logger
	obs          observer
	slots        slots                  // open TCP connections over all listeners, per client
	conns        jsonrpc.Conns[*socket] // open WebSockets, with their network and key
	mem          *membudget.Budget      // the process's memory budget
	keyMem       *membudget.Keys        // each key's, under mem
	tokens       tokenCache             // JWTs that passed, until they expire
	// bounds holds keys to their calls in flight and per second,
	// WebSocket connections and subscriptions.
	bounds metering.Bounds
	mcp    *mcp.Server // the MCP endpoint (inproc.go)

	mu      sync.Mutex
	wsKeyOf map[string]*wsKey // the keys of open sockets, by the key itself
	closing bool              // Close was called: no more sweeps
	// The check of open sockets against their keys (wskey.go): every
	// keyTTL while sockets are open.
	keyTTL   time.Duration
	sweep    *time.Timer
	sweeping bool           // sweep is set to run
	sweeps   sync.WaitGroup // a sweep running
}

// New builds a gateway. It starts nothing.
func New(cfg Config) *Gateway {
	g := &Gateway{
		keys:         cfg.Keys,
		serverLimits: ServerLimits(cfg.Limits),
		meter:        cfg.Meter,
		log:          cfg.Logger,
		wsKeyOf:      map[string]*wsKey{},
		tokens:       newTokenCache(),
		keyTTL:       cfg.KeyTTL,
		bounds:       cfg.Bounds,
	}
	if g.bounds == nil {
		g.bounds = &metering.Calls{}
	}
	if g.keyTTL <= 0 {
		g.keyTTL = DefaultKeyTTL
	}
	g.slots.max, g.slots.perClient, g.slots.headerTimeout = cfg.Limits.MaxConnections, cfg.Limits.MaxConnectionsPerIP, cfg.Limits.HeaderTimeout
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	g.mem = cfg.Memory
	if g.mem == nil {
		g.mem = membudget.New("process", 0, nil)
	}
	g.mem.SetLimit(processMemory(cfg.Limits))
	g.keyMem = membudget.NewKeys(cfg.Limits.KeyMemoryBytes, g.mem)
	g.obs = observer{metrics: cfg.Metrics, tracer: cfg.Tracer}
	if a := cfg.AccessLog; a != nil && g.log.Enabled(context.Background(), slog.LevelInfo) {
		g.obs.log, g.obs.sample = g.log, min(max(a.Sample, 0), 1)
	}
	g.cur.Store(newState(cfg.Networks, cfg.Limits, cfg.CacheHitDiscount, nil))
	g.mcp = mcp.New(mcpBackend{g}, mcp.Options{Logger: g.log})
	return g
}

// Memory returns the process's memory budget, for metrics and the
// operators' pages.
func (g *Gateway) Memory() *membudget.Budget { return g.mem }

// Handler serves every network on one listener, choosing by Host.
func (g *Gateway) Handler() fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) { g.serve(ctx, "") }
}

// NetworkHandler serves one network whatever the Host; nil if the name is
// unknown. When a reload removes the network, the handler answers that
// it is no longer served (-32048).
func (g *Gateway) NetworkHandler(name string) fasthttp.RequestHandler {
	if g.current().byName[name] == nil {
		return nil
	}
	return func(ctx *fasthttp.RequestCtx) { g.serve(ctx, name) }
}

// Request headers larger than this are refused; it is also the read buffer
// of each client connection.
const maxHeaderBytes = 16 << 10

// NewServer returns a server with the gateway's limits and timeouts around
// h. The gateway serves HTTP/1.1 on fasthttp: net/http's server cost more
// CPU per small call than the whole rest of the gateway
// (docs/benchmarks.md). Serve it on a listener from Listener.
func (g *Gateway) NewServer(h fasthttp.RequestHandler) *fasthttp.Server {
	return &fasthttp.Server{
		Handler:      h,
		ErrorHandler: g.serverError,
		Name:         "portico",
		// A request's whole body is read before the handler runs, so the
		// body limit is the server's; ErrorHandler answers it.
		MaxRequestBodySize:    int(min(g.serverLimits.MaxBodyBytes, int64(^uint(0)>>1))),
		ReadBufferSize:        maxHeaderBytes,
		WriteBufferSize:       16 << 10,
		ReadTimeout:           g.serverLimits.ReadTimeout,
		WriteTimeout:          g.serverLimits.WriteTimeout,
		IdleTimeout:           g.serverLimits.IdleTimeout,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		// fasthttp's messages can quote a request line, which holds the
		// key: the logger masks it.
		Logger: fasthttpLogger{g.log},
		// Concurrency 0 means fasthttp's default (256 Ki); the gateway's
		// own connection limit sits in Listener.
		CloseOnShutdown: true,
		// A WebSocket upgrade takes its connection over for good: the
		// gateway closes it (see wsHandler).
		KeepHijackedConns: true,
		// Which connections are idle, for the choice of one to close
		// when every slot is taken (see slots).
		ConnState: connState,
	}
}

// fasthttpLogger sends fasthttp's own messages to the gateway's log at
// debug level; they name connections, not keys.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(redactKeys(fmt.Sprintf(format, args...)))
	}
}

// Listener wraps ln so that the gateway's connection limit holds over all
// its listeners. Connections beyond the limit get an HTTP 503 with a
// JSON-RPC error and are closed.
func (g *Gateway) Listener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, g: g}
}

// Close closes every WebSocket connection with "going away" and waits for
// their handlers to return. Servers are shut down by their owner.
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.closing = true
	if g.sweep != nil {
		g.sweep.Stop()
	}
	g.mu.Unlock()
	for _, c := range g.conns.Shut() {
		c.GoAway("server shutting down")
	}
	g.mcp.Close()
	g.conns.Wait()
	g.sweeps.Wait()
	return nil
}
