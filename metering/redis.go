package metering

import (
	"context"
	"errors"
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
// A day's spend lives under <prefix>spend:<key id>:<day> for two days.
// When the entry is missing (first call of the day, or Redis lost its
// data) it is seeded from durable storage first.
//
// Reserves from concurrent calls are sent together: one goroutine takes
// whatever reserves are waiting and sends them as one pipeline, so a busy
// gateway pays one round trip and two system calls per batch instead of
// per call. Each reserve is still its own script, atomic on its own.
type Redis struct {
	rdb     redis.UniversalClient
	prefix  string
	seed    Seeder
	limiter *redis_rate.Limiter

	reqs      chan *reserveReq
	stop      chan struct{}
	startOnce sync.Once
	stopOnce  sync.Once
	done      chan struct{}
}

type reserveReq struct {
	key         string
	cost, limit int64
	res         []int64
	err         error
	done        chan struct{}
}

// maxPipeline bounds the reserves sent in one pipeline.
const maxPipeline = 256

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
		reqs: make(chan *reserveReq, maxPipeline), stop: make(chan struct{}), done: make(chan struct{})}
}

// Ping checks that Redis answers, for readiness checks.
func (r *Redis) Ping(ctx context.Context) error { return r.rdb.Ping(ctx).Err() }

// Close stops the pipelining goroutine. Reserves after Close fail.
func (r *Redis) Close() error {
	r.stopOnce.Do(func() {
		close(r.stop)
		r.startOnce.Do(func() { close(r.done) }) // never started
		<-r.done
	})
	return nil
}

// pipeline sends waiting reserves in batches until Close.
func (r *Redis) pipeline() {
	defer close(r.done)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = reserveScript.Load(ctx, r.rdb).Err() // else the first batch loads it
	cancel()
	batch := make([]*reserveReq, 0, maxPipeline)
	for {
		select {
		case <-r.stop:
			return
		case q := <-r.reqs:
			batch = append(batch[:0], q)
		}
	fill:
		for len(batch) < maxPipeline {
			select {
			case q := <-r.reqs:
				batch = append(batch, q)
			default:
				break fill
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		pipe := r.rdb.Pipeline()
		cmds := make([]*redis.Cmd, len(batch))
		for i, q := range batch {
			cmds[i] = reserveScript.EvalSha(ctx, pipe, []string{q.key}, q.cost, q.limit)
		}
		_, _ = pipe.Exec(ctx) // errors are per command
		cancel()
		for i, q := range batch {
			q.res, q.err = cmds[i].Int64Slice()
			close(q.done)
		}
	}
}

// reserve runs the reserve script, pipelined with concurrent ones.
func (r *Redis) reserve(ctx context.Context, key string, cost, limit int64) ([]int64, error) {
	r.startOnce.Do(func() { go r.pipeline() })
	q := &reserveReq{key: key, cost: cost, limit: limit, done: make(chan struct{})}
	select {
	case r.reqs <- q:
	case <-r.stop:
		return nil, errors.New("metering: redis counter closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Wait for the answer even if ctx ends: the script may have charged.
	select {
	case <-q.done:
	case <-r.done:
		select {
		case <-q.done:
		default:
			return nil, errors.New("metering: redis counter closed")
		}
	}
	if q.err != nil && redis.HasErrorPrefix(q.err, "NOSCRIPT") {
		// The server lost its script cache: send it once in full.
		return reserveScript.Run(ctx, r.rdb, []string{key}, cost, limit).Int64Slice()
	}
	return q.res, q.err
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
		res, err := r.reserve(ctx, key, cost, limit)
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
