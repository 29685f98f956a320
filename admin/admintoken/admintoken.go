// Package admintoken checks the admin token, for the admin API's bearer and
// for the dashboard's sign-in form alike, so that both spend one budget of
// wrong guesses per client address.
//
// A check compares SHA-256 digests with crypto/subtle: its time does not
// depend on how much of the token a guess got right, nor on the token's
// length.
//
// Wrong tokens are slowed, never refused. The first Limits.Free wrong
// tokens from an address are answered at once; after that each check from
// the address waits Limits.Base after the address's last wrong token,
// doubling with each further one up to Limits.Max. The free wrong tokens of
// all addresses together have a ceiling (Limits.GlobalFree, then the same
// doubling for every check), so guessing from many addresses is slowed
// too; an address already slowed adds nothing to it, so one address
// cannot slow everyone. A
// check waits out its delay before the token is looked at, and the right
// token waits like a wrong one: were it answered sooner, a guesser could
// give up on any answer slower than that and guess at full speed. So the
// admin on an address someone else is guessing from is only slowed, by at
// most Limits.Max; nobody's failures can lock them out.
//
// A token is compared as it arrives, and a wrong one counts at once, so a
// burst of concurrent guesses is spread out as a sequence of them would
// be; the verdict is only told once the wait is over. The wait itself
// depends only on the wrong tokens that came before, never on the check's
// own token, and the right token does not slow the checks after it, so an
// admin's concurrent calls do not hold each other up. The addresses
// tracked are bounded (Limits.MaxClients).
package admintoken

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Limits shape the backoff of wrong tokens. docs/operations.md lists the
// defaults (a test keeps the table true).
type Limits struct {
	// Free is how many wrong tokens an address may send before its checks
	// wait.
	Free int
	// GlobalFree is how many free wrong tokens (those within an address's
	// Free) all addresses together may send before every check waits.
	GlobalFree int
	// Base is the first wait; each further wrong token doubles it.
	Base time.Duration
	// Max caps a wait: the longest the right token is ever held.
	Max time.Duration
	// Forget drops an address's wrong tokens (and the global count) this
	// long after the last one.
	Forget time.Duration
	// MaxClients bounds the addresses tracked; when it is reached, the
	// address whose last wrong token is oldest is forgotten.
	MaxClients int
}

// DefaultLimits are the limits a zero Limits takes. With them, one address
// sending wrong tokens one after another gets 8 answers in its first 10
// seconds and then one every 30 seconds (docs/operations.md).
var DefaultLimits = Limits{Free: 5, GlobalFree: 100, Base: time.Second, Max: 30 * time.Second,
	Forget: time.Hour, MaxClients: 4096}

// Config configures a Checker.
type Config struct {
	// Token is the admin token; required.
	Token string
	// Limits shape the backoff; the zero value means DefaultLimits.
	Limits Limits
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends; nil waits on a timer. Tests pass a
	// fake one that moves their clock.
	Sleep func(ctx context.Context, d time.Duration) error
	// Shared, if set, counts the wrong tokens told across the instances
	// that share it (Redis, issue 37); nil counts them in this process.
	Shared Shared
}

// Checker checks presented tokens against the admin token. Safe for
// concurrent use.
type Checker struct {
	digest [sha256.Size]byte
	lim    Limits
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	shared Shared

	mu      sync.Mutex
	clients map[netip.Addr]*failures
	global  failures
}

// failures are the wrong tokens of one address, or of all of them.
type failures struct {
	n       int       // wrong tokens not yet forgotten
	pending int       // checks waiting or being judged
	last    time.Time // the last wrong token
}

// New returns a Checker for cfg.
func New(cfg Config) (*Checker, error) {
	if cfg.Token == "" {
		return nil, errors.New("admintoken: Token is required")
	}
	lim := cfg.Limits
	if lim == (Limits{}) {
		lim = DefaultLimits
	}
	if lim.Free < 0 || lim.GlobalFree < 0 || lim.Base <= 0 || lim.Max < lim.Base || lim.Forget <= 0 || lim.MaxClients < 1 {
		return nil, errors.New("admintoken: Limits need Free and GlobalFree of 0 or more, 0 < Base <= Max, a positive Forget and MaxClients")
	}
	c := &Checker{digest: sha256.Sum256([]byte(cfg.Token)), lim: lim, now: cfg.Now, sleep: cfg.Sleep,
		shared: cfg.Shared, clients: map[netip.Addr]*failures{}}
	if c.now == nil {
		c.now = time.Now
	}
	if c.sleep == nil {
		c.sleep = sleep
	}
	return c, nil
}

// Limits are the limits in force.
func (c *Checker) Limits() Limits { return c.lim }

