package gateway

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/network"
)

// This file is what the gateway serves at one moment and how a config
// reload replaces it. The networks (their hosts, method tables and costs,
// and the network.Network that serves their calls) and the limits a call
// or a new connection is held to are one immutable state behind an atomic
// pointer: every request reads it once, at its start, and a reload builds
// the next state off to the side and publishes it in one store. A request
// already in flight finishes on the state it started with.
//
// A network.Network that the next state no longer serves (its network was
// removed, or its nodes changed and cmd/portico built a new one) is
// retired: Reload hands it back with a channel that is closed once its
// last call in flight has returned and its last subscription has ended,
// and its owner closes it then. Subscriptions opened on it keep their
// nodes until their clients end them; new calls and subscriptions of a
// WebSocket go to the network of the new state, since each message reads
// the state anew.

// state is what the gateway serves at one moment; never changed once
// published.
type state struct {
	byHost map[string]*Network
	byName map[string]*Network
	limits Limits
	hitOff int // percent of a hit's cost given back
}

// newState indexes nets. A Network whose Served was served by prev shares
// its count of what is in flight, so that the network.Network is retired
// only when no state serves it any more.
func newState(nets []*Network, limits Limits, hitDiscount int, prev *state) *state {
	s := &state{byHost: map[string]*Network{}, byName: map[string]*Network{}, limits: limits,
		hitOff: min(max(hitDiscount, 0), 100)}
	uses := map[*network.Network]*inUse{}
	if prev != nil {
		for _, n := range prev.byName {
			if n.Served != nil {
				uses[n.Served] = n.use
			}
		}
	}
	for _, n := range nets {
		switch u := uses[n.Served]; {
		case n.Served != nil && u != nil:
			n.use = u
		case n.use == nil:
			n.use = newInUse()
		}
		if n.Served != nil {
			uses[n.Served] = n.use
		}
		s.byName[n.Name] = n
		for _, h := range n.Hosts {
			s.byHost[strings.ToLower(h)] = n
		}
	}
	return s
}

// inUse counts the calls in flight on a network.Network and the
// subscriptions open on it, for its retirement.
type inUse struct {
	n       atomic.Int64
	retired atomic.Bool
	once    sync.Once
	idle    chan struct{} // closed once retired and nothing is in use
}

func newInUse() *inUse { return &inUse{idle: make(chan struct{})} }

func (u *inUse) acquire() { u.n.Add(1) }

func (u *inUse) release() {
	if u.n.Add(-1) == 0 && u.retired.Load() {
		u.once.Do(func() { close(u.idle) })
	}
}

// retire marks the network as served by no state: idle is closed once
// nothing is in use.
func (u *inUse) retire() {
	u.retired.Store(true)
	if u.n.Load() == 0 {
		u.once.Do(func() { close(u.idle) })
	}
}

// current returns the state served now.
func (g *Gateway) current() *state { return g.cur.Load() }

// acquire finds a network in the current state with find and counts a
// call in flight on it; the caller releases it (n.use.release) when done.
// It returns nil when find finds none. A network is counted against the
// state it was found in, read again after the count: so a reload that
// published a new state and retired the network in between is seen, and
// the call goes to the new state instead.
func (g *Gateway) acquire(find func(*state) *Network) (*state, *Network) {
	for {
		s := g.cur.Load()
		n := find(s)
		if n == nil {
			return s, nil
		}
		n.use.acquire()
		if g.cur.Load() == s {
			return s, n
		}
		n.use.release()
	}
}

// Reload is what a config reload changes in a running gateway.
type Reload struct {
	// Networks replace the networks served. A Network may reuse the
	// network.Network (Served) of one served now: it keeps its cache,
	// its heads and its subscriptions. Names and hosts must be unique.
	Networks []*Network
	// Limits replace the limits: new calls and new connections are held
	// to them. The limits the servers were made with (ServerLimits) must
	// not change.
	Limits Limits
	// CacheHitDiscount replaces Config.CacheHitDiscount.
	CacheHitDiscount int
}

