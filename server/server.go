// Package server wires a running Portico from its config: the store and
// the keys the config imports, metering, the cache, one network per config
// entry (its nodes, or its embedded devnet), the gateway in front of them,
// the admin API and the dashboard, metrics, tracing and readiness, and the
// listeners. It also reloads the config of a running server (reload.go) and
// checks a config with every check a start runs (CheckConfig). The binary
// (cmd/portico) parses flags and calls it; tests run it in-process on
// port 0.
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"go.opentelemetry.io/otel/trace"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/admin"
	"github.com/porticohq/portico/admin/admintoken"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/gateway/webhook"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network"
	"github.com/porticohq/portico/store"
	"github.com/porticohq/portico/store/sqldb"
)

// Server is a running portico serve: it owns the listeners, the gateway and
// the embedded devnets. Fill Config, call Run, and Close when done.
type Server struct {
	// Config is the config Run starts with; a reload serves another
	// without changing this one.
	Config config.Config
	Stdout io.Writer
	Stderr io.Writer
	// DevDashboard turns the admin API and the dashboard on with a dev
	// admin token when Config has no admin.token (devAdminToken).
	DevDashboard bool
	// Version names the service's version in its traces; "" takes the
	// module version the Go toolchain recorded, else "(devel)".
	Version string

	// ConfigPath is the config file Reload reads again ("" when serve
	// runs on the embedded defaults, which nothing reloads); Overrides,
	// when set, applies the command line's settings over what it reads.
	ConfigPath string
	Overrides  func(*config.Config)

	// Set by Run, as Run started them (a reload changes none of these).
	Key      string     // the dev key, when Config has no keys
	Shared   string     // the shared listener's address
	Networks []Endpoint // one per network, in config order
	// Devnets are the embedded devnets, by network name.
	Devnets map[string]families.Devnet
	// Store holds keys and usage; Meter charges calls (nil when off).
	Store *store.Store
	Meter *metering.Ledger
	// Bounds holds keys' bounds on calls, connections and subscriptions
	// across instances (metering.redis); nil keeps them in the gateway.
	Bounds *metering.SharedBounds
	// tokens counts the admin API's and the dashboard's wrong tokens
	// across instances (metering.redis); nil counts them here.
	tokens admintoken.Shared
	// MetricsAddr is the address of metrics.listen, when set.
	MetricsAddr string

	log     *slog.Logger
	logBuf  io.Closer        // the log's buffer, closed last; nil when unbuffered
	metrics *metrics.Metrics // nil when metrics.disabled
	tracer  trace.Tracer     // nil when tracing is off
	// cur is the config served now and its networks (reload.go).
	cur atomic.Pointer[servedConfig]
	// live are the networks' resources not closed yet: those served and
	// those a reload retired that still have calls or subscriptions.
	liveMu   sync.Mutex
	live     map[*netResources]struct{}
	reloadMu sync.Mutex
	closed   bool // under reloadMu: no reload after Close
	// closing is closed by Close: the networks a reload retired are
	// closed by Close then, idle or not (retiring waits for them).
	closing  chan struct{}
	retiring sync.WaitGroup
	netMeter network.Meter
	// mem is the process's memory budget, which the gateway bounds and
	// the networks' kept transactions count in.
	mem *membudget.Budget
	// dash are the dashboard's endpoint links (nil without a dashboard),
	// published again by a reload.
	dash *dashboardLinks
	// ownListeners are the networks' own listener addresses, by name,
	// opened at start or by a reload; a reload never closes one.
	ownListeners map[string]string
	gw           *gateway.Gateway
	cache        *network.Cache
	// webhooks delivers the keys' webhooks; stopWebhooks stops it.
	webhooks     *webhook.Manager
	stopWebhooks func()
	servers      []*fasthttp.Server
	// listeners are closed after Shutdown too: a server whose Serve had
	// not started yet when Shutdown ran would otherwise accept forever.
	listeners []net.Listener
	closers   []io.Closer
	// devToken says admin.token is the dev admin token, kept at
	// devTokenPath ("" when not kept).
	devToken     bool
	devTokenPath string
	wg           sync.WaitGroup
	once         sync.Once
	err          error
}

// Endpoint is where a network is served.
type Endpoint struct {
	Name   string
	Family portico.Family
	// Addr is the network's own listener address; empty when it has none.
	Addr string
	// Host is the network's first Host name on the shared listener.
	Host string
}

