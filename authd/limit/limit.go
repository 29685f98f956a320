// Package limit holds the auth server's per-client limits: fixed-window
// counters (requests, bytes, codes sent) and failure backoff (wrong codes,
// wrong passwords), each keyed by a string (a client IP, an email, a
// user) and each bounded in memory. The clock is passed in, so tests move
// time instead of sleeping.
package limit

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// DefaultMaxKeys bounds the keys a Window or Backoff tracks when its
// MaxKeys is zero.
const DefaultMaxKeys = 100_000

// Window allows at most Limit units per key in each window of Per (units
// are requests, bytes or codes, as the caller counts them). A zero Limit
// allows everything. Set the fields before first use; safe for concurrent
// use. With Shared set the windows are counted there, across instances.
type Window struct {
	// Limit is the units allowed per key and window.
	Limit int
	// Per is the window's length.
	Per time.Duration
	// MaxKeys bounds the keys held (DefaultMaxKeys if zero). When it is
	// reached, ended windows are dropped, then the oldest window.
	MaxKeys int
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// Shared, if set, counts the windows across instances, under Name
	// (unique among the limits sharing it); the memory counts only while
	// Shared fails.
	Shared Shared
	Name   string

	mu sync.Mutex
	m  map[string]*window
}

type window struct {
	start time.Time
	used  int
}

func (w *Window) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// Allow takes n units for key if they fit in its current window and
// reports whether they did. Refused units are not counted.
func (w *Window) Allow(key string, n int) bool {
	ok, _ := w.Take(key, n)
	return ok
}

