package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"
	"go.opentelemetry.io/otel/trace"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/admin"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/store"
	"github.com/porticohq/portico/store/sqldb"
)

// Streams are the command's standard output and error.
type Streams struct {
	Out io.Writer
	Err io.Writer
	// In is standard input for the commands that read it (wallet's
	// code prompt); nil means os.Stdin.
	In io.Reader
}

// ServeCmd runs the gateway until interrupted.
type ServeCmd struct {
	Config  string `help:"YAML config file; without one the three built-in networks run on embedded defaults." type:"existingfile" env:"PORTICO_CONFIG"`
	Listen  string `help:"Shared listener address (default ${default_listen}); each network also gets the next port of its own, or port 0 when this is port 0." env:"PORTICO_LISTEN"`
	DataDir string `help:"Directory for persistent state (dev key, devnet chains); empty keeps nothing." type:"path" env:"PORTICO_DATA_DIR"`
	Pprof   string `help:"Serve Go's profiling endpoints (/debug/pprof/) on this address, e.g. 127.0.0.1:6060; off when empty." env:"PORTICO_PPROF"`
	// The auth server (login pages, session server, key network) on its own port.
	AuthListen string `help:"Address of the auth server (login pages, session server, embedded key network); default 127.0.0.1:8550, or port 0 when --listen is port 0." env:"PORTICO_SERVE_AUTH_LISTEN"`
	NoAuth     bool   `help:"Do not start the auth server." env:"PORTICO_NO_AUTH"`
	// What portico auth serve takes as --login-config, --dev-log-codes
	// and --node-key-dir.
	AuthLoginConfig string `help:"JSON file with the auth server's login providers (smtp for email codes, oidc, verifiers, passwordless, baseUrls), as portico auth serve --login-config takes; see docs/auth.md." type:"existingfile" env:"PORTICO_SERVE_AUTH_CONFIG"`
	AuthDevLogCodes bool   `help:"DEVELOPMENT ONLY: write the auth server's email login codes to the log instead of mailing them (without smtp in --auth-login-config); make run passes it." env:"PORTICO_SERVE_AUTH_DEV_LOG_CODES"`
	AuthNodeKeyDir  string `help:"Directory of the embedded key nodes' key files, which seal their shares; default <data-dir>.node-keys beside the data directory, so that a copy of the data directory does not carry the keys that open it." type:"path" env:"PORTICO_SERVE_AUTH_NODE_KEY_DIR"`
	DevDashboard    bool   `help:"DEVELOPMENT: without admin.token in the config, turn the admin API and the dashboard on with a dev admin token, kept beside the dev key (<data-dir>/dev-admin-token) and printed on a ready line; make run passes it." env:"PORTICO_DEV_DASHBOARD"`
}

