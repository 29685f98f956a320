package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/admin/dashboard"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network"
	"github.com/porticohq/portico/network/upstream"
)

// This file reloads the config of a running portico serve (SIGHUP, or
// POST /admin/v1/reload): networks, their nodes, costs and method lists,
// the limits, and the keys the file imports. The new networks are built
// off to the side, then the gateway swaps them in at once
// (gateway.Reload); what was replaced is closed once its calls in flight
// and its subscriptions are done. A config that fails a check, changes
// what only a restart changes, or whose networks cannot be built is
// refused with the field named, and the running one stays.
// docs/operations.md, "Reloading the config", is the user's side.

// servedConfig is the config served now with its networks: immutable
// once published in Server.cur.
type servedConfig struct {
	cfg    config.Config
	nets   []*servedNetwork // config order
	byName map[string]*servedNetwork
}

func (s *servedConfig) add(n *servedNetwork) {
	s.nets = append(s.nets, n)
	s.byName[n.cfg.Name] = n
}

// servedNetwork is one network as served: its config, what the gateway
// serves, and its resources, which a reload that changes only the
// gateway's side of the network (hosts, methods, costs) shares with the
// next servedNetwork of the same name.
type servedNetwork struct {
	cfg config.Network
	gw  *gateway.Network
	res *netResources
}

// netResources are what serving one network's calls opened: its nodes
// and their pool, its embedded devnet, its network.Network.
type netResources struct {
	table   portico.Table // the family table, counted by view
	view    *networkView
	pool    *upstream.Pool
	served  *network.Network
	devnet  families.Devnet // nil when it has none
	closers []io.Closer     // in the order opened; closed in reverse
	// sends and sendNodes count the broadcast sends and the nodes they
	// went to, for the admin API.
	sends, sendNodes atomic.Uint64
	once             sync.Once
	err              error
}

// close closes the network and what it opened, once.
func (r *netResources) close() error {
	r.once.Do(func() {
		if r.served != nil {
			r.served.Close()
		}
		var errs []error
		for i := len(r.closers) - 1; i >= 0; i-- {
			errs = append(errs, r.closers[i].Close())
		}
		r.err = errors.Join(errs...)
	})
	return r.err
}

// track counts r among the resources Close closes.
func (m *Server) track(r *netResources) {
	m.liveMu.Lock()
	defer m.liveMu.Unlock()
	if m.live == nil {
		m.live = map[*netResources]struct{}{}
	}
	m.live[r] = struct{}{}
}

// retire closes r once idle is closed, unless Close closed it first.
func (m *Server) retire(name string, r *netResources, idle <-chan struct{}) {
	m.retiring.Go(func() {
		select {
		case <-idle:
		case <-m.closing:
			return // Close closes it
		}
		m.liveMu.Lock()
		_, live := m.live[r]
		delete(m.live, r)
		m.liveMu.Unlock()
		if !live {
			return // Close has it
		}
		if err := r.close(); err != nil {
			m.log.Warn("reload: closing a replaced network's nodes failed", "network", name, "err", err)
			return
		}
		m.log.Info("reload: a replaced network's nodes closed: their last call and subscription ended", "network", name)
	})
}

// errNoConfigFile is Reload's answer when serve runs without --config.
var errNoConfigFile = errors.New("reload: serve was started without --config: there is no file to read again")

// Reload reads the config file again and serves it: see the file's
// comment. It returns nil once the new config is served, or why it was
// refused, the running config staying as it was. Reloads run one at a
// time.
func (m *Server) Reload(ctx context.Context) error {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	if m.closed {
		return errors.New("reload: portico is shutting down")
	}
	cur := m.cur.Load()
	cfg, err := m.nextConfig(cur)
	if err != nil {
		return err
	}
	next, ch, err := m.buildNext(ctx, cur, &cfg)
	if err != nil {
		return err
	}
	if err := m.swap(ctx, cur, next, ch.built); err != nil {
		return err
	}
	m.announce(next, ch)
	return nil
}

