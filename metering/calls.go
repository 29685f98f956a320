package metering

import (
	"math"
	"sync"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// Calls holds the bounds a key's own rules set on its calls (issue 26,
// docs/keys.md): how many may be in flight at once and how many may start
// per second, for each limited key, in this instance. The zero value is
// ready. Shared bounds over many instances (issue 37) belong here too.
type Calls struct {
	mu   sync.Mutex
	keys map[string]*keyCalls
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

// Take admits n calls of the key named name under its rules' bounds, or
// refuses them all with a *portico.QuotaError that says when to retry.
// release ends the calls.
func (k *Calls) Take(name string, r *apikey.Rules, n int, now time.Time) (release func(), err error) {
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
		return nil, &portico.QuotaError{Limit: portico.QuotaConcurrent, Key: name, Cost: int64(n), Rate: int64(r.MaxConcurrent), RetryAfter: time.Second}
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
			return nil, &portico.QuotaError{Limit: portico.QuotaRequests, Key: name, Cost: int64(n), Rate: int64(r.RequestsPerSecond), RetryAfter: wait}
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
