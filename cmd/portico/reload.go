package main

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
	"syscall"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/gateway"
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
// once published in Main.cur.
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
	once    sync.Once
	err     error
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
func (m *Main) track(r *netResources) {
	m.liveMu.Lock()
	defer m.liveMu.Unlock()
	if m.live == nil {
		m.live = map[*netResources]struct{}{}
	}
	m.live[r] = struct{}{}
}

// retire closes r once idle is closed, unless Close closed it first.
func (m *Main) retire(name string, r *netResources, idle <-chan struct{}) {
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
func (m *Main) Reload(ctx context.Context) error {
	m.reloadMu.Lock()
	defer m.reloadMu.Unlock()
	if m.closed {
		return errors.New("reload: portico is shutting down")
	}
	if m.ConfigPath == "" {
		return errNoConfigFile
	}
	cfg, err := config.Load(m.ConfigPath)
	if err != nil {
		return err
	}
	if m.Overrides != nil {
		m.Overrides(&cfg)
	}
	cur := m.cur.Load()
	if m.devToken && cfg.Admin.Token == "" {
		cfg.Admin.Token = cur.cfg.Admin.Token // the dev admin token, made at start
	}
	if err := checkConfig(&cfg); err != nil {
		return err
	}
	if err := reloadable(&cur.cfg, &cfg); err != nil {
		return err
	}
	for i := range cfg.Networks {
		n := &cfg.Networks[i]
		if old := cur.byName[n.Name]; old != nil && !sameServed(&old.cfg, n) && embeddedDevnet(&old.cfg) && embeddedDevnet(n) {
			return fmt.Errorf("config: networks[%d]: served by its embedded devnet, which a reload does not restart: only hosts, methods, enable, costs, default_cost and notification_costs reload (%w)", i, gateway.ErrNotReloadable)
		}
	}

	// Build the next networks off to the side.
	next := &servedConfig{cfg: cfg, byName: map[string]*servedNetwork{}}
	var built []*netResources
	fail := func(err error) error {
		for _, r := range built {
			_ = r.close()
		}
		return err
	}
	var added, rebuilt, kept, removed []string
	for i := range cfg.Networks {
		n := &cfg.Networks[i]
		old := cur.byName[n.Name]
		if old != nil && sameServed(&old.cfg, n) {
			methods, err := gateway.NewMethods(old.res.table, methodsConfig(n))
			if err != nil {
				return fail(fmt.Errorf("config: networks[%d].%w", i, err))
			}
			next.add(&servedNetwork{cfg: *n, res: old.res,
				gw: &gateway.Network{Name: n.Name, Hosts: n.HostNames(), Methods: methods, Served: old.res.served}})
			kept = append(kept, n.Name)
			continue
		}
		sn, err := m.network(ctx, n, m.netMeter, cfg.Cache.CoalesceDisabled)
		if err != nil {
			return fail(fmt.Errorf("config: networks[%d] (%s): %w", i, n.Name, err))
		}
		built = append(built, sn.res)
		next.add(sn)
		if old == nil {
			added = append(added, n.Name)
		} else {
			rebuilt = append(rebuilt, n.Name)
		}
	}
	for _, n := range cur.nets {
		if next.byName[n.cfg.Name] == nil {
			removed = append(removed, n.cfg.Name)
		}
	}
	// A network added with a listener of its own gets it now; a listener
	// is never closed by a reload (a removed network's answers -32048).
	var listen []int
	for i, n := range cfg.Networks {
		if _, open := m.ownListeners[n.Name]; !open && n.Listen != "" && n.Listen != "off" {
			listen = append(listen, i)
		}
	}
	var gwNets []*gateway.Network
	for _, n := range next.nets {
		gwNets = append(gwNets, n.gw)
	}
	// Bound before the swap, so that an address in use refuses the
	// reload; served after it, when the network has its name.
	lns := map[string]net.Listener{}
	for _, i := range listen {
		ln, err := net.Listen("tcp", cfg.Networks[i].Listen)
		if err != nil {
			for _, ln := range lns {
				_ = ln.Close()
			}
			return fail(fmt.Errorf("config: networks[%d].listen: %w", i, err))
		}
		lns[cfg.Networks[i].Name] = ln
	}
	// Keys are imported last before the swap (what could refuse the
	// reload is behind), so that a key the new config adds works with
	// its networks from the first call.
	if len(cfg.Keys) > 0 {
		if _, err := importKeys(ctx, &cfg, m.Store); err != nil {
			for _, ln := range lns {
				_ = ln.Close()
			}
			return fail(fmt.Errorf("config: %w", err))
		}
	}
	retired, err := m.gw.Reload(gateway.Reload{Networks: gwNets, Limits: cfg.Limits, CacheHitDiscount: cfg.Cache.HitDiscountPercent})
	if err != nil {
		for _, ln := range lns {
			_ = ln.Close()
		}
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
	// The dashboard's links follow the served networks; a network the
	// reload added gets its ready line, as at start.
	eps := make([]Endpoint, 0, len(cfg.Networks))
	for _, n := range cfg.Networks {
		eps = append(eps, Endpoint{Name: n.Name, Family: n.Family, Host: n.HostNames()[0], Addr: m.ownListeners[n.Name]})
	}
	m.dash.publish(m.Shared, eps)
	key := m.Key
	if key == "" {
		key = "<API_KEY>"
	}
	for _, ep := range eps {
		if slices.Contains(added, ep.Name) {
			m.printEndpoint(ep, key)
		}
	}
	m.log.Info("config reloaded", "file", m.ConfigPath, "added", added, "rebuilt", rebuilt, "kept", kept, "removed", removed)
	return nil
}

// reloadFromAdmin is the admin API's POST /admin/v1/reload.
// The reload runs to its end even if the caller leaves.
func (m *Main) reloadFromAdmin(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reloadTimeout)
	defer cancel()
	err := m.Reload(ctx)
	if err != nil {
		m.log.Error("config reload refused; the running config stays", "via", "admin", "err", err)
	}
	return err
}

// reloadOnHangup reloads the config on each SIGHUP until ctx ends or
// stop is called; a refused reload is logged and changes nothing.
func (m *Main) reloadOnHangup(ctx context.Context) (stop func()) {
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

// pool returns the node pool of the network served under name now, nil
// when there is none.
func (m *Main) pool(name string) *upstream.Pool {
	if n := m.cur.Load().byName[name]; n != nil {
		return n.res.pool
	}
	return nil
}

// view returns the heads view of the network served under name now.
func (m *Main) view(name string) *networkView {
	if n := m.cur.Load().byName[name]; n != nil {
		return n.res.view
	}
	return nil
}
