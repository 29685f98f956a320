package metering

import (
	"context"
	"sync"
	"time"
)

// Counter holds the live state of metering: what each key spent today and
// its rate-limit budget. Memory is the one-instance counter; Redis shares
// the state between instances. Both are exact under concurrency: a reserve
// that would pass the limit is refused, never half applied.
type Counter interface {
	// Reserve adds cost to what the key spent on day if the sum stays
	// within limit, and returns the spend after the call (or as it is, when
	// refused).
	Reserve(ctx context.Context, keyID int64, day string, cost, limit int64) (used int64, ok bool, err error)
	// Refund takes cost back from the key's spend on day.
	Refund(ctx context.Context, keyID int64, day string, cost int64) error
	// Used returns what the key spent on day.
	Used(ctx context.Context, keyID int64, day string) (int64, error)
	// Allow takes cost from the key's rate budget (rate per second, up to
	// burst at once). When the budget is short it takes nothing and says
	// how long to wait.
	Allow(ctx context.Context, keyID int64, rate, burst, cost int64) (retryAfter time.Duration, ok bool, err error)
}

// Seeder returns what a key spent on a day according to durable storage. A
// counter asks it the first time it sees a key on a day.
type Seeder func(ctx context.Context, keyID int64, day string) (int64, error)

// Memory is the counter of a single instance.
type Memory struct {
	seed Seeder
	now  func() time.Time

	mu    sync.Mutex
	spend map[int64]*spend
	tat   map[int64]time.Time // rate limiting: theoretical arrival times
}

// spend is one key's spend on its two latest days: today's, and the day
// before, which refunds of calls charged before midnight still reach.
type spend struct {
	mu   sync.Mutex
	days [2]daySpend // [0] the newer day
}

type daySpend struct {
	day    string
	used   int64
	seeded bool
}

// NewMemory returns an in-process counter. seed may be nil (nothing spent
// before); now may be nil (time.Now) and is the rate limiter's clock.
func NewMemory(seed Seeder, now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{seed: seed, now: now, spend: map[int64]*spend{}, tat: map[int64]time.Time{}}
}

// entry returns the key's spend on day, seeded, with the key's record
// locked (the caller unlocks s.mu). A day newer than the record's newest
// becomes its newest and the newest its older; a day older than both (a
// refund two days late) gets a record of its own that is not kept, so it
// never displaces today's spend.
func (m *Memory) entry(ctx context.Context, keyID int64, day string) (*spend, *daySpend, error) {
	m.mu.Lock()
	s := m.spend[keyID]
	if s == nil {
		s = &spend{}
		m.spend[keyID] = s
	}
	m.mu.Unlock()
	s.mu.Lock()
	var d *daySpend
	switch {
	case s.days[0].day == day:
		d = &s.days[0]
	case s.days[1].day == day:
		d = &s.days[1]
	case day > s.days[0].day:
		// A new day (or the first call): start from what storage holds.
		s.days[1], s.days[0] = s.days[0], daySpend{day: day}
		d = &s.days[0]
	default:
		d = &daySpend{day: day}
	}
	if !d.seeded && m.seed != nil {
		n, err := m.seed(ctx, keyID, day)
		if err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
		d.used = n
	}
	d.seeded = true
	return s, d, nil
}

// Reserve implements Counter.
func (m *Memory) Reserve(ctx context.Context, keyID int64, day string, cost, limit int64) (int64, bool, error) {
	s, d, err := m.entry(ctx, keyID, day)
	if err != nil {
		return 0, false, err
	}
	defer s.mu.Unlock()
	if d.used+cost > limit {
		return d.used, false, nil
	}
	d.used += cost
	return d.used, true, nil
}

// Refund implements Counter.
func (m *Memory) Refund(ctx context.Context, keyID int64, day string, cost int64) error {
	s, d, err := m.entry(ctx, keyID, day)
	if err != nil {
		return err
	}
	d.used -= cost
	s.mu.Unlock()
	return nil
}

// Used implements Counter.
func (m *Memory) Used(ctx context.Context, keyID int64, day string) (int64, error) {
	s, d, err := m.entry(ctx, keyID, day)
	if err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	return d.used, nil
}

// Allow implements Counter with GCRA, the algorithm the Redis counter
// runs (redis_rate), so both backends answer alike: each credit moves the
// key's theoretical arrival time (TAT) on by 1/rate seconds, and a call
// passes when its new TAT is within burst/rate of now. A call dearer than
// the rate passes on a key with no debt and then makes the key wait.
func (m *Memory) Allow(_ context.Context, keyID int64, perSecond, burst, cost int64) (time.Duration, bool, error) {
	now := m.now()
	emission := time.Second / time.Duration(perSecond)
	m.mu.Lock()
	defer m.mu.Unlock()
	tat := m.tat[keyID]
	if tat.Before(now) {
		tat = now
	}
	next := tat.Add(time.Duration(cost) * emission)
	if allowAt := next.Add(-time.Duration(burst) * emission); allowAt.After(now) {
		return allowAt.Sub(now), false, nil
	}
	m.tat[keyID] = next
	return 0, true, nil
}
