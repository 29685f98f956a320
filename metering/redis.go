package metering

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Redis is the counter shared by several gateway instances. Each reserve
// is one Lua script, so it is atomic across instances: the balance check
// and the increment cannot interleave with another instance's. Rate limits
// use GCRA (redis_rate), also one script per call.
//
// A day's spend lives under <prefix>{k:<key id>}:spend:<day> for two
// days; the braces are a Redis Cluster hash tag, so every entry of one key
// lives in one slot (on one shard). When the entry is missing (first call
// of the day, or Redis lost its data) it is seeded from durable storage
// first.
//
// With leases on (WithLeases), the entry counts what instances spent and
// what they hold: an instance takes credits in blocks and spends them in
// process (lease.go), so most calls make no round trip at all.
//
// Scripts from concurrent calls are sent together (pipeline): one round
// trip per batch, not per call.
type Redis struct {
	rdb     redis.UniversalClient
	prefix  string
	seed    Seeder
	limiter *redis_rate.Limiter
	leases  *leases // nil: exact mode, one script per charge

	pipe      *pipeline
	closeOnce sync.Once
}

// spendTTL keeps a day's entry past its end, for calls that straddle
// midnight and for refunds that arrive late.
const spendTTL = 48 * time.Hour

// reserveScript returns -1 when the entry is missing (the caller seeds it
// and retries), {0, used} when the cost does not fit, {1, used} after
// charging it.
var reserveScript = redis.NewScript(`
local used = redis.call('GET', KEYS[1])
if not used then return {-1, 0} end
used = tonumber(used)
local cost, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
if used + cost > limit then return {0, used} end
return {1, redis.call('INCRBY', KEYS[1], cost)}
`)

// refundScript refunds only into an existing entry: an entry that has
// expired is not brought back as a negative number.
var refundScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('DECRBY', KEYS[1], ARGV[1])
`)

// NewRedis returns a counter on rdb, with every key under prefix.
func NewRedis(rdb redis.UniversalClient, prefix string, seed Seeder) *Redis {
	return &Redis{rdb: rdb, prefix: prefix, seed: seed, limiter: redis_rate.NewLimiter(rdb),
		pipe: newPipeline(rdb, scriptTimeout, 0, reserveScript, leaseScript)}
}

// Ping checks that Redis answers, for readiness checks.
func (r *Redis) Ping(ctx context.Context) error { return r.rdb.Ping(ctx).Err() }

// Close gives back what this instance holds in leases, then sends what is
// queued and stops the pipeline's goroutine. Reserves after Close fail.
func (r *Redis) Close() error {
	var err error
	r.closeOnce.Do(func() {
		if r.leases != nil {
			err = r.leases.close()
		}
		r.pipe.close()
	})
	return err
}

// scriptTimeout bounds one round trip of the counter's scripts.
const scriptTimeout = 10 * time.Second

// run runs script on keys (all in one slot), pipelined with concurrent
// ones.
func (r *Redis) run(ctx context.Context, script *redis.Script, keys []string, args ...any) ([]int64, error) {
	return r.pipe.run(ctx, script, keys, args...)
}

// spendKey is the key's entry for day. The hash tag {k:<id>} puts every
// entry of one API key in one Cluster slot; other parts of Portico that
// keep a key's state in Redis use the same tag.
func (r *Redis) spendKey(keyID int64, day string) string {
	return r.prefix + KeyTag(keyID) + ":spend:" + day
}

// KeyTag is the Redis Cluster hash tag of an API key's entries,
// {k:<key id>}: every Redis key that holds one API key's state contains
// it, so that they share a slot and a script may touch several of them.
func KeyTag(keyID int64) string {
	return "{k:" + strconv.FormatInt(keyID, 10) + "}"
}

// ensure seeds the day's entry from storage when it is missing. SET NX
// keeps the entry another instance seeded first. An entry of the naming
// before hash tags (<prefix>spend:<id>:<day>), left by an older version,
// is read too, so an upgrade does not forget the day's spend.
func (r *Redis) ensure(ctx context.Context, key string, keyID int64, day string) error {
	var n int64
	if r.seed != nil {
		var err error
		if n, err = r.seed(ctx, keyID, day); err != nil {
			return err
		}
	}
	legacy := r.prefix + "spend:" + strconv.FormatInt(keyID, 10) + ":" + day
	if old, err := r.rdb.Get(ctx, legacy).Int64(); err == nil && old > n {
		n = old
	}
	if err := r.rdb.SetNX(ctx, key, n, spendTTL).Err(); err != nil {
		return fmt.Errorf("metering: redis: %w", err)
	}
	return nil
}

// Reserve implements Counter.
func (r *Redis) Reserve(ctx context.Context, keyID int64, day string, cost, limit int64) (int64, bool, error) {
	if r.leases != nil {
		return r.leases.reserve(ctx, keyID, day, cost, limit)
	}
	key := r.spendKey(keyID, day)
	for range 3 {
		res, err := r.run(ctx, reserveScript, []string{key}, cost, limit)
		if err != nil {
			return 0, false, fmt.Errorf("metering: redis: %w", err)
		}
		switch res[0] {
		case 1:
			return res[1], true, nil
		case 0:
			return res[1], false, nil
		}
		if err := r.ensure(ctx, key, keyID, day); err != nil {
			return 0, false, err
		}
	}
	return 0, false, fmt.Errorf("metering: redis: entry %s keeps disappearing", key)
}

// Refund implements Counter. With leases, the credits go back to this
// instance's lease of the key when it has one, without a round trip.
func (r *Redis) Refund(ctx context.Context, keyID int64, day string, cost int64) error {
	if r.leases != nil && r.leases.refund(keyID, day, cost) {
		return nil
	}
	return r.giveBack(ctx, keyID, day, cost)
}

// giveBack takes cost from the key's entry for day, if it still exists.
func (r *Redis) giveBack(ctx context.Context, keyID int64, day string, cost int64) error {
	if err := refundScript.Run(ctx, r.rdb, []string{r.spendKey(keyID, day)}, cost).Err(); err != nil {
		return fmt.Errorf("metering: redis: %w", err)
	}
	return nil
}

// Used implements Counter. With leases it is what all instances spent or
// hold, less what this instance holds unspent.
func (r *Redis) Used(ctx context.Context, keyID int64, day string) (int64, error) {
	key := r.spendKey(keyID, day)
	n, err := r.rdb.Get(ctx, key).Int64()
	if err == redis.Nil {
		if err := r.ensure(ctx, key, keyID, day); err != nil {
			return 0, err
		}
		n, err = r.rdb.Get(ctx, key).Int64()
	}
	if err != nil {
		return 0, fmt.Errorf("metering: redis: %w", err)
	}
	if r.leases != nil {
		n -= r.leases.held(keyID, day)
	}
	return n, nil
}

// Allow implements Counter.
func (r *Redis) Allow(ctx context.Context, keyID int64, perSecond, burst, cost int64) (time.Duration, bool, error) {
	res, err := r.limiter.AllowN(ctx, r.prefix+KeyTag(keyID)+":rate",
		redis_rate.Limit{Rate: int(perSecond), Burst: int(burst), Period: time.Second}, int(cost))
	if err != nil {
		return 0, false, fmt.Errorf("metering: redis: %w", err)
	}
	if res.Allowed == 0 {
		return res.RetryAfter, false, nil
	}
	return 0, true, nil
}
