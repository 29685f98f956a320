package metering

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Leases: with many instances sharing Redis, an instance takes a key's
// credits in blocks (a lease) and spends them in process, so that a call
// of a busy key makes no round trip to Redis at all. The key's entry in
// Redis counts what was spent and what instances hold, so:
//
//   - the balance is never overspent: every credit spent was first taken
//     from the entry by one script that checks the balance;
//   - a lease is sized from how fast this instance spent the key's last
//     lease (it starts at leaseCalls calls, doubles while a lease lasts
//     less than an eighth of the lease's life and halves, down to one
//     call, while one lasts more than half of it), and never more than a
//     sixteenth of what the key has left (leaseShare), so a key near the
//     end of its balance gets leases of one call: exact, call by call;
//   - an instance that cannot take what a call needs gives back what it
//     holds in the same script, so a key running dry is refused with at
//     most the other instances' leases unspent, and those come back when
//     their holders run short too, or within the lease's life;
//   - what an instance holds goes back when its lease's life ends unspent,
//     and when it closes. An instance killed before that leaves its
//     unspent lease counted as spent for the rest of the day: never an
//     overspend, at most one lease per key and instance lost;
//   - the journal and the usage history record what was spent, call by
//     call, never what was leased.
type leases struct {
	r   *Redis
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	byKey map[leaseKey]*lease

	stop chan struct{}
	done chan struct{}
}

// leaseCalls is how many calls (of the call that asks) a key's first
// lease on an instance pays for: with it, a steady key makes at most one
// round trip per leaseCalls calls.
const leaseCalls = 32

// leaseShare: a lease is at most 1/leaseShare of what the key has left
// (but at least what the call asking needs).
const leaseShare = 16

// DefaultLeaseTTL is how long a lease lives when the config names no
// life.
const DefaultLeaseTTL = 2 * time.Second

type leaseKey struct {
	keyID int64
	day   string
}

// lease is what this instance holds of one key's credits on one day.
type lease struct {
	mu       sync.Mutex
	gone     bool      // removed from the map; look the key up again
	credits  int64     // taken, not spent
	size     int64     // the next lease's size, in credits
	taken    time.Time // when the latest lease was taken
	deadline time.Time // when what is left of it goes back
	used     int64     // the entry after the latest lease: spent and held everywhere
}

// leaseScript gives back what the instance holds (ARGV[1]) and takes a
// new lease: at least the call's cost (ARGV[2]), the size asked for
// (ARGV[3]) if a sixteenth of what is left allows, within the balance
// (ARGV[4]). It returns {-1, 0, 0} when the entry is missing, {0, used,
// 0} when not even the cost fits (what was held is given back), {1,
// used, taken} after taking.
var leaseScript = redis.NewScript(`
local used = redis.call('GET', KEYS[1])
if not used then return {-1, 0, 0} end
local held, cost, want, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
used = tonumber(used) - held
local avail = limit - used
if avail < cost then
  if held ~= 0 then redis.call('DECRBY', KEYS[1], string.format('%d', held)) end
  return {0, used, 0}
end
local take = math.max(cost, math.min(want, math.floor(avail / ` + strconv.Itoa(leaseShare) + `)))
redis.call('INCRBY', KEYS[1], string.format('%d', take - held))
return {1, used + take, take}
`)

// WithLeases turns leases on, each living ttl (DefaultLeaseTTL when 0),
// and returns r. Call it before the first charge.
func (r *Redis) WithLeases(ttl time.Duration) *Redis {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	r.leases = &leases{r: r, ttl: ttl, now: time.Now, byKey: map[leaseKey]*lease{},
		stop: make(chan struct{}), done: make(chan struct{})}
	go r.leases.expire()
	return r
}

// get returns the key's lease on day, locked, made on first use.
func (ls *leases) get(k leaseKey) *lease {
	for {
		ls.mu.Lock()
		l := ls.byKey[k]
		if l == nil {
			l = &lease{}
			ls.byKey[k] = l
		}
		ls.mu.Unlock()
		l.mu.Lock()
		if !l.gone {
			return l
		}
		l.mu.Unlock()
	}
}

