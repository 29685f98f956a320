package jsonrpc

import (
	"bytes"
	"context"
	"slices"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// Subscriptions are part of the server core, not of a transport: a method
// that starts one registers a Sub on the connection its call came over,
// returns the Sub's id as its result, and then sends notifications
// through the Sub. The Sub's notifications are held until the answer with
// its id has been queued, so a client always learns the id first; they go
// through the connection's one ordered queue, which bounds them; and the
// Sub ends when the client unsubscribes or the connection ends.

// ErrNoConnection is the error of a subscribe call that did not come over
// a connection that can carry notifications (a plain HTTP POST).
var ErrNoConnection = &Error{Code: CodeMethodNotFound, Message: "notifications not supported: subscribe over a WebSocket"}

// Sub is one subscription on one connection.
type Sub struct {
	id   jsontext.Value
	conn *Conn

	mu       sync.Mutex
	active   bool     // the answer with the id has been queued
	pending  [][]byte // notifications sent before that
	endLater bool     // End was called before that: end once they are out
	ended    bool
	done     chan struct{}
	onEnd    []func()
}

// subs is a connection's subscriptions. A connection holds few (at most
// MaxSubscriptions, 100 by default, most often one), and a list of them
// costs an idle subscriber's connection a few bytes where a map cost
// hundreds (docs/benchmarks.md, issue 17).
type subs struct {
	mu   sync.Mutex
	list []*Sub
}

// find returns the subscription with id, or nil. subs.mu is held.
func (ss *subs) find(id jsontext.Value) *Sub {
	for _, s := range ss.list {
		if bytes.Equal(s.id, id) {
			return s
		}
	}
	return nil
}

// Subscribe registers a subscription with id on the connection the call
// in ctx came over. It fails with ErrNoConnection outside a WebSocket
// message, and with a *portico.LimitError when the connection holds its
// limit.
func Subscribe(ctx context.Context, id jsontext.Value) (*Sub, error) {
	c := ConnFrom(ctx)
	if c == nil {
		return nil, ErrNoConnection
	}
	s := &Sub{id: id, conn: c, done: make(chan struct{})}
	c.subs.mu.Lock()
	if len(c.subs.list) >= c.limits.MaxSubscriptions {
		c.subs.mu.Unlock()
		return nil, &portico.LimitError{Limit: portico.LimitSubscriptions, Max: int64(c.limits.MaxSubscriptions)}
	}
	c.subs.list = append(c.subs.list, s)
	c.subs.mu.Unlock()
	c.OnClose(func() { s.end() })
	if !AfterAnswer(ctx, s.activate) {
		s.activate() // not inside a message: nothing to wait for
	}
	return s, nil
}

// Unsubscribe ends the subscription with id on the connection the call in
// ctx came over, and reports whether there was one.
func Unsubscribe(ctx context.Context, id jsontext.Value) bool {
	c := ConnFrom(ctx)
	if c == nil {
		return false
	}
	c.subs.mu.Lock()
	s := c.subs.find(id)
	c.subs.mu.Unlock()
	if s == nil {
		return false
	}
	s.end()
	return true
}

// ID returns the subscription's id.
func (s *Sub) ID() jsontext.Value { return s.id }

// Conn returns the connection the subscription lives on.
func (s *Sub) Conn() *Conn { return s.conn }

// Notify sends a notification message (the whole JSON-RPC message, as the
// family writes it). It reports false once the subscription has ended or
// the connection refused it (its client does not read; see Conn.Notify).
// msg must not be changed after.
func (s *Sub) Notify(msg []byte) bool {
	s.mu.Lock()
	switch {
	case s.ended:
		s.mu.Unlock()
		return false
	case !s.active:
		if len(s.pending) >= s.conn.limits.MaxQueue {
			s.mu.Unlock()
			s.conn.Close(1008, ReasonSlowReader)
			return false
		}
		s.pending = append(s.pending, msg)
		s.mu.Unlock()
		return true
	}
	s.mu.Unlock()
	return s.conn.Notify(msg)
}

// NotifySpliced sends the notification head + s's id + tail, as Notify
// does, without putting it together before it is written (Conn.NotifySpliced):
// a notification for many clients is encoded once. head and tail must not
// be changed after.
func (s *Sub) NotifySpliced(head, tail []byte) bool {
	s.mu.Lock()
	if s.active && !s.ended {
		s.mu.Unlock()
		return s.conn.NotifySpliced(head, s.id, tail)
	}
	s.mu.Unlock()
	msg := make([]byte, 0, len(head)+len(s.id)+len(tail))
	return s.Notify(append(append(append(msg, head...), s.id...), tail...))
}

// NotifyLast sends the subscription's last notification and ends it (a
// subscription that ends itself: a signature's, a transaction's final
// status), as Notify then End would, but ended first: a client that
// answers the notification with an unsubscribe finds it ended (false),
// however soon the notification reaches it. Before the id is answered it
// waits with the others, and the subscription ends once they go out.
func (s *Sub) NotifyLast(msg []byte) bool {
	s.mu.Lock()
	switch {
	case s.ended:
		s.mu.Unlock()
		return false
	case !s.active:
		s.pending, s.endLater = append(s.pending, msg), true
		s.mu.Unlock()
		return true
	}
	s.mu.Unlock()
	return s.end() && s.conn.Notify(msg)
}

// NotifySplicedLast is NotifyLast of head + s's id + tail, encoded once
// for many clients as NotifySpliced is.
func (s *Sub) NotifySplicedLast(head, tail []byte) bool {
	s.mu.Lock()
	if s.active && !s.ended {
		s.mu.Unlock()
		return s.end() && s.conn.NotifySpliced(head, s.id, tail)
	}
	s.mu.Unlock()
	msg := make([]byte, 0, len(head)+len(s.id)+len(tail))
	return s.NotifyLast(append(append(append(msg, head...), s.id...), tail...))
}

// activate releases the notifications held until the id was answered.
func (s *Sub) activate() {
	s.mu.Lock()
	if s.active || s.ended {
		s.mu.Unlock()
		return
	}
	pending, endLater := s.pending, s.endLater
	s.pending, s.active = nil, true
	s.mu.Unlock()
	if endLater {
		s.end() // first: see NotifyLast
	}
	for _, m := range pending {
		if !s.conn.Notify(m) {
			break
		}
	}
}

// Done is closed when the subscription has ended.
func (s *Sub) Done() <-chan struct{} { return s.done }

// OnEnd registers f to run once the subscription ends (right away when it
// already has): its producer stops with it.
func (s *Sub) OnEnd(f func()) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		f()
		return
	}
	s.onEnd = append(s.onEnd, f)
	s.mu.Unlock()
}

// End ends the subscription, as an unsubscribe does (a signature
// subscription ends itself after its one notification). Notifications
// sent before it still go out, after the answer with the id.
func (s *Sub) End() {
	s.mu.Lock()
	if !s.active && !s.ended {
		s.endLater = true
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.end()
}

// end ends the subscription and reports whether this call did.
func (s *Sub) end() bool {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return false
	}
	s.ended = true
	s.pending = nil
	funcs := s.onEnd
	s.onEnd = nil
	s.mu.Unlock()
	s.conn.subs.mu.Lock()
	if i := slices.Index(s.conn.subs.list, s); i >= 0 {
		s.conn.subs.list = slices.Delete(s.conn.subs.list, i, i+1)
	}
	s.conn.subs.mu.Unlock()
	close(s.done)
	for _, f := range funcs {
		f()
	}
	return true
}

// Subscriptions returns how many subscriptions the connection holds.
func (c *Conn) Subscriptions() int {
	c.subs.mu.Lock()
	defer c.subs.mu.Unlock()
	return len(c.subs.list)
}
