package metering

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// SharedBounds keeps Bounds in Redis, so that a key's calls per second,
// calls in flight, WebSocket connections and subscriptions are bounded
// across every instance that shares the Redis (issue 37, docs/keys.md):
//
//   - calls per second: one bucket per key, <prefix>{k:<id>}:rate (a hash
//     of tokens and the time they were counted at, in Redis's clock), the
//     same bucket Calls keeps, so it is exact across instances;
//   - calls in flight, WebSocket connections, subscriptions: one sorted set
//     per key and kind, <prefix>{k:<id>}:calls, :ws, :subs, whose members
//     are this instance's tokens (one per call, connection or
//     subscription) scored by their lease's end. A token is renewed while
//     it is held (every Lease/3) and removed when it ends; a token whose
//     lease ended is not counted. So a killed instance's slots come back
//     within Lease, and nothing else is approximate: in flight is exact.
//
// Every Redis key of one API key carries the hash tag {k:<id>}, so all of
// them live in one Redis Cluster slot, and each operation is one script on
// keys of that slot. A call's admission is one script (both bounds), its
// release one ZREM: they go through one pipeline shared by every operation
// waiting at the time, and a release waits up to releaseDelay for other
// operations to ride with, so at steady state a call costs at most one
// round trip and its caller waits for one (the admission).
//
// When Redis does not answer, each bound falls back on this instance's
// own (Calls), or refuses with portico.ErrMeteringUnavailable when
// Refuse is set; Redis is tried again after downFor. A key outside the
// store (ID 0) is bounded per instance.
type SharedBounds struct {
	rdb    redis.UniversalClient
	prefix string
	lease  time.Duration
	refuse bool
	log    *slog.Logger
	// local bounds calls when Redis does not answer.
	local Calls
	// instance starts every token this instance adds; seq tells them
	// apart.
	instance string
	seq      atomic.Uint64
	// downUntil is when Redis is to be tried again after it failed
	// (unix nanoseconds); 0 while it answers.
	downUntil atomic.Int64

	mu sync.Mutex
	// held are the tokens this instance holds, by sorted set, renewed
	// until they are released.
	held map[string]map[string]struct{}

	// pipe carries every operation to Redis, and renews the held
	// tokens every lease/3 (renew).
	pipe *pipeline
}

// SharedBoundsConfig configures SharedBounds.
type SharedBoundsConfig struct {
	// Prefix starts every Redis key (metering.redis_prefix). It must not
	// hold a '{': the key's hash tag comes after it.
	Prefix string
	// Lease is how long a held token outlives an instance that stopped
	// renewing it (was killed); 0 means DefaultLease.
	Lease time.Duration
	// Refuse makes calls, connections and subscriptions of limited keys
	// refused (portico.ErrMeteringUnavailable) while Redis does not
	// answer; false bounds them per instance meanwhile.
	Refuse bool
	// Logger is told when Redis stops and starts answering; nil discards.
	Logger *slog.Logger
}

// DefaultLease is how long a killed instance's calls, connections and
// subscriptions keep counting against their keys.
const DefaultLease = 10 * time.Second

const (
	// downFor is how long bounds stay per instance after Redis failed,
	// before Redis is tried again.
	downFor = time.Second
	// opTimeout bounds one round trip.
	opTimeout = time.Second
	// releaseDelay is how long a batch of releases and renewals waits
	// for an operation someone waits for, to share its round trip.
	releaseDelay = 2 * time.Millisecond
)

// admitScript admits ARGV[3] calls under a bucket of ARGV[1] calls per
// second (KEYS[1]) and ARGV[2] in flight (KEYS[2]), adding members
// ARGV[5]/1..n with leases of ARGV[4] ms. It answers {1, 0} when
// admitted, {0, wait ms} when too many are in flight and {2, wait ms}
// when the bucket is short. Time is Redis's, so the instances' clocks do
// not matter.
var admitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rps, maxc, n, lease = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
if maxc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  if redis.call('ZCARD', KEYS[2]) + n > maxc then return {0, 1000} end
end
if rps > 0 then
  local b = redis.call('HMGET', KEYS[1], 't', 'at')
  local tokens = rps
  if b[1] then tokens = math.min(rps, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rps / 1000) end
  if tokens < n then
    if n > rps then return {2, 1000} end
    return {2, math.ceil((n - tokens) * 1000 / rps)}
  end
  redis.call('HSET', KEYS[1], 't', tostring(tokens - n), 'at', now)
  redis.call('PEXPIRE', KEYS[1], 2000)
