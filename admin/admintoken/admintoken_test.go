package admintoken_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/porticohq/portico/admin/admintoken"
)

const token = "the-admin-token-of-these-tests"

// clock is a fake clock whose Sleep moves it on at once.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.Add(d)
	return nil
}

func addr(i int) netip.Addr { return netip.AddrFrom4([4]byte{192, 0, byte(2 + i/250), byte(i % 250)}) }

func newChecker(t *testing.T, c *clock, edit func(*admintoken.Config)) *admintoken.Checker {
	t.Helper()
	cfg := admintoken.Config{Token: token, Now: c.Now, Sleep: c.Sleep}
	if edit != nil {
		edit(&cfg)
	}
	ck, err := admintoken.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ck
}

func check(t *testing.T, ck *admintoken.Checker, client netip.Addr, tok string) (bool, time.Duration) {
	t.Helper()
	ok, waited, err := ck.Check(context.Background(), client, tok)
	if err != nil {
		t.Fatal(err)
	}
	return ok, waited
}

// Wrong tokens from one address, one after another: five at once, then a
// wait that doubles from a second up to 30 seconds. Of 1,000 guesses, 8
// are answered in the first 10 seconds, and the right token from the same
// address afterwards gets in, held at most 30 seconds.
func TestGuessesOneAfterAnother(t *testing.T) {
	c := newClock()
	ck := newChecker(t, c, nil)
	start := c.Now()
	s := time.Second
	want := []time.Duration{0, 0, 0, 0, 0, s, 2 * s, 4 * s, 8 * s, 16 * s, 30 * s, 30 * s, 30 * s}
	var in10s int
	for i := range 1000 {
		ok, waited := check(t, ck, addr(0), fmt.Sprintf("guess-%04d-%s", i, token))
		if ok {
			t.Fatal("a wrong token was taken")
		}
		if i < len(want) && waited != want[i] {
			t.Errorf("guess %d waited %v, want %v", i+1, waited, want[i])
		}
		if i >= len(want) && waited != 30*s {
			t.Fatalf("guess %d waited %v, want 30s", i+1, waited)
		}
		if c.Now().Sub(start) <= 10*s {
			in10s++
		}
	}
	if in10s != 8 {
		t.Errorf("%d wrong tokens answered in the first 10 s, want 8", in10s)
	}
	if took, want := c.Now().Sub(start), 31*s+990*30*s; took != want {
		t.Errorf("1,000 wrong tokens took %v, want %v", took, want)
	}
	// The admin on the same address: slowed, not refused.
	if ok, waited := check(t, ck, addr(0), token); !ok || waited != 30*s {
		t.Errorf("the right token from the guessing address: %v after %v, want in after 30s", ok, waited)
	}
	// One address's guesses do not slow anyone else.
	if ok, waited := check(t, ck, addr(1), token); !ok || waited != 0 {
		t.Errorf("the right token from another address: %v after %v, want in at once", ok, waited)
	}
}