// reserve spends cost from the key's lease, taking a new one first when
// the lease is short, past its life, or the balance (limit) is lower than
// what the lease was taken under.
func (ls *leases) reserve(ctx context.Context, keyID int64, day string, cost, limit int64) (int64, bool, error) {
	l := ls.get(leaseKey{keyID, day})
	defer l.mu.Unlock()
	now := ls.now()
	if l.credits >= cost && now.Before(l.deadline) && l.used <= limit {
		l.credits -= cost
		return l.used - l.credits, true, nil
	}
	if l.size == 0 {
		l.size = leaseCalls * cost
	} else if lasted := now.Sub(l.taken); lasted < ls.ttl/8 {
		l.size *= 2
	} else if lasted > ls.ttl/2 {
		l.size /= 2
	}
	// A key quiet on this instance comes down to leases of one call:
	// nothing left over to give back, one script per call as without
	// leases.
	l.size = max(l.size, cost)
	key := ls.r.spendKey(keyID, day)
	for range 3 {
		res, err := ls.r.run(ctx, leaseScript, key, l.credits, cost, l.size, limit)
		if err != nil {
			if !notSent(err) {
				// The script may have run and taken back what this
				// instance held: spending it now could overspend.
				l.credits = 0
			}
			return 0, false, fmt.Errorf("metering: redis: %w", err)
		}
		switch res[0] {
		case 1:
			l.used, l.credits = res[1], res[2]-cost
			l.taken, l.deadline = now, now.Add(ls.ttl)
			return l.used - l.credits, true, nil
		case 0:
			l.used, l.credits = res[1], 0
			return l.used, false, nil
		}
		// The entry is gone (Redis lost its data): what this instance
		// held is not in the entry seeded again, so it is dropped here.
		l.credits = 0
		if err := ls.r.ensure(ctx, key, keyID, day); err != nil {
			return 0, false, err
		}
	}
	return 0, false, fmt.Errorf("metering: redis: entry %s keeps disappearing", key)
}

// refund puts cost back into the key's lease on day, if this instance
// has one; false when it has none (the caller gives it back to Redis).
func (ls *leases) refund(keyID int64, day string, cost int64) bool {
	ls.mu.Lock()
	l := ls.byKey[leaseKey{keyID, day}]
	ls.mu.Unlock()
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return false
	}
	l.credits += cost
	return true
}

// held is what this instance holds unspent of the key's credits on day.
func (ls *leases) held(keyID int64, day string) int64 {
	ls.mu.Lock()
	l := ls.byKey[leaseKey{keyID, day}]
	ls.mu.Unlock()
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return 0
	}
	return l.credits
}

// expire gives back, every quarter of a lease's life, what is left of
// the leases whose life ended, and forgets leases long unused.
func (ls *leases) expire() {
	defer close(ls.done)
	t := time.NewTicker(ls.ttl / 4)
	defer t.Stop()
	for {
		select {
		case <-ls.stop:
			return
		case <-t.C:
			ls.giveBack(false)
		}
	}
}

// giveBack returns what is held of ended leases (all leases when
// everything is set) in one pipeline. What could not be sent (Redis down) stays held,
// to be given back at the next turn.
func (ls *leases) giveBack(everything bool) error {
	now := ls.now()
	type back struct {
		k leaseKey
		l *lease
		n int64
	}
	ls.mu.Lock()
	all := make(map[leaseKey]*lease, len(ls.byKey))
	maps.Copy(all, ls.byKey)
	ls.mu.Unlock()
	var backs []back
	for k, l := range all {
		// A lease whose lock is held is being spent or renewed: not idle.
		// On close, wait for it.
		if everything {
			l.mu.Lock()
		} else if !l.mu.TryLock() {
			continue
		}
		switch {
		case l.credits > 0 && (everything || !now.Before(l.deadline)):
			backs = append(backs, back{k, l, l.credits})
			l.credits = 0
		case l.credits == 0 && now.Sub(l.taken) > 4*ls.ttl:
			l.gone = true
			ls.mu.Lock()
			if ls.byKey[k] == l {
				delete(ls.byKey, k)
			}
			ls.mu.Unlock()
		}
		l.mu.Unlock()
	}
	if len(backs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pipe := ls.r.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(backs))
	for i, b := range backs {
		cmds[i] = refundScript.Eval(ctx, pipe, []string{ls.r.spendKey(b.k.keyID, b.k.day)}, b.n)
	}
	_, _ = pipe.Exec(ctx)
	var errs []error
	for i, b := range backs {
		err := cmds[i].Err()
		if err == nil {
			continue
		}
		errs = append(errs, err)
		if notSent(err) {
			// Redis never saw it: held still, given back at the next turn.
			b.l.mu.Lock()
			b.l.credits += b.n
			b.l.mu.Unlock()
		}
		// Else Redis may have applied it before the answer was lost:
		// giving it back again could overspend, so the credits stay
		// counted as spent (as an instance killed holding them).
	}
	if len(errs) > 0 {
		return fmt.Errorf("metering: redis: giving back leases: %w", errors.Join(errs...))
	}
	return nil
}

// notSent reports whether err says a command never reached Redis (no
// connection could be made), so that sending it again cannot apply it
// twice.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial" || errors.Is(err, redis.ErrPoolTimeout)
}

// close stops expire and gives back everything held.
func (ls *leases) close() error {
	close(ls.stop)
	<-ls.done
	return ls.giveBack(true)
}