end
if maxc > 0 then
  for i = 1, n do redis.call('ZADD', KEYS[2], now + lease, ARGV[5] .. '/' .. i) end
  redis.call('PEXPIRE', KEYS[2], 2 * lease)
end
return {1, 0}
`)

// holdScript adds member ARGV[3] to the sorted set KEYS[1] with a lease
// of ARGV[2] ms when fewer than ARGV[1] members' leases run: {1} when
// added, {0} when full.
var holdScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return {0} end
redis.call('ZADD', KEYS[1], now + lease, ARGV[3])
redis.call('PEXPIRE', KEYS[1], 2 * lease)
return {1}
`)

// renewScript moves the leases of the members ARGV[2..] of KEYS[1] that
// are still there to ARGV[1] ms from now.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + lease, ARGV[i]) end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], 2 * lease) end
return 0
`)

// NewSharedBounds returns bounds kept in rdb. Close stops its goroutine.
func NewSharedBounds(rdb redis.UniversalClient, cfg SharedBoundsConfig) *SharedBounds {
	var r [8]byte
	_, _ = rand.Read(r[:])
	b := &SharedBounds{rdb: rdb, prefix: cfg.Prefix, lease: cfg.Lease, refuse: cfg.Refuse, log: cfg.Logger,
		instance: hex.EncodeToString(r[:]), held: map[string]map[string]struct{}{}}
	if b.lease <= 0 {
		b.lease = DefaultLease
	}
	b.pipe = newPipeline(rdb, opTimeout, releaseDelay, admitScript, holdScript, renewScript)
	b.pipe.tick, b.pipe.tickEvery = b.renew, b.lease/3
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	return b
}

// Close stops renewing this instance's tokens and sends what is queued.
// Tokens still held then run out within the lease.
func (b *SharedBounds) Close() error {
	b.pipe.close()
	return nil
}

// BoundsStats tells how many round trips to Redis the bounds made and how
// many operations (admissions, holds, releases, renewals) they carried.
type BoundsStats struct {
	RoundTrips, Operations int64
}

// Stats returns the round trips made so far.
func (b *SharedBounds) Stats() BoundsStats {
	return BoundsStats{RoundTrips: b.pipe.trips.Load(), Operations: b.pipe.sent.Load()}
}

// keyOf is the Redis key of an API key's part: its hash tag keeps every
// part of one key in one Cluster slot.
func (b *SharedBounds) keyOf(id int64, part string) string {
	return b.prefix + "{k:" + strconv.FormatInt(id, 10) + "}:" + part
}

// token is a new member name of this instance.
func (b *SharedBounds) token() string {
	return b.instance + ":" + strconv.FormatUint(b.seq.Add(1), 36)
}

// shared reports whether Redis is to be asked now: while it answers, or
// by one caller at a time once downFor has passed since it failed (the
// others keep to this instance's bounds meanwhile, rather than queue
// behind a dead server).
func (b *SharedBounds) shared() bool {
	d := b.downUntil.Load()
	if d == 0 {
		return true
	}
	now := time.Now().UnixNano()
	return now >= d && b.downUntil.CompareAndSwap(d, now+int64(downFor))
}

// failed notes that Redis did not answer and returns what to do with the
// operation: the error to refuse it with, or nil to bound it here.
func (b *SharedBounds) failed(err error) error {
	if errors.Is(err, errClosed) {
		return b.fallback() // shutting down, not a Redis failure
	}
	if b.downUntil.Swap(time.Now().Add(downFor).UnixNano()) == 0 {
		if b.refuse {
			b.log.Error("metering: Redis does not answer: calls of keys with bounds are refused until it does", "err", err)
		} else {
			b.log.Warn("metering: Redis does not answer: keys' bounds on calls, connections and subscriptions hold per instance until it does", "err", err)
		}
	}
	return b.fallback()
}

// fallback is the refusal while Redis is down, or nil to bound per
// instance.
func (b *SharedBounds) fallback() error {
	if b.refuse {
		return fmt.Errorf("%w: the shared bounds' Redis does not answer", portico.ErrMeteringUnavailable)
	}
	return nil
}

// Down reports whether the bounds hold per instance (or refuse) because
// Redis failed, and have not found it answering since.
func (b *SharedBounds) Down() bool { return b.downUntil.Load() != 0 }

// answered notes that Redis answered.
func (b *SharedBounds) answered() {
	if b.downUntil.Load() != 0 && b.downUntil.Swap(0) != 0 {
		b.log.Info("metering: Redis answers again: keys' bounds hold across instances")
	}
}

// Calls implements Bounds.
func (b *SharedBounds) Calls(ctx context.Context, id apikey.Identity, n int) (func(), error) {
	r := id.Rules
	if r == nil || !r.Limited() {
		return nothing, nil
	}
	if id.ID == 0 {
		return b.local.Calls(ctx, id, n)
	}
	if !b.shared() {
		if err := b.fallback(); err != nil {
			return nil, err
		}
		return b.local.Calls(ctx, id, n)
	}
	set, tok := b.keyOf(id.ID, "calls"), b.token()
	res, err := b.run(admitScript, []string{b.keyOf(id.ID, "rate"), set},
		r.RequestsPerSecond, r.MaxConcurrent, n, b.lease.Milliseconds(), tok)
	if err != nil {
		if err := b.failed(err); err != nil {
			return nil, err
		}
		return b.local.Calls(ctx, id, n)
	}
	b.answered()
	switch res[0] {
	case 0:
		return nil, concurrentRefusal(id, n)
	case 2:
		return nil, requestsRefusal(id, n, time.Duration(res[1])*time.Millisecond)
	}
	if r.MaxConcurrent <= 0 {
		return nothing, nil
	}
	members := make([]string, n)
	for i := range members {
		members[i] = tok + "/" + strconv.Itoa(i+1)
	}
	return b.holding(set, members...), nil
}

// Hold implements Bounds.
func (b *SharedBounds) Hold(ctx context.Context, kind Slot, id apikey.Identity, max int) (func(), error) {
	if max <= 0 {
		return nothing, nil
	}
	if id.ID == 0 {
		return b.local.Hold(ctx, kind, id, max)
	}
	if !b.shared() {
		if err := b.fallback(); err != nil {
			return nil, err
		}
		return b.local.Hold(ctx, kind, id, max)
	}
	set, tok := b.keyOf(id.ID, kind.name()), b.token()
	res, err := b.run(holdScript, []string{set}, max, b.lease.Milliseconds(), tok)
	if err != nil {
		if err := b.failed(err); err != nil {
			return nil, err
		}
		return b.local.Hold(ctx, kind, id, max)
	}
	b.answered()
	if res[0] == 0 {
		return nil, kind.refusal(max)
	}
	return b.holding(set, tok), nil
}

// holding keeps members of set renewed until the returned release, which
// removes them.
func (b *SharedBounds) holding(set string, members ...string) func() {
	b.mu.Lock()
	h := b.held[set]
	if h == nil {
		h = map[string]struct{}{}
		b.held[set] = h
	}
	for _, m := range members {
		h[m] = struct{}{}
	}
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			for _, m := range members {
				delete(h, m)
			}
			if len(h) == 0 {
				delete(b.held, set) // h is b.held[set]: it held these
			}
			b.mu.Unlock()
			args := make([]any, len(members))
			for i, m := range members {
				args[i] = m
			}
			b.pipe.send(&pipeOp{do: func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
				return p.ZRem(ctx, set, args...)
			}})
		})
	}
}

// run runs script through the pipeline and waits for its answer, whatever
// the caller's context: an error here says Redis failed (failed).
func (b *SharedBounds) run(script *redis.Script, keys []string, args ...any) ([]int64, error) {
	res, err := b.pipe.run(context.Background(), script, keys, args...)
	if err == nil && len(res) == 0 {
		err = errors.New("metering: shared bounds: empty answer")
	}
	return res, err
}

// renew moves the leases of every token this instance holds on, one
// script per sorted set, in one round trip.
func (b *SharedBounds) renew() {
	b.mu.Lock()
	var ops []*pipeOp
	for set, h := range b.held {
		if len(h) == 0 {
			delete(b.held, set)
			continue
		}
		args := make([]any, 0, len(h)+1)
		args = append(args, b.lease.Milliseconds())
		for m := range h {
			args = append(args, m)
		}
		ops = append(ops, &pipeOp{do: func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
			return renewScript.EvalSha(ctx, p, []string{set}, args...)
		}})
	}
	b.mu.Unlock()
	for len(ops) > 0 {
		n := min(len(ops), maxPipeline)
		b.pipe.exec(ops[:n])
		ops = ops[n:]
	}
}
