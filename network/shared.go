package network

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico/jsonrpc"
)

// RedisShared is a Shared cache in Redis for many instances: final
// answers only, compressed with zstd, each under a TTL, and none larger
// than a bound, so what one instance can make Redis hold is bounded (the
// server's own maxmemory policy bounds the rest). A Redis that fails makes
// a miss, never an error: the node is asked instead.
type RedisShared struct {
	rdb      redis.UniversalClient
	prefix   string
	ttl      time.Duration
	maxBytes int
	enc      *zstd.Encoder
	dec      *zstd.Decoder
	log      *slog.Logger
	writes   chan struct{} // bounds the writes in flight
}

var _ Shared = (*RedisShared)(nil)

// RedisSharedConfig configures a RedisShared.
type RedisSharedConfig struct {
	// Prefix starts every key; it also holds the config's networks apart
	// from another deployment's.
	Prefix string
	// TTL is how long an entry lives; 0 means 24h.
	TTL time.Duration
	// MaxEntryBytes bounds an entry after compression; larger answers stay
	// in this instance's cache only. 0 means 1 MiB.
	MaxEntryBytes int
	Logger        *slog.Logger
}

// NewRedisShared returns a shared cache in rdb.
func NewRedisShared(rdb redis.UniversalClient, cfg RedisSharedConfig) (*RedisShared, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	// Entries come from our own instances; the window bound keeps a
	// corrupt one from making the decoder allocate without limit.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20))
	if err != nil {
		return nil, err
	}
	s := &RedisShared{rdb: rdb, prefix: cfg.Prefix, ttl: cfg.TTL, maxBytes: cfg.MaxEntryBytes, enc: enc, dec: dec, log: cfg.Logger,
		writes: make(chan struct{}, maxSharedWrites)}
	if s.ttl <= 0 {
		s.ttl = 24 * time.Hour
	}
	if s.maxBytes <= 0 {
		s.maxBytes = 1 << 20
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// sharedTimeout bounds one Redis call of the cache: less than asking a
// node.
const sharedTimeout = 50 * time.Millisecond

// maxSharedWrites bounds the entries being written to Redis at once; an
// entry beyond it is not shared (this instance still has it).
const maxSharedWrites = 64

// Get implements Shared.
func (s *RedisShared) Get(ctx context.Context, key string) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	b, err := s.rdb.Get(ctx, s.prefix+key).Bytes()
	if err != nil {
		if !errors.Is(err, redis.Nil) {
			s.log.Debug("shared cache get failed", "err", err)
		}
		return nil, false
	}
	v, err := s.dec.DecodeAll(b, nil)
	if err != nil || !jsonrpc.Valid(v) {
		// Whoever can write to Redis must not be able to send clients
		// invalid JSON: an entry is checked as a node's answer is.
		s.log.Warn("shared cache entry is not a JSON value: ignored", "err", err)
		return nil, false
	}
	return v, true
}

// Set implements Shared. The write happens off the call's path; value is
// the caller's own copy and is not changed after.
func (s *RedisShared) Set(_ context.Context, key string, value []byte) {
	select {
	case s.writes <- struct{}{}:
	default:
		return // Redis is slow: this entry stays local
	}
	go func() {
		defer func() { <-s.writes }()
		b := s.enc.EncodeAll(value, nil)
		if len(b) > s.maxBytes {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
		defer cancel()
		if err := s.rdb.Set(ctx, s.prefix+key, b, s.ttl).Err(); err != nil {
			s.log.Debug("shared cache set failed", "err", err)
		}
	}()
}

// Close waits for the writes in flight.
func (s *RedisShared) Close() error {
	for range cap(s.writes) {
		s.writes <- struct{}{}
	}
	return nil
}