// nextConfig reads the config file again and checks it: every check of a
// start, then that it changes nothing only a restart changes, and no
// network served by its embedded devnet beyond its gateway side.
func (m *Server) nextConfig(cur *servedConfig) (config.Config, error) {
	if m.ConfigPath == "" {
		return config.Config{}, errNoConfigFile
	}
	cfg, err := config.Load(m.ConfigPath)
	if err != nil {
		return config.Config{}, err
	}
	if m.Overrides != nil {
		m.Overrides(&cfg)
	}
	if m.devToken && cfg.Admin.Token == "" {
		cfg.Admin.Token = cur.cfg.Admin.Token // the dev admin token, made at start
	}
	if err := CheckConfig(&cfg); err != nil {
		return config.Config{}, err
	}
	if err := reloadable(&cur.cfg, &cfg); err != nil {
		return config.Config{}, err
	}
	for i := range cfg.Networks {
		n := &cfg.Networks[i]
		if old := cur.byName[n.Name]; old != nil && !sameServed(&old.cfg, n) && embeddedDevnet(&old.cfg) && embeddedDevnet(n) {
			return config.Config{}, fmt.Errorf("config: networks[%d]: served by its embedded devnet, which a reload does not restart: only hosts, methods, enable, costs, default_cost and notification_costs reload (%w)", i, gateway.ErrNotReloadable)
		}
	}
	return cfg, nil
}

// changes are what a reload does to the networks, by name, and the
// resources it built.
type changes struct {
	added, rebuilt, kept, removed []string
	built                         []*netResources
}

// closeBuilt closes what a refused reload built.
func (ch *changes) closeBuilt() {
	for _, r := range ch.built {
		_ = r.close()
	}
}

// buildNext builds the next networks off to the side: a network whose
// nodes stay keeps its resources with a new method table, the others are
// built anew. On an error, what it built is closed.
func (m *Server) buildNext(ctx context.Context, cur *servedConfig, cfg *config.Config) (*servedConfig, *changes, error) {
	next := &servedConfig{cfg: *cfg, byName: map[string]*servedNetwork{}}
	ch := &changes{}
	for i := range cfg.Networks {
		n := &cfg.Networks[i]
		old := cur.byName[n.Name]
		if old != nil && sameServed(&old.cfg, n) {
			methods, err := gateway.NewMethods(old.res.table, methodsConfig(n))
			if err != nil {
				ch.closeBuilt()
				return nil, nil, fmt.Errorf("config: networks[%d].%w", i, err)
			}
			next.add(&servedNetwork{cfg: *n, res: old.res,
				gw: &gateway.Network{Name: n.Name, Hosts: n.HostNames(), Methods: methods, Served: old.res.served}})
			ch.kept = append(ch.kept, n.Name)
			continue
		}
		sn, err := m.network(ctx, n, m.netMeter, cfg.Cache.CoalesceDisabled)
		if err != nil {
			ch.closeBuilt()
			return nil, nil, fmt.Errorf("config: networks[%d] (%s): %w", i, n.Name, err)
		}
		ch.built = append(ch.built, sn.res)
		next.add(sn)
		if old == nil {
			ch.added = append(ch.added, n.Name)
		} else {
			ch.rebuilt = append(ch.rebuilt, n.Name)
		}
	}
	for _, n := range cur.nets {
		if next.byName[n.cfg.Name] == nil {
			ch.removed = append(ch.removed, n.cfg.Name)
		}
	}
	return next, ch, nil
}

// bindNew binds the own listeners of the networks that get one now: a
// network added with a listener of its own; a listener is never closed by
// a reload (a removed network's answers -32048). They are bound before the
// swap, so that an address in use refuses the reload, and served after
// it, when the network has its name.
func (m *Server) bindNew(cfg *config.Config) (map[string]net.Listener, error) {
	lns := map[string]net.Listener{}
	for i, n := range cfg.Networks {
		if _, open := m.ownListeners[n.Name]; open || n.Listen == "" || n.Listen == "off" {
			continue
		}
		ln, err := net.Listen("tcp", n.Listen)
		if err != nil {
			closeListeners(lns)
			return nil, fmt.Errorf("config: networks[%d].listen: %w", i, err)
		}
		lns[n.Name] = ln
	}
	return lns, nil
}

