package metering

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/porticohq/portico/metering/apikey"
)

// Calls holds the bounds of Bounds in this process (issue 26,
// docs/keys.md): for each limited key, its calls in flight and its bucket
// of calls per second, and each key's WebSocket connections and
// subscriptions. The zero value is ready. With several instances, each
// holds its own: SharedBounds keeps them in Redis instead, and falls back
// on one of these when Redis does not answer.
type Calls struct {
	mu    sync.Mutex
	keys  map[string]*keyCalls
	slots map[slotOf]int
	// now is the clock; time.Now when nil.
	now func() time.Time
}

// slotOf names a key's slots of one kind.
type slotOf struct {
	kind Slot
	name string
}

// keyCalls is one limited key's calls in flight and bucket.
type keyCalls struct {
	inFlight int
	// rated keys keep their bucket (one per limited key in the store);
	// others are forgotten when nothing is in flight.
	rated  bool
	tokens float64
	last   time.Time
}

// Calls implements Bounds: Take at the time of now.
func (k *Calls) Calls(_ context.Context, id apikey.Identity, n int) (func(), error) {
	if id.Rules == nil || !id.Rules.Limited() {
		return nothing, nil
	}
	now := time.Now()
	if k.now != nil {
		now = k.now()
	}
	return k.take(id, n, now)
}

// Take admits n calls of the key named name under its rules' bounds, or
// refuses them all with a *portico.QuotaError that says when to retry.
// release ends the calls.
func (k *Calls) Take(name string, r *apikey.Rules, n int, now time.Time) (release func(), err error) {
	return k.take(apikey.Identity{Name: name, Rules: r}, n, now)
}

func (k *Calls) take(id apikey.Identity, n int, now time.Time) (release func(), err error) {
	r, name := id.Rules, id.Name
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		k.keys = map[string]*keyCalls{}
	}
	s := k.keys[name]
	if s == nil {
		s = &keyCalls{rated: r.RequestsPerSecond > 0, tokens: float64(r.RequestsPerSecond), last: now}
		k.keys[name] = s
	}
	if r.MaxConcurrent > 0 && s.inFlight+n > r.MaxConcurrent {
		k.forget(name, s)
		return nil, concurrentRefusal(id, n)
	}
	if rps := float64(r.RequestsPerSecond); rps > 0 {
		// A bucket of one second's calls, refilled continuously.
		s.tokens = math.Min(rps, s.tokens+now.Sub(s.last).Seconds()*rps)
		s.last = now
		if s.tokens < float64(n) {
			wait := time.Duration((float64(n) - s.tokens) / rps * float64(time.Second))
			if float64(n) > rps {
				wait = time.Second // more calls than one second holds: never fits
			}
			k.forget(name, s)
			return nil, requestsRefusal(id, n, wait)
		}
		s.tokens -= float64(n)
	}
	s.inFlight += n
	return func() {
		k.mu.Lock()
		s.inFlight -= n
		k.forget(name, s)
		k.mu.Unlock()
	}, nil
}

// forget drops the state of a key without a bucket and with nothing in
// flight; it is made again when needed. Called with mu held.
func (k *Calls) forget(name string, s *keyCalls) {
	if s.inFlight == 0 && !s.rated {
		delete(k.keys, name)
	}
}

// Hold implements Bounds. A key's count is kept only while it holds a
// slot, so the memory follows what is open.
func (k *Calls) Hold(_ context.Context, kind Slot, id apikey.Identity, max int) (func(), error) {
	at := slotOf{kind, id.Name}
	k.mu.Lock()
	defer k.mu.Unlock()
	if max > 0 && k.slots[at] >= max {
		return nil, kind.refusal(max)
	}
	if k.slots == nil {
		k.slots = map[slotOf]int{}
	}
	k.slots[at]++
	var once sync.Once
	return func() {
		once.Do(func() {
			k.mu.Lock()
			if k.slots[at]--; k.slots[at] <= 0 {
				delete(k.slots, at)
			}
			k.mu.Unlock()
		})
	}, nil
}