// base is the endpoint's URL base: its own listener, else its Host on
// the shared listener's port.
func (ep Endpoint) base(shared string) string {
	if ep.Addr != "" {
		return "http://" + ep.Addr
	}
	_, port, _ := net.SplitHostPort(shared)
	return "http://" + ep.Host + ":" + port
}

// Run checks the config (every check of portico config check, before
// anything is opened), starts devnets and listeners, and prints one ready
// line per network. It returns once everything serves; on an error, Close
// closes what it had opened.
func (m *Server) Run(ctx context.Context) error {
	if err := m.prepare(); err != nil {
		return err
	}
	if err := m.startTracing(ctx); err != nil {
		return err
	}
	if err := m.OpenStore(ctx); err != nil {
		return err
	}
	if err := m.openCache(ctx); err != nil {
		return err
	}
	nets, err := m.startNetworks(ctx)
	if err != nil {
		return err
	}
	m.newGateway(nets)
	if err := m.watchMetrics(); err != nil {
		return err
	}
	if err := m.startWebhooks(); err != nil {
		return err
	}
	handler, dash, err := m.sharedHandler()
	if err != nil {
		return err
	}
	if err := m.listenAll(handler); err != nil {
		return err
	}
	m.dash = dash
	dash.publish(m.Shared, m.Networks)
	m.printReady()
	return nil
}

// prepare checks the config and sets up what the other steps write to:
// the log, the data directory, the dev admin token, the metrics.
func (m *Server) prepare() error {
	cfg := &m.Config
	if err := CheckConfig(cfg); err != nil {
		return err
	}
	m.ownListeners = map[string]string{}
	m.closing = make(chan struct{})
	logw, logBuf := bufferLogs(m.Stderr)
	m.logBuf = logBuf
	m.log = NewLogger(logw, cfg.Log)
	if cfg.DataDir != "" {
		// 0700 even if it existed: it holds the dev key and the store.
		if err := sqldb.MakePrivateDir(cfg.DataDir); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
	}
	if m.DevDashboard && cfg.Admin.Token == "" {
		var err error
		if cfg.Admin.Token, m.devTokenPath, err = devAdminToken(cfg.DataDir); err != nil {
			return err
		}
		m.devToken = true
	}
	if !cfg.Metrics.Disabled {
		m.metrics = metrics.New()
	}
	return nil
}

// startTracing starts the trace exporter when tracing is on; it is closed
// last, so that the spans of the last calls are flushed.
func (m *Server) startTracing(ctx context.Context) error {
	tracer, shutdown, err := newTracing(ctx, m.Config.Tracing, m.version())
	if err != nil || tracer == nil {
		return err
	}
	m.tracer = tracer
	m.closers = append(m.closers, closerFunc(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			m.log.Warn("tracing: spans not flushed", "err", err)
		}
	}))
	return nil
}