func closeListeners(lns map[string]net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// swap binds the new listeners, imports the keys and has the gateway
// serve next at once; then it serves the new listeners, publishes next
// and retires what was replaced. Refused, it closes what the reload
// built and opened.
func (m *Server) swap(ctx context.Context, cur, next *servedConfig, built []*netResources) error {
	cfg := &next.cfg
	fail := func(err error) error {
		(&changes{built: built}).closeBuilt()
		return err
	}
	lns, err := m.bindNew(cfg)
	if err != nil {
		return fail(err)
	}
	// Keys are imported last before the swap (what could refuse the
	// reload is behind), so that a key the new config adds works with
	// its networks from the first call.
	if len(cfg.Keys) > 0 {
		if _, err := ImportKeys(ctx, cfg, m.Store); err != nil {
			closeListeners(lns)
			return fail(fmt.Errorf("config: %w", err))
		}
	}
	var gwNets []*gateway.Network
	for _, n := range next.nets {
		gwNets = append(gwNets, n.gw)
	}
	retired, err := m.gw.Reload(gateway.Reload{Networks: gwNets, Limits: cfg.Limits, CacheHitDiscount: cfg.Cache.HitDiscountPercent})
	if err != nil {
		closeListeners(lns)
		return fail(err)
	}
	for name, ln := range lns {
		m.serve(ln, m.gw.NetworkHandler(name))
		m.ownListeners[name] = ln.Addr().String()
	}
	for _, r := range built {
		m.track(r)
	}
	m.cur.Store(next)
	for _, n := range next.nets {
		// A kept network's default_cost prices its verifications' node
		// calls from now on (docs/metering.md).
		n.res.served.SetVerifyCallCost(verifyCallCost(n.res.table, &n.cfg))
	}
	byServed := map[*network.Network]*servedNetwork{}
	for _, n := range cur.nets {
		byServed[n.res.served] = n
	}
	for _, r := range retired {
		if old := byServed[r.Served]; old != nil {
			m.retire(old.cfg.Name, old.res, r.Idle)
		}
	}
	return nil
}

// announce tells of a reload done: the dashboard's links follow the
// served networks, a network the reload added gets its ready line, as at
// start, and the log says what changed.
func (m *Server) announce(next *servedConfig, ch *changes) {
	eps := make([]Endpoint, 0, len(next.cfg.Networks))
	for _, n := range next.cfg.Networks {
		eps = append(eps, Endpoint{Name: n.Name, Family: n.Family, Host: n.HostNames()[0], Addr: m.ownListeners[n.Name]})
	}
	m.dash.publish(m.Shared, eps)
	key := m.Key
	if key == "" {
		key = "<API_KEY>"
	}
	for _, ep := range eps {
		if slices.Contains(ch.added, ep.Name) {
			m.printEndpoint(ep, key)
		}
	}
	m.log.Info("config reloaded", "file", m.ConfigPath, "added", ch.added, "rebuilt", ch.rebuilt, "kept", ch.kept, "removed", ch.removed)
}

// reloadFromAdmin is the admin API's POST /admin/v1/reload.
// The reload runs to its end even if the caller leaves.
func (m *Server) reloadFromAdmin(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reloadTimeout)
	defer cancel()
	err := m.Reload(ctx)
	if err != nil {
		m.log.Error("config reload refused; the running config stays", "via", "admin", "err", err)
	}
	return err
}

// ReloadOnHangup reloads the config on each SIGHUP until ctx ends or
// stop is called; a refused reload is logged and changes nothing.
func (m *Server) ReloadOnHangup(ctx context.Context) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-hup:
				rctx, cancel := context.WithTimeout(ctx, reloadTimeout)
				if err := m.Reload(rctx); err != nil {
					m.log.Error("config reload refused; the running config stays", "via", "SIGHUP", "err", err)
				}
				cancel()
			}
		}
	})
	return func() {
		signal.Stop(hup)
		close(done)
		wg.Wait()
	}
}

