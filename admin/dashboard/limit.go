package dashboard

import (
	"net/netip"
	"sync"
	"time"
)

// Limit is a rate per client address: Burst requests at once, then one
// more every Every.
type Limit struct {
	Burst int
	Every time.Duration
}

// limiter applies a Limit to each client address with the generic cell
// rate algorithm: one time per address, the moment its debt is paid. It
// tracks at most max addresses; an address whose debt is paid is as good
// as forgotten, so those go first when room is needed, then the one
// nearest to being paid.
type limiter struct {
	lim Limit
	max int
	mu  sync.Mutex
	tat map[netip.Addr]time.Time // theoretical arrival time
}

func newLimiter(lim Limit, max int) *limiter {
	return &limiter{lim: lim, max: max, tat: map[netip.Addr]time.Time{}}
}

// take spends one request of client's at now. When none is left it
// returns false and how long until one is.
func (l *limiter) take(client netip.Addr, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, ok := l.tat[client]
	if !ok {
		l.makeRoom(now)
	}
	if tat.Before(now) {
		tat = now
	}
	if wait := tat.Sub(now) - time.Duration(l.lim.Burst-1)*l.lim.Every; wait > 0 {
		return wait, false
	}
	l.tat[client] = tat.Add(l.lim.Every)
	return 0, true
}

// refund gives client back a request taken at now.
func (l *limiter) refund(client netip.Addr, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if tat, ok := l.tat[client]; ok {
		if tat = tat.Add(-l.lim.Every); tat.After(now) {
			l.tat[client] = tat
		} else {
			delete(l.tat, client)
		}
	}
}

// makeRoom frees an entry when max are held. Called with mu held.
func (l *limiter) makeRoom(now time.Time) {
	if len(l.tat) < l.max {
		return
	}
	var nearest netip.Addr
	var at time.Time
	for a, tat := range l.tat {
		if !tat.After(now) {
			delete(l.tat, a)
		} else if at.IsZero() || tat.Before(at) {
			nearest, at = a, tat
		}
	}
	if len(l.tat) >= l.max {
		delete(l.tat, nearest)
	}
}

// len is the number of addresses tracked.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.tat)
}
