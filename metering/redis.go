package metering

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Redis is the counter shared by several gateway instances. Each reserve
// is one Lua script, so it is atomic across instances: the balance check
// and the increment cannot interleave with another instance's. Rate limits
// use GCRA (redis_rate), also one script per call.
//
// A day's spend lives under <prefix>spend:<key id>:<day> for two days.
// When the entry is missing (first call of the day, or Redis lost its
// data) it is seeded from durable storage first.
type Redis struct {
	rdb     redis.UniversalClient
	prefix  string
	seed    Seeder
	limiter *redis_rate.Limiter
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
	return &Redis{rdb: rdb, prefix: prefix, seed: seed, limiter: redis_rate.NewLimiter(rdb)}
}

func (r *Redis) spendKey(keyID int64, day string) string {
	return r.prefix + "spend:" + strconv.FormatInt(keyID, 10) + ":" + day
}

// ensure seeds the day's entry from storage when it is missing. SET NX
// keeps the entry another instance seeded first.
func (r *Redis) ensure(ctx context.Context, key string, keyID int64, day string) error {
	var n int64
	if r.seed != nil {
		var err error
		if n, err = r.seed(ctx, keyID, day); err != nil {
			return err
		}
	}
	if err := r.rdb.SetNX(ctx, key, n, spendTTL).Err(); err != nil {
		return fmt.Errorf("metering: redis: %w", err)
	}
	return nil
}

// Reserve implements Counter.
func (r *Redis) Reserve(ctx context.Context, keyID int64, day string, cost, limit int64) (int64, bool, error) {
	key := r.spendKey(keyID, day)
	for range 3 {
		res, err := reserveScript.Run(ctx, r.rdb, []string{key}, cost, limit).Int64Slice()
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

// Refund implements Counter.
func (r *Redis) Refund(ctx context.Context, keyID int64, day string, cost int64) error {
	if err := refundScript.Run(ctx, r.rdb, []string{r.spendKey(keyID, day)}, cost).Err(); err != nil {
		return fmt.Errorf("metering: redis: %w", err)
	}
	return nil
}

// Used implements Counter.
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
	return n, nil
}

// Allow implements Counter.
func (r *Redis) Allow(ctx context.Context, keyID int64, perSecond, burst, cost int64) (time.Duration, bool, error) {
	res, err := r.limiter.AllowN(ctx, r.prefix+"rate:"+strconv.FormatInt(keyID, 10),
		redis_rate.Limit{Rate: int(perSecond), Burst: int(burst), Period: time.Second}, int(cost))
	if err != nil {
		return 0, false, fmt.Errorf("metering: redis: %w", err)
	}
	if res.Allowed == 0 {
		return res.RetryAfter, false, nil
	}
	return 0, true, nil
}
