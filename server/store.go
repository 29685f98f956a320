package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/porticohq/portico/admin/admintoken"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
	"github.com/porticohq/portico/store/sqldb"
)

// DevDailyCredits is the daily balance of the dev key that serve makes
// for an empty key store when the config names no keys: 10^12 credits a
// day, large enough never to get in the way of development (docs and the
// ready line say so).
const DevDailyCredits = 1_000_000_000_000

// DevKeyName is the name of the dev key in the store.
const DevKeyName = "dev"

// OpenStore opens the key and usage store the config names: PostgreSQL, or
// SQLite in the data directory, or SQLite in memory.
func OpenStore(ctx context.Context, cfg *config.Config) (*store.Store, error) {
	if cfg.Store.Postgres != "" {
		return store.OpenPostgres(ctx, cfg.Store.Postgres)
	}
	if cfg.DataDir == "" {
		return store.OpenSQLite(ctx, "")
	}
	if err := sqldb.MakePrivateDir(cfg.DataDir); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	return store.OpenSQLite(ctx, filepath.Join(cfg.DataDir, "portico.db"))
}

// OpenKeyStore opens the key store of the portico serve that a config file
// (configPath; "" for the defaults) and a data directory (dataDir; "" for
// the config's) describe, for the commands that manage keys offline. It
// returns the config too; a serve without a data directory or PostgreSQL
// keeps its keys in memory, where no other process reaches them.
func OpenKeyStore(ctx context.Context, configPath, dataDir string) (*store.Store, *config.Config, error) {
	cfg := config.DefaultConfig()
	if configPath != "" {
		var err error
		if cfg, err = config.Load(configPath); err != nil {
			return nil, nil, err
		}
	}
	if dataDir != "" {
		cfg.DataDir = dataDir
	}
	if cfg.DataDir == "" && cfg.Store.Postgres == "" {
		return nil, nil, fmt.Errorf("no store: pass --data-dir (or a config with data_dir or store.postgres)")
	}
	s, err := OpenStore(ctx, &cfg)
	return s, &cfg, err
}

// ImportKeys puts the config's keys into the store, or, when the config has
// none, returns the dev key (see devKey; "" when there is none).
func ImportKeys(ctx context.Context, cfg *config.Config, s *store.Store) (string, error) {
	if len(cfg.Keys) > 0 {
		for i, k := range cfg.Keys {
			h := apikey.Sum(k.Key)
			if k.Key == "" {
				h, _ = apikey.ParseHash(k.Hash) // checked by Validate
			}
			daily := k.DailyCredits
			if daily == 0 {
				daily = cfg.Metering.DefaultDailyCredits
			}
			if _, err := s.Import(ctx, k.Name, h, daily, k.RatePerSecond); err != nil {
				return "", fmt.Errorf("keys[%d]: %w", i, err)
			}
			if p := keyPatch(&k); p != (store.Patch{}) {
				if _, err := s.Update(ctx, k.Name, p); err != nil {
					return "", fmt.Errorf("keys[%d]: %w", i, err)
				}
			}
		}
		return "", nil
	}
	return devKey(ctx, cfg.DataDir, s)
}

// keyPatch is what a config key sets of its allowlists and own rules:
// what the file leaves out stays as the store has it.
func keyPatch(k *config.Key) store.Patch {
	p := store.Patch{AllowMethods: k.AllowMethods, AllowNetworks: k.AllowNetworks, AllowOrigins: k.AllowOrigins,
		Rules: store.RulesPatch{AllowAddresses: k.AllowAddresses, AllowUserAgents: k.AllowUserAgents,
			MaxConcurrent: k.MaxConcurrent, RequestsPerSecond: k.RequestsPerSecond,
			JWTAudience: k.JWTAudience, JWTMaxLifetime: k.JWTMaxLifetime, Logs: k.Logs}}
	if k.JWTKeys != nil {
		keys := config.APIKeys(*k.JWTKeys)
		p.Rules.JWTKeys = &keys
	}
	return p
}