// Retired is a network.Network no network of the gateway serves any
// more: Idle is closed once its last call in flight has returned and its
// last subscription has ended, and then it may be closed.
type Retired struct {
	Served *network.Network
	Idle   <-chan struct{}
}

// ErrNotReloadable wraps the refusal of a reload that changes what only
// a restart can change; the message names the config field.
var ErrNotReloadable = errors.New("not reloadable: restart to change it")

// ServerLimits are the limits that NewServer builds into each server
// (the body bound, the timeouts); a Reload must keep them.
func ServerLimits(l Limits) Limits {
	return Limits{MaxBodyBytes: l.MaxBodyBytes, ReadTimeout: l.ReadTimeout, WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout}
}

// Reload publishes a new state: calls that start from now on use its
// networks and limits, and connections accepted from now on its
// connection limits. Calls in flight finish on the state they started
// with. The WebSocket connections of a network that is no longer served
// are closed (1001, going away); the others stay open, and their next
// message is served by the network of the same name in the new state.
// It returns what is retired, for its owner to close once idle. A reload
// that changes the servers' own limits is refused (ErrNotReloadable) and
// changes nothing.
func (g *Gateway) Reload(r Reload) ([]Retired, error) {
	if err := checkServerLimits(g.serverLimits, r.Limits); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	hosts := map[string]bool{}
	for _, n := range r.Networks {
		if names[n.Name] {
			return nil, fmt.Errorf("network %q is named twice", n.Name)
		}
		names[n.Name] = true
		for _, h := range n.Hosts {
			if hosts[strings.ToLower(h)] {
				return nil, fmt.Errorf("host %q is named twice", h)
			}
			hosts[strings.ToLower(h)] = true
		}
	}
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	prev := g.cur.Load()
	next := newState(r.Networks, r.Limits, r.CacheHitDiscount, prev)
	g.applyLimits(r.Limits)
	g.cur.Store(next)

	kept := map[*inUse]bool{}
	for _, n := range next.byName {
		kept[n.use] = true
	}
	var retired []Retired
	seen := map[*inUse]bool{}
	for _, n := range prev.byName {
		if kept[n.use] || seen[n.use] {
			continue
		}
		seen[n.use] = true
		n.use.retire()
		if n.Served != nil {
			retired = append(retired, Retired{Served: n.Served, Idle: n.use.idle})
		}
	}
	g.closeRemoved(next)
	return retired, nil
}

// checkServerLimits refuses a change of the limits built into the
// servers, naming the config field.
func checkServerLimits(was, now Limits) error {
	for _, f := range []struct {
		field    string
		was, now int64
	}{
		{"limits.max_body_bytes", was.MaxBodyBytes, now.MaxBodyBytes},
		{"limits.read_timeout", int64(was.ReadTimeout), int64(now.ReadTimeout)},
		{"limits.write_timeout", int64(was.WriteTimeout), int64(now.WriteTimeout)},
		{"limits.idle_timeout", int64(was.IdleTimeout), int64(now.IdleTimeout)},
	} {
		if f.was != f.now {
			return fmt.Errorf("config: %s: %w", f.field, ErrNotReloadable)
		}
	}
	return nil
}

// applyLimits sets the limits that live outside the state: the
// connection slots and the memory budgets.
func (g *Gateway) applyLimits(l Limits) {
	g.slots.mu.Lock()
	g.slots.max, g.slots.perClient, g.slots.headerTimeout = l.MaxConnections, l.MaxConnectionsPerIP, l.HeaderTimeout
	g.slots.mu.Unlock()
	g.mem.SetLimit(processMemory(l))
	g.keyMem.SetLimit(l.KeyMemoryBytes)
}

// processMemory is the process's memory bound under l.
func processMemory(l Limits) int64 {
	if l.MemoryBytes > 0 {
		return l.MemoryBytes
	}
	return membudget.DefaultProcessLimit()
}

// closeRemoved closes the WebSocket connections of networks s does not
// serve.
func (g *Gateway) closeRemoved(s *state) {
	open, _ := g.conns.Open()
	for c, sock := range open {
		if s.byName[sock.network] == nil {
			go c.GoAway("network removed from the config")
		}
	}
}