// version is Version, else the module version the toolchain recorded.
func (m *Server) version() string {
	if m.Version != "" {
		return m.Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// openStore opens the key store, imports the config's keys (or makes the
// dev key) and starts the meter.
func (m *Server) OpenStore(ctx context.Context) error {
	st, err := OpenStore(ctx, &m.Config)
	if err != nil {
		return err
	}
	m.Store = st
	m.closers = append(m.closers, st)
	if m.Key, err = ImportKeys(ctx, &m.Config, st); err != nil {
		return err
	}
	meter, err := m.newMeter(ctx, st)
	if err != nil {
		return err
	}
	if meter != nil {
		m.Meter = meter
		m.closers = append(m.closers, meter) // closed before the store: its last flush needs it
		m.netMeter = meter
	}
	return nil
}

// openCache builds the cache every network shares, with its Redis layer
// when the config names one; none when cache.max_bytes is 0.
func (m *Server) openCache(ctx context.Context) error {
	c := m.Config.Cache
	if c.MaxBytes <= 0 {
		return nil
	}
	var shared network.Shared
	if c.Redis != "" {
		rdb, err := dialRedis(ctx, "cache.redis", c.Redis)
		if err != nil {
			return err
		}
		m.closers = append(m.closers, rdb)
		rs, err := network.NewRedisShared(rdb, network.RedisSharedConfig{Prefix: c.RedisPrefix,
			TTL: c.RedisTTL, MaxEntryBytes: c.RedisMaxEntryBytes, Logger: m.log})
		if err != nil {
			return err
		}
		m.closers = append(m.closers, rs) // closed before the client
		shared = rs
	}
	m.cache = network.NewCache(c.MaxBytes, shared)
	return nil
}

// startNetworks builds every network of the config, in order, and
// publishes them as the served config.
func (m *Server) startNetworks(ctx context.Context) ([]*gateway.Network, error) {
	cfg := &m.Config
	var nets []*gateway.Network
	cur := &servedConfig{cfg: *cfg, byName: map[string]*servedNetwork{}}
	for i := range cfg.Networks {
		n, err := m.network(ctx, &cfg.Networks[i], m.netMeter, cfg.Cache.CoalesceDisabled)
		if err != nil {
			return nil, fmt.Errorf("network %s: %w", cfg.Networks[i].Name, err)
		}
		m.track(n.res)
		if n.res.devnet != nil {
			if m.Devnets == nil {
				m.Devnets = map[string]families.Devnet{}
			}
			m.Devnets[n.cfg.Name] = n.res.devnet
		}
		cur.add(n)
		nets = append(nets, n.gw)
	}
	m.cur.Store(cur)
	return nets, nil
}

// memory is the process's memory budget; the gateway sets its limit.
func (m *Server) memory() *membudget.Budget {
	if m.mem == nil {
		m.mem = membudget.New("process", 0, nil)
	}
	return m.mem
}

// newGateway builds the gateway in front of nets.
func (m *Server) newGateway(nets []*gateway.Network) {
	cfg := &m.Config
	var gwMeter gateway.Meter
	if m.Meter != nil {
		gwMeter = m.Meter
	}
	m.gw = gateway.New(gateway.Config{
		Keys:             store.NewAuthenticator(m.Store, cfg.Store.KeyCacheTTL),
		KeyTTL:           cfg.Store.KeyCacheTTL,
		Meter:            gwMeter,
		Bounds:           m.bounds(),
		Networks:         nets,
		CacheHitDiscount: cfg.Cache.HitDiscountPercent,
		Logger:           m.log,
		AccessLog:        &gateway.AccessLog{Sample: cfg.Log.AccessSample},
		Metrics:          m.metrics,
		Tracer:           m.tracer,
		Limits:           cfg.Limits,
		Memory:           m.memory(),
	})
}

// bounds is the gateway's metering.Bounds: Bounds, or nil for the
// gateway's own.
func (m *Server) bounds() metering.Bounds {
	if m.Bounds == nil {
		return nil
	}
	return m.Bounds
}

// watchMetrics has the metrics read the nodes' states and the memory
// budget when they are collected.
func (m *Server) watchMetrics() error {
	if m.metrics == nil {
		return nil
	}
	if err := m.metrics.WatchNodes(m.nodeStates); err != nil {
		return err
	}
	return m.metrics.WatchMemory(m.gw.Memory().Used, m.gw.Memory().Limit)
}

// sharedHandler is what the shared listener serves: /readyz and
// /metrics, the admin API and the dashboard when admin.token is set, the
// gateway for the rest; and the dashboard's links (nil without one), to be
// published once the listeners are bound.
func (m *Server) sharedHandler() (fasthttp.RequestHandler, *dashboardLinks, error) {
	handler := m.opsRoutes(m.gw.Handler())
	if m.Config.Admin.Token == "" {
		return handler, nil, nil
	}
	tokens, err := admintoken.New(admintoken.Config{Token: m.Config.Admin.Token, Shared: m.tokens})
	if err != nil {
		return nil, nil, err
	}
	api, err := admin.New(admin.Config{Token: m.Config.Admin.Token, Tokens: tokens, Store: m.Store, Meter: m.Meter,
		DefaultDailyCredits: m.Config.Metering.DefaultDailyCredits, Logger: m.log, Nodes: m.nodes, Reload: m.reloadFromAdmin,
		Webhooks: m.webhooks})
	if err != nil {
		return nil, nil, err
	}
	// The admin API is low-traffic net/http code; only its paths go
	// through the adaptor.
	adminHandler := fasthttpadaptor.NewFastHTTPHandler(api)
	gwHandler := handler
	handler = func(ctx *fasthttp.RequestCtx) {
		if bytes.HasPrefix(ctx.Path(), []byte("/admin/")) {
			adminHandler(ctx)
			return
		}
		gwHandler(ctx)
	}
	// The dashboard (docs/operations.md): /dashboard/, through the admin API.
	return m.withDashboard(handler, api)
}

// listenAll binds the shared listener, the metrics listener and each
// network's own listener, and serves them.
func (m *Server) listenAll(handler fasthttp.RequestHandler) error {
	cfg := &m.Config
	addr, err := m.listen(cfg.Listen, handler)
	if err != nil {
		return err
	}
	m.Shared = addr
	if m.metrics != nil && cfg.Metrics.Listen != "" {
		if m.MetricsAddr, err = m.listenMetrics(cfg.Metrics.Listen); err != nil {
			return err
		}
	}
	for i, n := range cfg.Networks {
		ep := Endpoint{Name: n.Name, Family: n.Family, Host: n.HostNames()[0]}
		if a := cfg.ListenAddr(i); a != "" {
			if ep.Addr, err = m.listen(a, m.gw.NetworkHandler(n.Name)); err != nil {
				return fmt.Errorf("network %s: %w", n.Name, err)
			}
			m.ownListeners[n.Name] = ep.Addr
		}
		m.Networks = append(m.Networks, ep)
	}
	return nil
}

// listen binds addr and serves h on it.
func (m *Server) listen(addr string, h fasthttp.RequestHandler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	m.serve(ln, h)
	return ln.Addr().String(), nil
}

// serve serves h on ln until Close.
func (m *Server) serve(ln net.Listener, h fasthttp.RequestHandler) {
	srv := m.gw.NewServer(h)
	m.servers = append(m.servers, srv)
	m.listeners = append(m.listeners, ln)
	m.wg.Go(func() {
		if err := srv.Serve(m.gw.Listener(ln)); err != nil {
			m.log.Error("listener stopped", "addr", ln.Addr().String(), "err", err)
		}
	})
}

// Logger is the server's logger (nil before Run).
func (m *Server) Logger() *slog.Logger { return m.log }

// printReady prints one line per network with its URLs and a curl.
func (m *Server) printReady() {
	key := m.Key
	if key == "" {
		key = "<API_KEY>"
	}
	_, port, _ := net.SplitHostPort(m.Shared)
	fmt.Fprintf(m.Stdout, "portico ready on %s (networks by Host: <network>.localhost:%s)\n", m.Shared, port)
	switch {
	case m.Key != "":
		where := "not persisted: pass --data-dir to keep it"
		if m.Config.DataDir != "" {
			where = "stored in " + filepath.Join(m.Config.DataDir, "dev-key")
		}
		fmt.Fprintf(m.Stdout, "dev API key %s (%s; %d credits a day)\n", m.Key, where, int64(DevDailyCredits))
	case len(m.Config.Keys) == 0:
		fmt.Fprintln(m.Stdout, "no dev key: the key store already holds keys (portico keys list shows them, portico keys create makes one)")
	}
	for _, ep := range m.Networks {
		m.printEndpoint(ep, key)
	}
	m.printDashboard()
}

// printEndpoint prints a network's ready line: its URLs and a curl.
func (m *Server) printEndpoint(ep Endpoint, key string) {
	base := ep.base(m.Shared)
	httpURL := base + "/v3/" + key
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/ws/v3/" + key
	fam, _ := families.Get(ep.Family)
	fmt.Fprintf(m.Stdout, "%-16s %s  %s  curl -s %s -H 'Content-Type: application/json' -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\"}'\n",
		ep.Name, httpURL, wsURL, httpURL, fam.Probe)
}

// Close stops listeners, then upstreams and devnets, and waits. Calls after
// the first return the first call's result.
func (m *Server) Close() error {
	m.once.Do(func() { m.err = m.close() })
	return m.err
}

func (m *Server) close() error {
	m.reloadMu.Lock()
	m.closed = true
	if m.closing != nil {
		close(m.closing)
	}
	m.reloadMu.Unlock()
	m.retiring.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if m.stopWebhooks != nil {
		m.stopWebhooks()
	}
	if m.gw != nil {
		m.gw.Close()
	}
	var errs []error
	for _, s := range m.servers {
		if err := s.ShutdownWithContext(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			errs = append(errs, err)
		}
	}
	for _, ln := range m.listeners {
		_ = ln.Close() // already closed by Shutdown when Serve had started
	}
	m.wg.Wait()
	m.liveMu.Lock()
	live := m.live
	m.live = nil
	m.liveMu.Unlock()
	for res := range live {
		errs = append(errs, res.close())
	}
	for i := len(m.closers) - 1; i >= 0; i-- {
		errs = append(errs, m.closers[i].Close())
	}
	if m.cache != nil {
		m.cache.Close()
	}
	if m.logBuf != nil {
		errs = append(errs, m.logBuf.Close())
	}
	return errors.Join(errs...)
}

// NewLogger is the logger of a config's log block, writing to w.
func NewLogger(w io.Writer, c config.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// closerFunc makes a function an io.Closer.
type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }
