// Package gateway serves JSON-RPC 2.0 to clients: POST /v3/<key> and
// WebSocket /ws/v3/<key>, one network per Host on a shared listener and on
// listeners of its own. Both transports hand each request body to one core,
// which checks the key, resolves methods, validates params, serves cached
// results and forwards the rest upstream. Upstream result bytes are copied
// into the response untouched.
package gateway

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/apikey"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/upstream"
)

// Authenticator checks the API key of a request.
type Authenticator interface {
	Authenticate(ctx context.Context, key string) (apikey.Identity, error)
}

// Caller sends a call upstream; *upstream.Pool is one.
type Caller interface {
	Call(ctx context.Context, method string, params jsontext.Value) (jsontext.Value, error)
}

var (
	_ Authenticator = (*apikey.Set)(nil)
	_ Caller        = (*upstream.Pool)(nil)
)

// Meter charges calls in credits; *metering.Meter is one.
type Meter interface {
	Charge(ctx context.Context, id apikey.Identity, items []metering.Item) (metering.Bill, error)
	Refund(ctx context.Context, b *metering.Bill, it metering.Item) error
	Balance(ctx context.Context, id apikey.Identity) (metering.Bill, error)
	// Speculate reports whether calls may run while their charge is in
	// flight; their answers are released only once it succeeded.
	Speculate(id apikey.Identity, cost int64) bool
}

var _ Meter = (*metering.Meter)(nil)

// Network is one served network.
type Network struct {
	// Name identifies the network in logs, errors and cache keys.
	Name string
	// Hosts select the network on the shared listener (lower case, no
	// port).
	Hosts []string
	// Methods is the network's resolved method table.
	Methods *Methods
	// Upstream answers the calls that pass the gateway's checks.
	Upstream Caller
}

// Limits bound what clients can send; see config.Limits.
type Limits struct {
	MaxBodyBytes      int64
	MaxBatch          int
	MaxWSMessageBytes int64
	MaxConnections    int
	MaxWSConnections  int
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	WSIdleTimeout     time.Duration
}

// Config holds what a Gateway needs. Keys, Networks and Limits are required.
type Config struct {
	Keys     Authenticator
	Networks []*Network
	Limits   Limits
	// Cache holds immutable results; nil disables caching.
	Cache *upstream.Cache
	// Meter charges accepted calls; nil turns metering off.
	Meter Meter
	// Logger receives access and error logs; keys never reach it.
	Logger *slog.Logger
}

// Gateway is the request-serving core with its two transports.
type Gateway struct {
	keys    Authenticator
	byHost  map[string]*Network
	byName  map[string]*Network
	limits  Limits
	cache   *upstream.Cache
	meter   Meter
	log     *slog.Logger
	bufs    sync.Pool
	conns   atomic.Int64 // open TCP connections over all listeners
	wsConns atomic.Int64

	mu      sync.Mutex
	sockets map[*websocket.Conn]struct{}
	closing bool
	wsWG    sync.WaitGroup // one per tracked socket
}

// New builds a gateway. It starts nothing.
func New(cfg Config) *Gateway {
	g := &Gateway{
		keys:    cfg.Keys,
		byHost:  map[string]*Network{},
		byName:  map[string]*Network{},
		limits:  cfg.Limits,
		cache:   cfg.Cache,
		meter:   cfg.Meter,
		log:     cfg.Logger,
		sockets: map[*websocket.Conn]struct{}{},
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	for _, n := range cfg.Networks {
		g.byName[n.Name] = n
		for _, h := range n.Hosts {
			g.byHost[strings.ToLower(h)] = n
		}
	}
	return g
}

// Handler serves every network on one listener, choosing by Host.
func (g *Gateway) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.serve(w, r, nil)
	})
}

// NetworkHandler serves one network whatever the Host; nil if the name is
// unknown.
func (g *Gateway) NetworkHandler(name string) http.Handler {
	n := g.byName[name]
	if n == nil {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.serve(w, r, n)
	})
}

// NewServer returns an http.Server with the gateway's timeouts around h.
func (g *Gateway) NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: min(g.limits.ReadTimeout, 10*time.Second),
		ReadTimeout:       g.limits.ReadTimeout,
		WriteTimeout:      g.limits.WriteTimeout,
		IdleTimeout:       g.limits.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelDebug),
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
	socks := make([]*websocket.Conn, 0, len(g.sockets))
	for c := range g.sockets {
		socks = append(socks, c)
	}
	g.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range socks {
		wg.Go(func() { c.Close(websocket.StatusGoingAway, "server shutting down") })
	}
	wg.Wait()
	g.wsWG.Wait()
	return nil
}