// sleeper is a clock that stands still; its Sleep records the wait and
// blocks until released.
type sleeper struct {
	clock
	mu       sync.Mutex
	waits    []time.Duration
	sleeping atomic.Int64
	release  chan struct{}
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	s.sleeping.Add(1)
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// 1,000 wrong tokens sent at once from one address are spread out as a
// sequence of them would be: five answered at once, the others held 1, 2,
// 4, 8, 16 and then 30 seconds. The right token sent with them is held,
// never refused, and the admin's own concurrent calls do not slow each
// other.
func TestConcurrentGuesses(t *testing.T) {
	s := &sleeper{clock: *newClock(), release: make(chan struct{})}
	ck := newChecker(t, &s.clock, func(c *admintoken.Config) { c.Sleep = s.Sleep })
	const n = 1000
	var wg sync.WaitGroup
	var taken atomic.Int64
	for i := range n {
		wg.Go(func() {
			if ok, _, err := ck.Check(context.Background(), addr(0), fmt.Sprintf("guess-%04d", i)); ok || err != nil {
				taken.Add(1)
			}
		})
	}
	// The five free ones are answered without sleeping; wait for the rest
	// to be held.
	for s.sleeping.Load() < n-5 {
		runtime.Gosched()
	}
	s.mu.Lock()
	waits := slices.Clone(s.waits)
	s.mu.Unlock()
	slices.Sort(waits)
	sec := time.Second
	for i, w := range []time.Duration{sec, 2 * sec, 4 * sec, 8 * sec, 16 * sec, 30 * sec} {
		if waits[i] != w {
			t.Errorf("held check %d waits %v, want %v (waits %v…)", i, waits[i], w, waits[:8])
		}
	}
	if waits[len(waits)-1] != 30*sec {
		t.Errorf("longest wait %v, want 30s", waits[len(waits)-1])
	}
	// The admin arrives in the middle of it: held 30 s like the guesses,
	// and let in.
	admin := make(chan bool, 1)
	go func() {
		ok, _, _ := ck.Check(context.Background(), addr(0), token)
		admin <- ok
	}()
	for s.sleeping.Load() < n-5+1 {
		runtime.Gosched()
	}
	close(s.release)
	wg.Wait()
	if taken.Load() != 0 {
		t.Fatalf("%d wrong tokens taken", taken.Load())
	}
	if !<-admin {
		t.Fatal("the right token was refused")
	}
	s.mu.Lock()
	if w := s.waits[len(s.waits)-1]; w != 30*sec {
		t.Errorf("the right token waited %v, want 30s", w)
	}
	s.mu.Unlock()

	// From a clean address, the admin's concurrent calls are not held.
	before := s.sleeping.Load()
	var calls sync.WaitGroup
	for range 50 {
		calls.Go(func() {
			if ok, waited, err := ck.Check(context.Background(), addr(7), token); !ok || waited != 0 || err != nil {
				t.Errorf("concurrent right token: %v %v %v", ok, waited, err)
			}
		})
	}
	calls.Wait()
	if s.sleeping.Load() != before {
		t.Error("concurrent right tokens were held")
	}
}

// Five wrong tokens from each of many addresses: past GlobalFree of those,
// every check waits, the right token too, and is still let in.
func TestGlobalCeiling(t *testing.T) {
	c := newClock()
	ck := newChecker(t, c, nil)
	lim := ck.Limits()
	for a := range lim.GlobalFree / lim.Free {
		for range lim.Free {
			if ok, waited := check(t, ck, addr(a), "guess"); ok || waited != 0 {
				t.Fatalf("free guess from address %d: %v after %v", a, ok, waited)
			}
		}
	}
	next := addr(500)
	if _, waited := check(t, ck, next, "guess"); waited != lim.Base {
		t.Errorf("a guess from a new address past the ceiling waited %v, want %v", waited, lim.Base)
	}
	if ok, waited := check(t, ck, addr(501), token); !ok || waited != 2*lim.Base {
		t.Errorf("the right token past the ceiling: %v after %v, want in after %v", ok, waited, 2*lim.Base)
	}
	// An hour without wrong tokens, and the ceiling is forgotten.
	c.Add(lim.Forget)
	if ok, waited := check(t, ck, addr(502), token); !ok || waited != 0 {
		t.Errorf("an hour later: %v after %v", ok, waited)
	}
}

// An address's wrong tokens are forgotten an hour after the last one; the
// right token does not reset them, so a guesser sharing the admin's
// address gains nothing from the admin's calls.
func TestForget(t *testing.T) {
	c := newClock()
	ck := newChecker(t, c, nil)
	for range 6 {
		check(t, ck, addr(0), "guess")
	}
	if _, waited := check(t, ck, addr(0), token); waited != 2*time.Second {
		t.Fatalf("right token after 6 wrong: waited %v, want 2s", waited)
	}
	if _, waited := check(t, ck, addr(0), "guess"); waited != 0 {
		t.Fatalf("a wrong token right after the right one waited %v: the right token did not extend the wait", waited)
	}
	if _, waited := check(t, ck, addr(0), "guess"); waited != 4*time.Second {
		t.Fatalf("the right token reset the count: next wrong waited %v, want 4s", waited)
	}
	c.Add(time.Hour)
	if _, waited := check(t, ck, addr(0), "guess"); waited != 0 || ck.Tracked() != 1 {
		t.Fatalf("an hour later: waited %v, %d tracked", waited, ck.Tracked())
	}
}

// A check whose client gives up while it is held is not counted.
func TestCanceledWait(t *testing.T) {
	s := &sleeper{clock: *newClock(), release: make(chan struct{})}
	ck := newChecker(t, &s.clock, func(c *admintoken.Config) { c.Sleep = s.Sleep })
	for range 5 {
		if _, _, err := ck.Check(context.Background(), addr(0), "guess"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ck.Check(ctx, addr(0), "guess"); err == nil {
		t.Fatal("a canceled wait gave a verdict")
	}
	close(s.release)
	if _, waited, _ := ck.Check(context.Background(), addr(0), "guess"); waited != time.Second {
		t.Errorf("after a canceled guess the next waited %v, want 1s (the canceled one not counted)", waited)
	}
}

// The addresses tracked are bounded.
func TestMaxClients(t *testing.T) {
	c := newClock()
	ck := newChecker(t, c, func(cfg *admintoken.Config) {
		cfg.Limits = admintoken.DefaultLimits
		cfg.Limits.MaxClients = 3
	})
	for a := range 10 {
		c.Add(time.Second)
		check(t, ck, addr(a), "guess")
		if ck.Tracked() > 3 {
			t.Fatalf("%d addresses tracked, want at most 3", ck.Tracked())
		}
	}
	// The right token leaves nothing behind.
	check(t, ck, addr(99), token)
	if ck.Tracked() != 3 {
		t.Errorf("%d tracked after a right token", ck.Tracked())
	}
}

func TestNew(t *testing.T) {
	cases := []struct {
		name string
		cfg  admintoken.Config
	}{
		{"no token", admintoken.Config{}},
		{"no base", admintoken.Config{Token: token, Limits: admintoken.Limits{Free: 5, Max: time.Second, Forget: time.Hour, MaxClients: 1}}},
		{"max below base", admintoken.Config{Token: token, Limits: admintoken.Limits{Base: time.Minute, Max: time.Second, Forget: time.Hour, MaxClients: 1}}},
		{"no room", admintoken.Config{Token: token, Limits: admintoken.Limits{Base: time.Second, Max: time.Second, Forget: time.Hour}}},
	}
	for _, c := range cases {
		if _, err := admintoken.New(c.cfg); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

func TestClient(t *testing.T) {
	cases := []struct{ remote, want string }{
		{"192.0.2.1:4000", "192.0.2.1"},
		{"[::ffff:192.0.2.1]:4000", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:4000", "2001:db8:1:2::"},
		{"[2001:db8:1:2::9]:4001", "2001:db8:1:2::"},
		{"[fe80::1%eth0]:4000", "fe80::"},
		{"192.0.2.9", "192.0.2.9"},
		{"pipe", "invalid IP"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if got := admintoken.Client(r).String(); got != c.want {
			t.Errorf("%s: %s, want %s", c.remote, got, c.want)
		}
	}
}
