package authd

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico/authd/limit"
)

// DefaultRedisPrefix starts the auth server's Redis keys when
// Config.RedisPrefix is empty.
const DefaultRedisPrefix = "portico:auth:"

// sharedLimits is the Redis the limits are counted in across instances.
type sharedLimits struct {
	rdb    *redis.Client
	shared *limit.Redis
}

// openShared connects to cfg.Redis; nil when it is not set.
func openShared(ctx context.Context, cfg Config) (*sharedLimits, error) {
	if cfg.Redis == "" {
		return nil, nil
	}
	if !strings.HasPrefix(cfg.Redis, "redis://") && !strings.HasPrefix(cfg.Redis, "rediss://") && !strings.HasPrefix(cfg.Redis, "unix://") {
		return nil, &ConfigError{Field: "Redis", Reason: "want a redis://, rediss:// or unix:// URL"}
	}
	opts, err := redis.ParseURL(cfg.Redis)
	if err != nil {
		return nil, &ConfigError{Field: "Redis", Reason: err.Error()}
	}
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, &ConfigError{Field: "Redis", Reason: err.Error()}
	}
	prefix := cfg.RedisPrefix
	if prefix == "" {
		prefix = DefaultRedisPrefix
	}
	return &sharedLimits{rdb: rdb, shared: limit.NewRedis(rdb, prefix)}, nil
}

// limits is the Shared of the limits; nil without Redis.
func (s *sharedLimits) limits() limit.Shared {
	if s == nil {
		return nil
	}
	return s.shared
}

// Close closes the client.
func (s *sharedLimits) Close() error { return s.rdb.Close() }