// reloadTimeout bounds the building of a reload's networks (new nodes
// must answer, a devnet must start).
const reloadTimeout = time.Minute

// sameServed reports whether two configs of a network want the same
// nodes and network.Network: they differ at most in what the gateway
// applies (hosts, listener, methods and costs).
func sameServed(a, b *config.Network) bool {
	gatewaySide := func(n config.Network) config.Network {
		n.Hosts, n.Listen, n.Methods, n.Enable = nil, "", nil, nil
		n.Costs, n.DefaultCost, n.NotificationCosts = nil, 0, nil
		return n
	}
	return reflect.DeepEqual(gatewaySide(*a), gatewaySide(*b))
}

// embeddedDevnet reports whether the network is served by its embedded
// devnet.
func embeddedDevnet(n *config.Network) bool { return len(n.Upstreams) == 0 && !n.Devnet.Disabled }

// reloadable refuses a new config that changes what only a restart
// changes, naming the first such field: everything but the networks
// (apart from an existing network's own listener), the keys, the limits a
// call or a new connection is held to, and cache.hit_discount_percent.
func reloadable(was, now *config.Config) error {
	fixed := func(c config.Config) config.Config {
		c.Keys, c.Networks, c.Cache.HitDiscountPercent = nil, nil, 0
		c.Limits = gateway.ServerLimits(c.Limits)
		return c
	}
	if was.Limits.MaxResultBytes != now.Limits.MaxResultBytes {
		// Every node reads its answers under it (upstream.Options).
		return fmt.Errorf("config: limits.max_result_bytes: %w", gateway.ErrNotReloadable)
	}
	a, b := fixed(*was), fixed(*now)
	if field := firstDiff("", reflect.ValueOf(a), reflect.ValueOf(b)); field != "" {
		return fmt.Errorf("config: %s: %w", field, gateway.ErrNotReloadable)
	}
	for i, n := range now.Networks {
		old := slices.IndexFunc(was.Networks, func(o config.Network) bool { return o.Name == n.Name })
		if old >= 0 && was.Networks[old].Listen != n.Listen {
			return fmt.Errorf("config: networks[%d].listen: %w", i, gateway.ErrNotReloadable)
		}
	}
	return nil
}

// firstDiff returns the YAML path of the first field that differs
// between a and b, "" when none does.
func firstDiff(path string, a, b reflect.Value) string {
	if a.Kind() != reflect.Struct {
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			return path
		}
		return ""
	}
	for i := range a.NumField() {
		f := a.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := name
		if path != "" {
			p = path + "." + name
		}
		if d := firstDiff(p, a.Field(i), b.Field(i)); d != "" {
			return d
		}
	}
	return ""
}

// Pool returns the node pool of the network served under name now, nil
// when there is none.
func (m *Server) Pool(name string) *upstream.Pool {
	if n := m.cur.Load().byName[name]; n != nil {
		return n.res.pool
	}
	return nil
}

// FromHeads is how many calls the network served under name now has
// answered from its heads, which no node saw (the admin API's nodes
// answer shows it).
func (m *Server) FromHeads(name string) uint64 {
	if n := m.cur.Load().byName[name]; n != nil && n.res.view != nil {
		return n.res.view.fromHeads.Load()
	}
	return 0
}

// Tracer is the tracer of the server's spans, nil when tracing is off.
func (m *Server) Tracer() trace.Tracer { return m.tracer }

// Metrics are the server's metrics, nil when metrics.disabled.
func (m *Server) Metrics() *metrics.Metrics { return m.metrics }

// DashboardNetworks are the networks' endpoints as the dashboard shows
// them, nil without a dashboard.
func (m *Server) DashboardNetworks() []dashboard.Network {
	if m.dash == nil {
		return nil
	}
	return m.dash.get()
}