// Take is Allow that also says, when it refuses, how long until the
// key's window ends.
func (w *Window) Take(key string, n int) (bool, time.Duration) {
	if w == nil || w.Limit <= 0 {
		return true, 0
	}
	if w.Shared != nil {
		ctx, cancel := sharedCtx()
		ok, wait, err := w.Shared.WindowTake(ctx, w.Name, key, n, w.Limit, w.Per)
		cancel()
		if err == nil {
			return ok, wait
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	if w.m == nil {
		w.m = map[string]*window{}
	}
	c, ok := w.m[key]
	if !ok || !now.Before(c.start.Add(w.Per)) {
		if !ok {
			w.makeRoomLocked(now)
		}
		c = &window{start: now}
		w.m[key] = c
	}
	if c.used+n > w.Limit {
		return false, c.start.Add(w.Per).Sub(now)
	}
	c.used += n
	return true, 0
}

// Len is the number of keys held.
func (w *Window) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}

func (w *Window) makeRoomLocked(now time.Time) {
	max := w.MaxKeys
	if max <= 0 {
		max = DefaultMaxKeys
	}
	if len(w.m) < max {
		return
	}
	var oldest string
	for k, c := range w.m {
		if !now.Before(c.start.Add(w.Per)) {
			delete(w.m, k)
		} else if oldest == "" || c.start.Before(w.m[oldest].start) {
			oldest = k
		}
	}
	if len(w.m) >= max {
		delete(w.m, oldest)
	}
}

// Backoff counts failures per key: the first Free failures cost nothing;
// each one after that locks the key for Base, doubling up to Max. A key's
// failures are forgotten Forget after its last one, or at Reset (a
// success). Set the fields before first use; safe for concurrent use.
// With Shared set the failures are counted there, across instances.
type Backoff struct {
	// Free is how many failures are allowed before the first lock.
	Free int
	// Base is the first lock; each further failure doubles it.
	Base time.Duration
	// Max caps a lock.
	Max time.Duration
	// Forget drops a key's failures this long after its last one.
	Forget time.Duration
	// MaxKeys bounds the keys held (DefaultMaxKeys if zero). When it is
	// reached, forgotten keys are dropped, then the one failed longest ago.
	MaxKeys int
	// Now is the clock; time.Now if nil.
	Now func() time.Time
	// Shared, if set, counts the failures across instances, under Name
	// (unique among the limits sharing it); the memory counts only while
	// Shared fails.
	Shared Shared
	Name   string

	mu sync.Mutex
	m  map[string]*failures
}

type failures struct {
	n      int
	last   time.Time
	locked time.Time // locked until
}

func (b *Backoff) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Wait is how long key is still locked; 0 means it may try now.
func (b *Backoff) Wait(key string) time.Duration {
	if b.Shared != nil {
		ctx, cancel := sharedCtx()
		_, wait, err := b.Shared.BackoffState(ctx, b.Name, key)
		cancel()
		if err == nil {
			return wait
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.getLocked(key, b.now())
	if f == nil {
		return 0
	}
	if d := f.locked.Sub(b.now()); d > 0 {
		return d
	}
	return 0
}

// Failures is the key's count of failures not yet forgotten.
func (b *Backoff) Failures(key string) int {
	if b.Shared != nil {
		ctx, cancel := sharedCtx()
		n, _, err := b.Shared.BackoffState(ctx, b.Name, key)
		cancel()
		if err == nil {
			return n
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if f := b.getLocked(key, b.now()); f != nil {
		return f.n
	}
	return 0
}

func (b *Backoff) getLocked(key string, now time.Time) *failures {
	f, ok := b.m[key]
	if !ok {
		return nil
	}
	if b.Forget > 0 && !now.Before(f.last.Add(b.Forget)) && !now.Before(f.locked) {
		delete(b.m, key)
		return nil
	}
	return f
}

// Fail records a failure and returns the key's failures and the lock it
// now has (0 while within Free).
func (b *Backoff) Fail(key string) (int, time.Duration) {
	if b.Shared != nil {
		ctx, cancel := sharedCtx()
		n, lock, err := b.Shared.BackoffFail(ctx, b.Name, key, b)
		cancel()
		if err == nil {
			return n, lock
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if b.m == nil {
		b.m = map[string]*failures{}
	}
	f := b.getLocked(key, now)
	if f == nil {
		b.makeRoomLocked(now)
		f = &failures{}
		b.m[key] = f
	}
	f.n++
	f.last = now
	if f.n <= b.Free {
		return f.n, 0
	}
	d := b.Base
	for i := b.Free + 1; i < f.n && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	f.locked = now.Add(d)
	return f.n, d
}

// Reset forgets key's failures.
func (b *Backoff) Reset(key string) {
	if b.Shared != nil {
		ctx, cancel := sharedCtx()
		_ = b.Shared.BackoffReset(ctx, b.Name, key)
		cancel()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, key)
}

func (b *Backoff) makeRoomLocked(now time.Time) {
	max := b.MaxKeys
	if max <= 0 {
		max = DefaultMaxKeys
	}
	if len(b.m) < max {
		return
	}
	var oldest string
	for k := range b.m {
		f := b.getLocked(k, now)
		if f != nil && (oldest == "" || f.last.Before(b.m[oldest].last)) {
			oldest = k
		}
	}
	if len(b.m) >= max {
		delete(b.m, oldest)
	}
}

// Semaphore bounds concurrent work (Argon2id runs). The zero value allows
// nothing; make one with NewSemaphore.
type Semaphore chan struct{}

// NewSemaphore allows n concurrent holders.
func NewSemaphore(n int) Semaphore { return make(Semaphore, n) }

// Acquire waits for a slot until done is closed; it reports whether it
// got one.
func (s Semaphore) Acquire(done <-chan struct{}) bool {
	select {
	case s <- struct{}{}:
		return true
	case <-done:
		return false
	}
}

// Release frees a slot.
func (s Semaphore) Release() { <-s }

// ClientIP is the client address a limit is keyed by: the request's
// remote address, or, when header is set (behind a proxy that sets it),
// the last address in that header. IPv6 addresses are grouped by /64,
// the block one host usually holds.
func ClientIP(r *http.Request, header string) string {
	addr := r.RemoteAddr
	if header != "" {
		if v := r.Header.Get(header); v != "" {
			parts := strings.Split(v, ",")
			addr = strings.TrimSpace(parts[len(parts)-1])
		}
	}
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
