package admintoken

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Shared keeps the wrong tokens told where every instance sees them
// (issue 37), so that guesses spread over the instances behind a load
// balancer are slowed as if they had all gone to one. A Checker with
// Shared still counts the checks waiting on it in its own memory (they
// are that instance's), and counts in memory alone while Shared fails.
type Shared interface {
	// Failures returns the wrong tokens told of client and of everyone,
	// each with the moment of its last one; zero when forgotten.
	Failures(ctx context.Context, client netip.Addr) (own, all Told, err error)
	// Fail records a wrong token of client told at now, and of everyone
	// when global.
	Fail(ctx context.Context, client netip.Addr, global bool, now time.Time, forget time.Duration) error
}

// Told is a count of wrong tokens and when the last one was.
type Told struct {
	N    int
	Last time.Time
}

// Redis is Shared in Redis: a hash (count, last) per client address and
// one for everyone, <prefix>admintoken:<digest of the address> and
// <prefix>admintoken:all, each expiring Forget after its last wrong token;
// a check reads both in one round trip and a wrong token writes them in
// one. Each is a single key (a Redis Cluster takes them as they are).
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
	// downUntil is when Redis is asked again after it failed (unix
	// nanoseconds), so that checks do not wait on a dead server.
	downUntil atomic.Int64
}

var _ Shared = (*Redis)(nil)

// NewRedis returns Shared on rdb, with every key under prefix.
func NewRedis(rdb redis.UniversalClient, prefix string) *Redis {
	return &Redis{rdb: rdb, prefix: prefix}
}

var errDown = errors.New("admintoken: redis is down")

// timeout bounds one round trip; downFor is how long Redis is left
// alone after it failed.
const (
	timeout = time.Second
	downFor = time.Second
)

func (r *Redis) keyOf(client netip.Addr) string {
	d := sha256.Sum256([]byte(client.String()))
	return r.prefix + "admintoken:" + hex.EncodeToString(d[:16])
}

func (r *Redis) all() string { return r.prefix + "admintoken:all" }

// up reports whether Redis is to be asked: while it answers, or by one
// check at a time once downFor has passed since it failed.
func (r *Redis) up() bool {
	d := r.downUntil.Load()
	if d == 0 {
		return true
	}
	now := time.Now().UnixNano()
	return now >= d && r.downUntil.CompareAndSwap(d, now+int64(downFor))
}

// note records whether a round trip failed.
func (r *Redis) note(err error) error {
	if err != nil {
		r.downUntil.Store(time.Now().Add(downFor).UnixNano())
		return err
	}
	r.downUntil.Store(0)
	return nil
}

// Failures implements Shared.
func (r *Redis) Failures(ctx context.Context, client netip.Addr) (Told, Told, error) {
	if !r.up() {
		return Told{}, Told{}, errDown
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := r.rdb.Pipeline()
	own := p.HMGet(ctx, r.keyOf(client), "n", "last")
	all := p.HMGet(ctx, r.all(), "n", "last")
	if _, err := p.Exec(ctx); r.note(err) != nil {
		return Told{}, Told{}, err
	}
	return told(own.Val()), told(all.Val()), nil
}

// told reads a hash's n and last.
func told(v []any) Told {
	var t Told
	if len(v) == 2 {
		if s, ok := v[0].(string); ok {
			t.N, _ = strconv.Atoi(s)
		}
		if s, ok := v[1].(string); ok {
			ms, _ := strconv.ParseInt(s, 10, 64)
			t.Last = time.UnixMilli(ms)
		}
	}
	return t
}

// Fail implements Shared.
func (r *Redis) Fail(ctx context.Context, client netip.Addr, global bool, now time.Time, forget time.Duration) error {
	if !r.up() {
		return errDown
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := r.rdb.Pipeline()
	keys := []string{r.keyOf(client)}
	if global {
		keys = append(keys, r.all())
	}
	for _, k := range keys {
		p.HIncrBy(ctx, k, "n", 1)
		p.HSet(ctx, k, "last", now.UnixMilli())
		p.PExpire(ctx, k, forget)
	}
	_, err := p.Exec(ctx)
	return r.note(err)
}
