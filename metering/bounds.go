package metering

import (
	"context"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// Bounds holds a key to what it may run at once and per second: its own
// rules' calls in flight and per second (apikey.Rules), and the instance's
// limits on its WebSocket connections and subscriptions. Calls (in this
// process) and SharedBounds (in Redis, across the instances that share it)
// are the two; the gateway asks through this interface only.
type Bounds interface {
	// Calls admits n calls of the key as one unit under its rules'
	// bounds, or refuses them all with a *portico.QuotaError that says
	// when to retry. release ends the calls; it is called once.
	Calls(ctx context.Context, id apikey.Identity, n int) (release func(), err error)
	// Hold takes one of the key's slots of kind while fewer than max are
	// held (max 0: no bound), or refuses with a *portico.LimitError.
	// release gives it back; it is called once.
	Hold(ctx context.Context, kind Slot, id apikey.Identity, max int) (release func(), err error)
}

var (
	_ Bounds = (*Calls)(nil)
	_ Bounds = (*SharedBounds)(nil)
)

// Slot is a kind of thing a key holds for a while and has a bound on.
type Slot int

// Kinds of Slot.
const (
	// WebSockets are a key's open WebSocket connections
	// (limits.max_ws_connections_per_key).
	WebSockets Slot = iota + 1
	// Subscriptions are a key's open subscriptions over every network
	// (limits.max_subscriptions_per_key).
	Subscriptions
)

// limit is the portico.LimitError name of the slot's bound.
func (s Slot) limit() string {
	if s == WebSockets {
		return portico.LimitWSPerKey
	}
	return portico.LimitKeySubscriptions
}

// name is the slot's part of its Redis key.
func (s Slot) name() string {
	if s == WebSockets {
		return "ws"
	}
	return "subs"
}

// refusal is the error of a full slot.
func (s Slot) refusal(max int) error {
	return &portico.LimitError{Limit: s.limit(), Max: int64(max)}
}

// concurrentRefusal and requestsRefusal are the errors of the key's own
// bounds on calls.
func concurrentRefusal(id apikey.Identity, n int) error {
	return &portico.QuotaError{Limit: portico.QuotaConcurrent, Key: id.Name, Cost: int64(n),
		Rate: int64(id.Rules.MaxConcurrent), RetryAfter: time.Second}
}

func requestsRefusal(id apikey.Identity, n int, wait time.Duration) error {
	return &portico.QuotaError{Limit: portico.QuotaRequests, Key: id.Name, Cost: int64(n),
		Rate: int64(id.Rules.RequestsPerSecond), RetryAfter: wait}
}

func nothing() {}