// Run loads the config, starts serving and waits for ctx to end.
func (c *ServeCmd) Run(ctx context.Context, s *Streams) error {
	cfg := config.DefaultConfig()
	if c.Config != "" {
		var err error
		if cfg, err = config.Load(c.Config); err != nil {
			return err
		}
	}
	c.override(&cfg)
	if c.Pprof != "" {
		ln, err := net.Listen("tcp", c.Pprof)
		if err != nil {
			return fmt.Errorf("pprof: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
	}
	m := &Main{Config: cfg, Stdout: s.Out, Stderr: s.Err, DevDashboard: c.DevDashboard,
		ConfigPath: c.Config, Overrides: c.override}
	if err := m.Run(ctx); err != nil {
		m.Close()
		return err
	}
	// SIGHUP reloads the config file (docs/operations.md).
	stopHUP := m.reloadOnHangup(ctx)
	defer stopHUP()
	if !c.NoAuth {
		a, err := startServeAuth(ctx, c, cfg.Listen, cfg.DataDir, m.log, s)
		if err != nil {
			m.Close()
			return err
		}
		defer a.Close()
	}
	<-ctx.Done()
	return m.Close()
}

// override applies the command line's settings over a config.
func (c *ServeCmd) override(cfg *config.Config) {
	if c.Listen != "" {
		cfg.Listen = c.Listen
	}
	if c.DataDir != "" {
		cfg.DataDir = c.DataDir
	}
}

// Main is a running portico serve: it owns the listeners, the gateway and
// the embedded devnets. Fill Config, call Run, and Close when done.
type Main struct {
	// Config is the config Run starts with; a reload serves another
	// without changing this one.
	Config config.Config
	Stdout io.Writer
	Stderr io.Writer
	// DevDashboard turns the admin API and the dashboard on with a dev
	// admin token when Config has no admin.token (devAdminToken).
	DevDashboard bool

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
	// dash are the dashboard's endpoint links (nil without a dashboard),
	// published again by a reload.
	dash *dashboardLinks
	// ownListeners are the networks' own listener addresses, by name,
	// opened at start or by a reload; a reload never closes one.
	ownListeners map[string]string
	gw           *gateway.Gateway
	cache        *network.Cache
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
// line per network. It returns once everything serves.
func (m *Main) Run(ctx context.Context) error {
	cfg := &m.Config
	if err := checkConfig(cfg); err != nil {
		return err
	}
	m.ownListeners = map[string]string{}
	m.closing = make(chan struct{})
	logw, logBuf := bufferLogs(m.Stderr)
	m.logBuf = logBuf
	m.log = newLogger(logw, cfg.Log)
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
	version, _ := buildVersion()
	tracer, shutdown, err := newTracing(ctx, cfg.Tracing, version)
	if err != nil {
		return err
	}
	if tracer != nil {
		m.tracer = tracer
		// Closed last: the spans of the last calls are flushed.
		m.closers = append(m.closers, closerFunc(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := shutdown(sctx); err != nil {
				m.log.Warn("tracing: spans not flushed", "err", err)
			}
		}))
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	m.Store = st
	m.closers = append(m.closers, st)
	if m.Key, err = importKeys(ctx, cfg, st); err != nil {
		return err
	}
	meter, err := m.newMeter(ctx, st)
	if err != nil {
		return err
	}
	var gwMeter gateway.Meter
	var netMeter network.Meter
	if meter != nil {
		m.Meter = meter
		m.closers = append(m.closers, meter) // closed before the store: its last flush needs it
		gwMeter, netMeter = meter, meter
	}
	if cfg.Cache.MaxBytes > 0 {
		var shared network.Shared
		if cfg.Cache.Redis != "" {
			rdb, err := dialRedis(ctx, "cache.redis", cfg.Cache.Redis)
			if err != nil {
				return err
			}
			m.closers = append(m.closers, rdb)
			rs, err := network.NewRedisShared(rdb, network.RedisSharedConfig{Prefix: cfg.Cache.RedisPrefix,
				TTL: cfg.Cache.RedisTTL, MaxEntryBytes: cfg.Cache.RedisMaxEntryBytes, Logger: m.log})
			if err != nil {
				return err
			}
			m.closers = append(m.closers, rs) // closed before the client
			shared = rs
		}
		m.cache = network.NewCache(cfg.Cache.MaxBytes, shared)
	}

	m.netMeter = netMeter
	var nets []*gateway.Network
	cur := &servedConfig{cfg: *cfg, byName: map[string]*servedNetwork{}}
	for i := range cfg.Networks {
		n, err := m.network(ctx, &cfg.Networks[i], netMeter, cfg.Cache.CoalesceDisabled)
		if err != nil {
			return fmt.Errorf("network %s: %w", cfg.Networks[i].Name, err)
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
	m.gw = gateway.New(gateway.Config{
		Keys:             store.NewAuthenticator(st, cfg.Store.KeyCacheTTL),
		KeyTTL:           cfg.Store.KeyCacheTTL,
		Meter:            gwMeter,
		Networks:         nets,
		CacheHitDiscount: cfg.Cache.HitDiscountPercent,
		Logger:           m.log,
		AccessLog:        &gateway.AccessLog{Sample: cfg.Log.AccessSample},
		Metrics:          m.metrics,
		Tracer:           m.tracer,
		Limits:           cfg.Limits,
	})

	if m.metrics != nil {
		if err := m.metrics.WatchNodes(m.nodeStates); err != nil {
			return err
		}
		if err := m.metrics.WatchMemory(m.gw.Memory().Used, m.gw.Memory().Limit); err != nil {
			return err
		}
	}
	handler := m.opsRoutes(m.gw.Handler())
	var dash *dashboardLinks // the dashboard's endpoint URLs, once known
	if cfg.Admin.Token != "" {
		api, err := admin.New(admin.Config{Token: cfg.Admin.Token, Store: st, Meter: meter,
			DefaultDailyCredits: cfg.Metering.DefaultDailyCredits, Logger: m.log, Nodes: m.nodes, Reload: m.reloadFromAdmin})
		if err != nil {
			return err
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
		if handler, dash, err = m.withDashboard(handler, api); err != nil {
			return err
		}
	}
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
	m.dash = dash
	dash.publish(m.Shared, m.Networks)
	m.printReady()
	return nil
}

// listen binds addr and serves h on it.
func (m *Main) listen(addr string, h fasthttp.RequestHandler) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	m.serve(ln, h)
	return ln.Addr().String(), nil
}

// serve serves h on ln until Close.
func (m *Main) serve(ln net.Listener, h fasthttp.RequestHandler) {
	srv := m.gw.NewServer(h)
	m.servers = append(m.servers, srv)
	m.listeners = append(m.listeners, ln)
	m.wg.Go(func() {
		if err := srv.Serve(m.gw.Listener(ln)); err != nil {
			m.log.Error("listener stopped", "addr", ln.Addr().String(), "err", err)
		}
	})
}

// network builds one network: its method table and its upstream pool,
// starting an embedded devnet when it has no upstream. What it opens is
// closed with the network (servedNetwork.close), by Close or, once a
// reload has replaced it and it is idle, by the reload.
func (m *Main) network(ctx context.Context, n *config.Network, meter network.Meter, noCoalesce bool) (_ *servedNetwork, err error) {
	fam, err := families.Get(n.Family)
	if err != nil {
		return nil, err
	}
	res := &netResources{}
	defer func() {
		if err != nil {
			res.close()
		}
	}()
	var members []upstream.Member
	for _, u := range n.Upstreams {
		node, err := upstream.Dial(u.URL, m.nodeOptions())
		if err != nil {
			return nil, err
		}
		name := u.Name
		if name == "" {
			name = upstream.Redact(u.URL)
		}
		member := upstream.Member{Name: name, Node: node}
		if u.WSURL != "" {
			ws := upstream.NewWebSocket(u.WSURL, m.nodeOptions())
			res.closers = append(res.closers, ws)
			member.Subs = ws
		}
		members = append(members, member)
	}
	embedded := len(members) == 0 && !n.Devnet.Disabled
	if embedded {
		member, err := m.devnet(ctx, fam, n, res)
		if err != nil {
			return nil, err
		}
		members = append(members, member)
	}
	table := fam.Table(embedded)
	res.view = newNetworkView(table.Chain)
	res.table = res.view.counting(table)
	methods, err := gateway.NewMethods(res.table, methodsConfig(n))
	if err != nil {
		return nil, err
	}
	if len(members) == 0 {
		m.log.Warn("network has no upstream; its calls fail until one is configured", "network", n.Name, "family", n.Family)
	}
	res.pool = upstream.NewPool(upstream.PoolConfig{
		Network: n.Name, Members: members, Timeout: n.Timeout, AttemptTimeout: n.AttemptTimeout, Logger: m.log,
		Chain: table.Chain, ChainID: n.ChainID, MaxLag: n.MaxLag, PollInterval: n.PollInterval,
		Hedge:     upstream.Hedge{Disabled: n.Hedge.Disabled, MinDelay: n.Hedge.MinDelay, MaxDelay: n.Hedge.MaxDelay},
		OnAttempt: m.attemptObserver(n.Name), Tracer: m.tracer,
	})
	res.closers = append(res.closers, res.pool)
	if err := res.pool.Start(ctx); err != nil {
		return nil, err
	}
	verifyCfg, err := verifyConfig(n)
	if err != nil {
		return nil, err
	}
	verifyCfg.CallCost = verifyCallCost(res.table, n)
	res.served = network.New(network.Config{Name: n.Name, Upstream: res.pool, Tags: methods.Chain().Tags, KeyForm: methods.KeyForm(), Subs: methods.Subscriptions(),
		Cache: m.cache, NoCoalesce: noCoalesce, Meter: meter, Logger: m.log, Metrics: m.metrics, Logs: n.Logs.Settings(), Verify: verifyCfg})
	return &servedNetwork{cfg: *n, res: res,
		gw: &gateway.Network{Name: n.Name, Hosts: n.HostNames(), Methods: methods, Served: res.served}}, nil
}

// methodsConfig is what a network's config says of its method table.
func methodsConfig(n *config.Network) gateway.MethodsConfig {
	return gateway.MethodsConfig{Allow: n.Methods, Enable: n.Enable, Costs: n.Costs, DefaultCost: n.DefaultCost, NotificationCosts: n.NotificationCosts}
}

// nodeOptions are the options of every node: answers bounded by
// limits.max_result_bytes.
func (m *Main) nodeOptions() *upstream.Options {
	return &upstream.Options{MaxResponseBytes: m.Config.Limits.MaxResultBytes}
}

// devnet starts the family's embedded devnet for network n, prints what
// it offers, and returns it as an upstream member called in-process.
func (m *Main) devnet(ctx context.Context, fam families.Family, n *config.Network, res *netResources) (upstream.Member, error) {
	d, err := fam.NewDevnet(devnetConfig(m.Config.DataDir, m.log, n))
	if err != nil {
		return upstream.Member{}, err
	}
	res.closers = append(res.closers, d)
	if err := d.Start(ctx); err != nil {
		return upstream.Member{}, err
	}
	res.devnet = d
	h := d.Handler()
	if h == nil {
		return upstream.Member{}, fmt.Errorf("embedded %s devnet has no JSON-RPC handler", n.Family)
	}
	fmt.Fprintf(m.Stdout, "%s: %s\n", n.Name, d.Info())
	// The devnet also listens on loopback for its own clients; the
	// gateway calls its handler in-process, through the same Node
	// interface as a remote node.
	member := upstream.Member{Name: n.Name + "/embedded", Node: upstream.NewInProcess(h, m.nodeOptions())}
	// Subscriptions: the family's own way in-process, else the devnet's
	// WebSocket endpoint.
	if fam.Subscriber != nil {
		s, closeSubs := fam.Subscriber(d)
		member.Subs = s
		res.closers = append(res.closers, closerFunc(closeSubs))
	} else if u := d.WSURL(); u != "" {
		ws := upstream.NewWebSocket(u, m.nodeOptions())
		res.closers = append(res.closers, ws)
		member.Subs = ws
	}
	return member, nil
}

// closerFunc makes a function an io.Closer.
type closerFunc func()

func (f closerFunc) Close() error { f(); return nil }

// devnetConfig is the embedded devnet's configuration for network n: its
// chain under dataDir/<network>.
func devnetConfig(dataDir string, log *slog.Logger, n *config.Network) families.DevnetConfig {
	if dataDir != "" {
		dataDir = filepath.Join(dataDir, n.Name)
	}
	return families.DevnetConfig{
		DataDir:     dataDir,
		BlockPeriod: n.Devnet.BlockPeriod,
		Traffic:     n.Devnet.Traffic == nil || *n.Devnet.Traffic,
		Accounts:    n.Devnet.Accounts,
		KeepSlots:   n.Devnet.KeepSlots,
		GenesisFile: n.Devnet.Genesis,
		ChainRLP:    n.Devnet.ChainRLP,
		Logger:      log.With("devnet", n.Name),
	}
}

// printReady prints one line per network with its URLs and a curl.
func (m *Main) printReady() {
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
func (m *Main) printEndpoint(ep Endpoint, key string) {
	base := ep.base(m.Shared)
	httpURL := base + "/v3/" + key
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/ws/v3/" + key
	fam, _ := families.Get(ep.Family)
	fmt.Fprintf(m.Stdout, "%-16s %s  %s  curl -s %s -H 'Content-Type: application/json' -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\"}'\n",
		ep.Name, httpURL, wsURL, httpURL, fam.Probe)
}

// Close stops listeners, then upstreams and devnets, and waits. Calls after
// the first return the first call's result.
func (m *Main) Close() error {
	m.once.Do(func() { m.err = m.close() })
	return m.err
}

func (m *Main) close() error {
	m.reloadMu.Lock()
	m.closed = true
	if m.closing != nil {
		close(m.closing)
	}
	m.reloadMu.Unlock()
	m.retiring.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
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

func newLogger(w io.Writer, c config.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