// devKey returns the dev key: the one kept in the data directory while the
// store still accepts it, or a new one when the store holds no key at all.
// It is made once, for an empty store only: a store that already holds
// keys (another instance's dev key among them) is left as it is, and ""
// means there is no dev key to print.
func devKey(ctx context.Context, dataDir string, s *store.Store) (string, error) {
	path := ""
	if dataDir != "" {
		path = filepath.Join(dataDir, "dev-key")
		b, err := os.ReadFile(path)
		switch {
		case err == nil:
			if key := strings.TrimSpace(string(b)); apikey.Valid(key) {
				if k, err := s.ByHash(ctx, apikey.Sum(key)); err == nil && k.Active() {
					return key, nil
				}
			}
		case !errors.Is(err, os.ErrNotExist):
			return "", fmt.Errorf("dev key: %w", err)
		}
	}
	key := apikey.Generate()
	created, err := s.CreateFirst(ctx, DevKeyName, apikey.Sum(key), DevDailyCredits, 0)
	if err != nil || !created {
		return "", err
	}
	if path != "" {
		if err := os.WriteFile(path, []byte(key+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("dev key: %w", err)
		}
	}
	return key, nil
}

// dialRedis connects to the Redis at url (config field field) and checks
// it answers.
func dialRedis(ctx context.Context, field, url string) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	// Plain Redis servers have no maintenance notifications to follow.
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	c := redis.NewClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return c, nil
}

// dialMeteringRedis connects to metering's Redis: one server by URL, or
// a Cluster or Sentinels by their addresses, through go-redis's
// universal client, and checks it answers.
func dialMeteringRedis(ctx context.Context, mc *config.Metering) (redis.UniversalClient, error) {
	if mc.Redis != "" {
		return dialRedis(ctx, "metering.redis", mc.Redis)
	}
	opts := &redis.UniversalOptions{Addrs: mc.RedisAddrs, MasterName: mc.RedisMasterName,
		IsClusterMode: mc.RedisMasterName == "", Username: mc.RedisUsername, Password: mc.RedisPassword,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}}
	if mc.RedisTLS {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	c := redis.NewUniversalClient(opts)
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("metering.redis_addrs: %w", err)
	}
	return c, nil
}

// instanceName returns the name of this instance's journal checkpoint:
// from config, or made once and kept in the data directory.
func instanceName(cfg *config.Config) (string, error) {
	if cfg.Metering.Instance != "" {
		return cfg.Metering.Instance, nil
	}
	host, _ := os.Hostname()
	path := filepath.Join(cfg.DataDir, "instance")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	name := host + "-" + hex.EncodeToString(r[:])
	if err := os.WriteFile(path, []byte(name+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("instance name: %w", err)
	}
	return name, nil
}

// newMeter builds the meter the config asks for; nil when metering is off.
func (m *Server) newMeter(ctx context.Context, s *store.Store) (*metering.Ledger, error) {
	cfg := &m.Config
	if cfg.Metering.Disabled {
		return nil, nil
	}
	var counter metering.Counter = metering.NewMemory(s.Spent, nil)
	if cfg.Metering.SharedRedis() {
		rdb, err := dialMeteringRedis(ctx, &cfg.Metering)
		if err != nil {
			return nil, err
		}
		m.closers = append(m.closers, rdb)
		rc := metering.NewRedis(rdb, cfg.Metering.RedisPrefix, s.Spent)
		if cfg.Metering.LeaseTTL > 0 {
			rc = rc.WithLeases(cfg.Metering.LeaseTTL)
		}
		m.closers = append(m.closers, rc) // closed before the client: gives the leases back
		counter = rc
		sb := metering.NewSharedBounds(rdb, metering.SharedBoundsConfig{Prefix: cfg.Metering.RedisPrefix,
			Refuse: cfg.Metering.RedisUnreachable == config.RedisRefuse, Logger: m.log})
		m.closers = append(m.closers, sb) // closed before the client
		m.Bounds = sb
		m.tokens = admintoken.NewRedis(rdb, cfg.Metering.RedisPrefix)
	}
	mc := metering.Config{Counter: counter, Store: s, FlushInterval: cfg.Metering.FlushInterval, Logger: m.log}
	if cfg.DataDir != "" {
		name, err := instanceName(cfg)
		if err != nil {
			return nil, err
		}
		mc.JournalDir, mc.Instance = filepath.Join(cfg.DataDir, "ledger"), name
	}
	meter, err := metering.New(ctx, mc)
	if err != nil {
		return nil, err
	}
	go meter.Run()
	return meter, nil
}
