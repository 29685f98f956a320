package metering

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
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
	r    *Redis
	ttl  time.Duration
	now  func() time.Time
	inst string       // this counter's name in the op records
	seq  atomic.Int64 // ops sent, in order: their numbers

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
	limit    int64     // the balance the latest lease was taken under
	// pending is an op whose answer was lost (or not yet come): it is
	// sent again, with its token, before any other, so that Redis
	// applies it exactly once.
	pending *leaseOp
}

// leaseOp is one run of leaseScript: give back held, take at least cost
// (want if it may), within limit. seq makes it idempotent.
type leaseOp struct {
	seq, held, cost, want, limit int64
}

// leaseScript gives back what the instance holds (ARGV[1]) and takes a
// new lease: at least the call's cost (ARGV[2]), the size asked for
// (ARGV[3]) if a sixteenth of what is left allows, within the balance
// (ARGV[4]). It returns {-1, 0, 0} when the entry is missing, {0, used,
// 0} when not even the cost fits (what was held is given back), {1,
// used, taken} after taking. A give-back alone is the op with cost and
// want 0.
//
// KEYS[2] records the instance's latest op on the key and day, by its
// number (ARGV[5], rising): an op sent again after its answer was lost
// returns what it did the first time instead of doing it twice, and a
// late copy of an op older than the latest is not done at all ({-2, 0,
// 0}).
var leaseScript = redis.NewScript(`
local seq = tonumber(ARGV[5])
local rec = redis.call('GET', KEYS[2])
if rec then
  local t, a, b, c = string.match(rec, '^(%S+) (%S+) (%S+) (%S+)$')
  t = tonumber(t)
  if t == seq then return {tonumber(a), tonumber(b), tonumber(c)} end
  if t > seq then return {-2, 0, 0} end
end
local used = redis.call('GET', KEYS[1])
if not used then return {-1, 0, 0} end
local held, cost, want, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
used = tonumber(used) - held
local avail = limit - used
local ok, take = 1, 0
if avail < cost then
  ok = 0
  if held ~= 0 then redis.call('DECRBY', KEYS[1], string.format('%d', held)) end
else
  take = math.max(cost, math.min(want, math.floor(avail / ` + strconv.Itoa(leaseShare) + `)))
  redis.call('INCRBY', KEYS[1], string.format('%d', take - held))
end
redis.call('SET', KEYS[2], string.format('%d %d %d %d', seq, ok, used + take, take), 'EX', 172800)
return {ok, used + take, take}
`)

// WithLeases turns leases on, each living ttl (DefaultLeaseTTL when 0),
// and returns r. Call it before the first charge.
func (r *Redis) WithLeases(ttl time.Duration) *Redis {
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	r.leases = &leases{r: r, ttl: ttl, now: time.Now, inst: hex.EncodeToString(b[:]), byKey: map[leaseKey]*lease{},
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
	k := leaseKey{keyID, day}
	l := ls.get(k)
	defer l.mu.Unlock()
	now := ls.now()
	if l.pending != nil {
		res, err := ls.send(ctx, k, l.pending)
		if err != nil {
			return 0, false, fmt.Errorf("metering: redis: %w", err)
		}
		ls.settle(l, res, 0, now) // the call it was for was refused: it holds all it took
	}
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
	// No lease needs more than the balance.
	l.size = max(min(l.size, limit), cost)
	for range 3 {
		op := ls.op(l, cost, l.size, limit)
		res, err := ls.send(ctx, k, op)
		if err != nil {
			if !notSent(err) {
				// The script may have run, or may yet: it is sent again
				// before anything else, and what was held is frozen
				// until then.
				l.pending, l.credits = op, 0
			}
			return 0, false, fmt.Errorf("metering: redis: %w", err)
		}
		switch res[0] {
		case 0, 1:
			ok := ls.settle(l, res, cost, now)
			return l.used - l.credits, ok, nil
		case -2: // cannot be: this op is the newest
			l.credits = 0
			return 0, false, errors.New("metering: redis: a lease op was overtaken")
		}
		// The entry is gone (Redis lost its data): what this instance
		// held is not in the entry seeded again, so it is dropped here.
		l.credits = 0
		if err := ls.r.ensure(ctx, ls.r.spendKey(keyID, day), keyID, day); err != nil {
			return 0, false, err
		}
	}
	return 0, false, fmt.Errorf("metering: redis: entry %s keeps disappearing", ls.r.spendKey(keyID, day))
}

// op makes l's next op (l locked), giving back what it holds.
func (ls *leases) op(l *lease, cost, want, limit int64) *leaseOp {
	l.limit = limit
	return &leaseOp{seq: ls.seq.Add(1), held: l.credits, cost: cost, want: want, limit: limit}
}

// send runs op on the key's entry and the instance's op record.
func (ls *leases) send(ctx context.Context, k leaseKey, op *leaseOp) ([]int64, error) {
	return ls.r.run(ctx, leaseScript, ls.keys(k), op.held, op.cost, op.want, op.limit, op.seq)
}

// keys are the entry and the op record of k, in one slot.
func (ls *leases) keys(k leaseKey) []string {
	return []string{ls.r.spendKey(k.keyID, k.day), ls.r.prefix + KeyTag(k.keyID) + ":lease:" + ls.inst + ":" + k.day}
}

// settle applies an op's answer to l (locked): what it took, less spent
// (what the call it was for costs), is held. It reports whether the op
// took anything.
func (ls *leases) settle(l *lease, res []int64, spent int64, now time.Time) bool {
	l.pending = nil
	switch res[0] {
	case 1:
		l.used, l.credits = res[1], res[2]-spent
		if res[2] > 0 {
			l.taken, l.deadline = now, now.Add(ls.ttl)
		}
		return true
	case 0:
		l.used, l.credits = res[1], 0
	default: // the entry is gone (nothing held is in it), or the op was overtaken
		l.credits = 0
	}
	return false
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
// everything is set), and sends again the ops whose answers were lost, in
// one pipeline. An op that fails stays pending, to be sent again at the
// next turn or before the lease's next op.
func (ls *leases) giveBack(everything bool) error {
	now := ls.now()
	type back struct {
		k  leaseKey
		l  *lease
		op *leaseOp
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
		case l.pending != nil:
			backs = append(backs, back{k, l, l.pending})
		case l.credits > 0 && (everything || !now.Before(l.deadline)):
			op := ls.op(l, 0, 0, l.limit)
			l.pending, l.credits = op, 0
			backs = append(backs, back{k, l, op})
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
		cmds[i] = leaseScript.Eval(ctx, pipe, ls.keys(b.k), b.op.held, b.op.cost, b.op.want, b.op.limit, b.op.seq)
	}
	_, _ = pipe.Exec(ctx)
	var errs []error
	for i, b := range backs {
		res, err := cmds[i].Int64Slice()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		b.l.mu.Lock()
		if b.l.pending == b.op {
			ls.settle(b.l, res, 0, now)
		}
		b.l.mu.Unlock()
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
