package jsonrpc

import "sync"

// Conns counts and tracks a server's open WebSocket connections, each with
// what its owner keeps of it (a T), so that a connection limit holds, the
// owner can walk its connections (a reload, a check of their keys) and a
// shutdown ends them all and waits for them. Both servers keep theirs in
// one: the devnets' and test nodes' Server, and the gateway. The zero
// value is ready to use.
//
// A connection's life is Reserve (a slot, before the upgrade is
// answered), Track (once it is accepted, until it is served), Untrack and
// Release; a refused upgrade only Releases.
type Conns[T any] struct {
	mu      sync.Mutex
	n       int // slots reserved, accepted or not
	m       map[*Conn]T
	closing bool
	wg      sync.WaitGroup // one per tracked connection
}

// Reserve takes a connection slot; false when max are taken or the set is
// shutting down. max is read at each call, so that a reload's limit holds
// for the next connection.
func (cs *Conns[T]) Reserve(max int) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closing || cs.n >= max {
		return false
	}
	cs.n++
	return true
}

// Release gives a slot back.
func (cs *Conns[T]) Release() {
	cs.mu.Lock()
	cs.n--
	cs.mu.Unlock()
}

// Track registers c with v until Untrack; false when the set is shutting
// down (then c is not tracked).
func (cs *Conns[T]) Track(c *Conn, v T) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.closing {
		return false
	}
	if cs.m == nil {
		cs.m = map[*Conn]T{}
	}
	cs.m[c] = v
	cs.wg.Add(1)
	return true
}

// Untrack forgets c, which Track registered, and returns what it was
// tracked with.
func (cs *Conns[T]) Untrack(c *Conn) T {
	cs.mu.Lock()
	v := cs.m[c]
	delete(cs.m, c)
	cs.mu.Unlock()
	cs.wg.Done()
	return v
}

// Open returns the connections open now, with what each was tracked
// with, and whether the set is still open (not shutting down).
func (cs *Conns[T]) Open() (map[*Conn]T, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	all := make(map[*Conn]T, len(cs.m))
	for c, v := range cs.m {
		all[c] = v
	}
	return all, !cs.closing
}

// Len returns how many connections are tracked.
func (cs *Conns[T]) Len() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.m)
}

// Shut refuses every later Reserve and Track and returns the connections
// open now, for their owner to end; Wait then waits for them to be
// untracked.
func (cs *Conns[T]) Shut() []*Conn {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.closing = true
	all := make([]*Conn, 0, len(cs.m))
	for c := range cs.m {
		all = append(all, c)
	}
	return all
}

// Wait waits until every tracked connection is untracked.
func (cs *Conns[T]) Wait() { cs.wg.Wait() }

// GoAway shuts the set, ends every open connection with 1001 (going away)
// and reason, and waits for them.
func (cs *Conns[T]) GoAway(reason string) {
	for _, c := range cs.Shut() {
		c.GoAway(reason)
	}
	cs.Wait()
}