// Check waits out client's delay, then reports whether presented is the
// admin token, and how long it waited. A wrong token counts against client
// and against the global ceiling. It returns an error, and no verdict, only
// when ctx ends while it waits; the wrong token then does not count.
func (c *Checker) Check(ctx context.Context, client netip.Addr, presented string) (bool, time.Duration, error) {
	got := sha256.Sum256([]byte(presented))
	wrong := subtle.ConstantTimeCompare(got[:], c.digest[:]) != 1
	var own, all *Told
	if c.shared != nil {
		o, a, err := c.shared.Failures(ctx, client)
		if err == nil {
			own, all = &o, &a
		}
	}
	wait, global := c.reserve(client, wrong, own, all)
	if wait > 0 {
		if err := c.sleep(ctx, wait); err != nil {
			c.settle(client, wrong, global, false)
			return false, 0, err
		}
	}
	c.settle(client, wrong, global, true)
	if wrong && c.shared != nil {
		_ = c.shared.Fail(ctx, client, global, c.now(), c.lim.Forget) // counted in memory too
	}
	return !wrong, wait, nil
}

// learn takes what the other instances told into f: the larger count and
// the later last wrong token. Called with mu held.
func learn(f *failures, t *Told) {
	if t == nil {
		return
	}
	f.n = max(f.n, t.N)
	if t.Last.After(f.last) {
		f.last = t.Last
	}
}

// reserve returns how long a check from client must wait, the later of the
// address's and the global delay and at most Max, and counts a wrong token
// as pending: for the address, and for the global ceiling (global) when
// it is one of the address's free ones. own and all, when not nil, are
// the wrong tokens every instance told (Shared).
func (c *Checker) reserve(client netip.Addr, wrong bool, own, all *Told) (wait time.Duration, global bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	f := c.clients[client]
	if f == nil {
		f = &failures{}
	}
	learn(f, own)
	learn(&c.global, all)
	until := c.until(f, c.lim.Free, now)
	if g := c.until(&c.global, c.lim.GlobalFree, now); g.After(until) {
		until = g
	}
	if wrong {
		if c.clients[client] == nil {
			c.makeRoom(now)
			c.clients[client] = f
		}
		global = f.n+f.pending < c.lim.Free
		f.pending++
		if global {
			c.global.pending++
		}
	}
	return min(max(until.Sub(now), 0), c.lim.Max), global
}

// until is when the next check of f may be judged, counting its pending
// wrong tokens; free wrong tokens cost nothing. Called with mu held.
func (c *Checker) until(f *failures, free int, now time.Time) time.Time {
	if f.pending == 0 && !now.Before(f.last.Add(c.lim.Forget)) {
		f.n = 0
	}
	wrong := f.n + f.pending
	if wrong < free {
		return now
	}
	d := c.lim.Base
	for i := free; i < wrong && d < c.lim.Max; i++ {
		d *= 2
	}
	ref := f.last
	if f.pending > 0 {
		// The pending wrong tokens are told about now.
		ref = now
	}
	return ref.Add(min(d, c.lim.Max))
}

// settle ends a check of client with a wrong token (pending globally too
// when global); counted says its verdict was told, so it stays counted.
func (c *Checker) settle(client netip.Addr, wrong, global, counted bool) {
	if !wrong {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	f := c.clients[client]
	if f == nil {
		// Forgotten to make room while it waited.
		c.makeRoom(now)
		f = &failures{pending: 1}
		c.clients[client] = f
	}
	for _, x := range []*failures{f, &c.global} {
		if x == &c.global && !global {
			break
		}
		x.pending = max(x.pending-1, 0)
		if counted {
			x.n++
			x.last = now
		}
	}
	if f.n == 0 && f.pending == 0 {
		delete(c.clients, client)
	}
}

// makeRoom frees an entry when MaxClients are tracked: forgotten ones
// first, then the one whose last wrong token is oldest. Called with mu
// held.
func (c *Checker) makeRoom(now time.Time) {
	if len(c.clients) < c.lim.MaxClients {
		return
	}
	var oldest netip.Addr
	var at time.Time
	for a, f := range c.clients {
		if f.pending == 0 && !now.Before(f.last.Add(c.lim.Forget)) {
			delete(c.clients, a)
		} else if at.IsZero() || f.last.Before(at) {
			oldest, at = a, f.last
		}
	}
	if len(c.clients) >= c.lim.MaxClients {
		delete(c.clients, oldest)
	}
}

// Tracked is the number of addresses tracked.
func (c *Checker) Tracked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.clients)
}

// sleep waits d on a timer, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Client is the address r came from, as the limits count it: an IPv6
// client by its /64, since one host usually holds the whole prefix. All
// clients behind one proxy share its address.
func Client(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
