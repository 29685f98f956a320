package limit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Shared keeps Windows and Backoffs where every instance of the auth
// server sees them (issue 37): set as a Window's or Backoff's Shared, it
// counts a client's requests and an address's or user's failures across
// instances, with the same meaning as in memory. When it fails (Redis
// does not answer) the Window or Backoff counts in its own memory
// meanwhile, as without it: never unbounded. Redis is the one there is.
type Shared interface {
	// WindowTake takes n units of key's window of name (limit units per
	// per), as Window.Take.
	WindowTake(ctx context.Context, name, key string, n, limit int, per time.Duration) (ok bool, wait time.Duration, err error)
	// BackoffFail records a failure of key in the backoff of name, as
	// Backoff.Fail.
	BackoffFail(ctx context.Context, name, key string, b *Backoff) (n int, lock time.Duration, err error)
	// BackoffState is key's failures not yet forgotten and its lock.
	BackoffState(ctx context.Context, name, key string) (n int, wait time.Duration, err error)
	// BackoffReset forgets key's failures.
	BackoffReset(ctx context.Context, name, key string) error
}

// sharedTimeout bounds one question to the shared store.
const sharedTimeout = time.Second

// Redis is Shared in Redis: a window is one counter with the window's
// expiry, a backoff one hash (failures, lock end) that expires when the
// key's failures are forgotten, each changed by one script. Key names are
// <prefix>lim:<name>:<digest>, where the digest is SHA-256 of the limit
// key, so no address or email reaches Redis; each is a single key, so a
// Redis Cluster takes them as they are. Time is Redis's.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
	// downUntil is when Redis is asked again after it failed (unix
	// nanoseconds): meanwhile every question fails at once, so the limits
	// count in memory without waiting on a dead server.
	downUntil atomic.Int64
}

// errDown answers while Redis is taken to be down.
var errDown = errors.New("limit: redis is down")

// downFor is how long Redis is left alone after it failed.
const downFor = time.Second

// up reports whether Redis is to be asked: while it answers, or by one
// question at a time once downFor has passed since it failed.
func (r *Redis) up() bool {
	d := r.downUntil.Load()
	if d == 0 {
		return true
	}
	now := time.Now().UnixNano()
	return now >= d && r.downUntil.CompareAndSwap(d, now+int64(downFor))
}

// run runs script on key, unless Redis failed less than downFor ago.
func (r *Redis) run(ctx context.Context, script *redis.Script, key string, args ...any) ([]int64, error) {
	if !r.up() {
		return nil, errDown
	}
	res, err := script.Run(ctx, r.rdb, []string{key}, args...).Int64Slice()
	if err != nil {
		r.downUntil.Store(time.Now().Add(downFor).UnixNano())
		return nil, err
	}
	r.downUntil.Store(0)
	return res, nil
}

// NewRedis returns Shared on rdb, with every key under prefix.
func NewRedis(rdb redis.UniversalClient, prefix string) *Redis {
	return &Redis{rdb: rdb, prefix: prefix}
}

var _ Shared = (*Redis)(nil)

// key is the Redis key of a limit key.
func (r *Redis) key(name, key string) string {
	d := sha256.Sum256([]byte(key))
	return r.prefix + "lim:" + name + ":" + hex.EncodeToString(d[:16])
}

// windowScript takes ARGV[1] units of the window KEYS[1] (ARGV[2] units
// per ARGV[3] ms): {1, 0} taken, {0, ms left} refused.
var windowScript = redis.NewScript(`
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local n, limit, per = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if used + n > limit then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 0 then ttl = per end
  return {0, ttl}
end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[1], n, 'PX', per)
else
  redis.call('INCRBY', KEYS[1], n)
end
return {1, 0}
`)

// failScript counts a failure of the backoff KEYS[1] (free ARGV[1],
// base ARGV[2] ms, max ARGV[3] ms, forget ARGV[4] ms) and answers
// {failures, lock ms}.
var failScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local free, base, max, forget = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
local d = 0
if n > free then
  d = base
  local i = free + 1
  while i < n and d < max do d = d * 2; i = i + 1 end
  if d > max then d = max end
  redis.call('HSET', KEYS[1], 'until', now + d)
end
local keep = forget
if d > keep then keep = d end
if keep <= 0 then keep = 86400000 end -- never forgotten in memory: a day here
redis.call('PEXPIRE', KEYS[1], keep)
return {n, d}
`)

// stateScript answers {failures, ms locked} of the backoff KEYS[1].
var stateScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'n', 'until')
if not v[1] then return {0, 0} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local wait = 0
if v[2] then wait = math.max(0, tonumber(v[2]) - now) end
return {tonumber(v[1]), wait}
`)

// WindowTake implements Shared.
func (r *Redis) WindowTake(ctx context.Context, name, key string, n, limit int, per time.Duration) (bool, time.Duration, error) {
	res, err := r.run(ctx, windowScript, r.key(name, key), n, limit, per.Milliseconds())
	if err != nil {
		return false, 0, err
	}
	return res[0] == 1, time.Duration(res[1]) * time.Millisecond, nil
}

// BackoffFail implements Shared.
func (r *Redis) BackoffFail(ctx context.Context, name, key string, b *Backoff) (int, time.Duration, error) {
	res, err := r.run(ctx, failScript, r.key(name, key), b.Free, b.Base.Milliseconds(), b.Max.Milliseconds(), b.Forget.Milliseconds())
	if err != nil {
		return 0, 0, err
	}
	return int(res[0]), time.Duration(res[1]) * time.Millisecond, nil
}

// BackoffState implements Shared.
func (r *Redis) BackoffState(ctx context.Context, name, key string) (int, time.Duration, error) {
	res, err := r.run(ctx, stateScript, r.key(name, key))
	if err != nil {
		return 0, 0, err
	}
	return int(res[0]), time.Duration(res[1]) * time.Millisecond, nil
}

// BackoffReset implements Shared.
func (r *Redis) BackoffReset(ctx context.Context, name, key string) error {
	if !r.up() {
		return errDown
	}
	return r.rdb.Del(ctx, r.key(name, key)).Err()
}

// sharedCtx is the context of one question to the shared store.
func sharedCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), sharedTimeout)
}
