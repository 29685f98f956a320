// Package config reads Portico's YAML configuration. Loading goes
// DefaultConfig, then the file (with ${ENV} expansion and strict field
// checks), then Validate, which names the first bad field.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// Config is the whole configuration of `portico serve`.
type Config struct {
	// Listen is the shared listener; each network is found on it by Host.
	Listen string `yaml:"listen"`
	// DataDir holds persistent state (dev key, devnet chains). Empty means
	// nothing persists across restarts.
	DataDir string `yaml:"data_dir"`
	// Keys are API keys from config, imported into the key store at start
	// (by digest). With none and an empty store, serve makes a dev key.
	Keys []Key `yaml:"keys"`
	// Store is where API keys and usage history live.
	Store Store `yaml:"store"`
	// Metering charges calls in credits.
	Metering Metering `yaml:"metering"`
	// Admin is the admin HTTP API.
	Admin Admin `yaml:"admin"`
	// Limits bound what clients can make Portico do. The gateway runs
	// with this very value (portico.Limits is the one model of them).
	Limits portico.Limits `yaml:"limits"`
	// Cache bounds the cache of immutable results.
	Cache Cache `yaml:"cache"`
	// Networks are the networks served; none means one built-in network
	// per registered chain family.
	Networks []Network `yaml:"networks"`
	// Log sets the log output.
	Log Log `yaml:"log"`
	// Metrics is the Prometheus endpoint.
	Metrics Metrics `yaml:"metrics"`
	// Tracing sends OpenTelemetry traces.
	Tracing Tracing `yaml:"tracing"`
	// Webhooks are the keys' webhooks (docs/webhooks.md).
	Webhooks Webhooks `yaml:"webhooks"`
}

// Webhooks configures the delivery of webhooks (docs/webhooks.md).
type Webhooks struct {
	// AllowPrivateURLs lets webhook URLs reach loopback, link-local and
	// private addresses; off, such a URL is refused at each delivery.
	AllowPrivateURLs bool `yaml:"allow_private_urls"`
	// RetryFor is how long a failing delivery is retried before its
	// webhook is paused; 0 means one hour.
	RetryFor time.Duration `yaml:"retry_for"`
	// Timeout bounds one delivery attempt; 0 means 10s.
	Timeout time.Duration `yaml:"timeout"`
	// LeaseFor is how long an instance holds a webhook without renewing
	// its lease (how long a webhook waits after its instance died); 0
	// means 15s.
	LeaseFor time.Duration `yaml:"lease_for"`
}

// Metrics configures the Prometheus endpoint, /metrics.
type Metrics struct {
	// Disabled turns the endpoint off.
	Disabled bool `yaml:"disabled"`
	// Listen, when set, serves /metrics on a listener of its own instead
	// of the shared one, for operators whose shared listener is public
	// (the metrics name keys and nodes).
	Listen string `yaml:"listen"`
}

// Tracing configures OpenTelemetry traces. They are off unless Endpoint or
// the standard OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT)
// environment variable is set; OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none turn them off again.
type Tracing struct {
	// Endpoint is the OTLP/HTTP collector's URL, such as
	// http://127.0.0.1:4318 (traces go to /v1/traces under it).
	Endpoint string `yaml:"endpoint"`
	// SampleRatio is the share of traces started here that are kept,
	// from 0 to 1; a client's traceparent decides for its own traces.
	// Unset, OTEL_TRACES_SAMPLER decides, and without it every trace is
	// kept.
	SampleRatio *float64 `yaml:"sample_ratio"`
}

// Key is one API key: either the key itself (usually as ${ENV}) or its
// SHA-256 digest in hex, as `portico keys hash` prints it.
type Key struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
	Hash string `yaml:"hash"`
	// DailyCredits is the key's daily balance; 0 means
	// metering.default_daily_credits.
	DailyCredits int64 `yaml:"daily_credits"`
	// RatePerSecond bounds credits per second; 0 means no bound.
	RatePerSecond int64 `yaml:"rate_per_second"`

	// The key's allowlists and own rules (docs/keys.md), written to the
	// store at start and at each reload. A setting the file leaves out is
	// left as the store has it (set through the admin API, the CLI or the
	// dashboard); an empty list removes a restriction. A secret is not
	// set here: it is made by the store and shown once.
	AllowMethods      *[]string          `yaml:"allow_methods"`
	AllowNetworks     *[]string          `yaml:"allow_networks"`
	AllowOrigins      *[]string          `yaml:"allow_origins"`
	AllowAddresses    *[]string          `yaml:"allow_addresses"`
	AllowUserAgents   *[]string          `yaml:"allow_user_agents"`
	MaxConcurrent     *int               `yaml:"max_concurrent"`
	RequestsPerSecond *int               `yaml:"requests_per_second"`
	JWTKeys           *[]JWTKey          `yaml:"jwt_keys"`
	JWTAudience       *string            `yaml:"jwt_audience"`
	JWTMaxLifetime    *time.Duration     `yaml:"jwt_max_lifetime"`
	Logs              *portico.LogLimits `yaml:"logs"`
}

// JWTKey is a public key a key's JWTs may be signed with.
type JWTKey struct {
	// Name is the key id a token's kid header names.
	Name string `yaml:"name"`
	// PEM is the public key (RSA or EC P-256), PEM-encoded.
	PEM string `yaml:"pem"`
}

// APIKeys is the list as package apikey takes it.
func APIKeys(l []JWTKey) []apikey.JWTKey {
	out := make([]apikey.JWTKey, len(l))
	for i, k := range l {
		out[i] = apikey.JWTKey{Name: k.Name, PEM: k.PEM}
	}
	return out
}

// Store configures the key and usage store.
type Store struct {
	// Postgres is a PostgreSQL URL for instances that share one store.
	// Empty keeps an SQLite file, portico.db, in the data directory (in
	// memory when there is none).
	Postgres string `yaml:"postgres"`
	// KeyCacheTTL is how long an accepted key's settings are cached: a
	// revoke or a new balance takes effect within it.
	KeyCacheTTL time.Duration `yaml:"key_cache_ttl"`
}

// Metering configures credits, balances and rate limits.
type Metering struct {
	// Disabled turns metering off: calls are neither charged nor limited.
	Disabled bool `yaml:"disabled"`
	// Redis is a redis:// URL that instances share balances and rate
	// limits through. Empty keeps them in this process.
	Redis string `yaml:"redis"`
	// RedisAddrs, instead of Redis, names several Redis servers (host:port):
	// nodes of a Redis Cluster (some of them; the rest are found), or,
	// with RedisMasterName, the Sentinels that watch the master.
	RedisAddrs []string `yaml:"redis_addrs"`
	// RedisMasterName is the name of the master the Sentinels in
	// RedisAddrs watch (Sentinel); empty means RedisAddrs is a Cluster.
	RedisMasterName string `yaml:"redis_master_name"`
	// RedisUsername, RedisPassword and RedisTLS are what the servers of
	// RedisAddrs are reached with (a Redis URL carries its own).
	RedisUsername string `yaml:"redis_username"`
	RedisPassword string `yaml:"redis_password"`
	RedisTLS      bool   `yaml:"redis_tls"`
	// RedisPrefix starts every Redis key Portico writes.
	RedisPrefix string `yaml:"redis_prefix"`
	// LeaseTTL is the life of a lease: with Redis, each instance takes a
	// key's credits in blocks it spends in process, and gives back what
	// is left of a block after this long. 0 turns leases off: one Redis
	// script per charge (docs/metering.md, "Leases").
	LeaseTTL time.Duration `yaml:"lease_ttl"`
	// RedisUnreachable says how keys' bounds on calls, connections and
	// subscriptions hold while Redis does not answer: RedisPerInstance
	// (the default: each instance bounds them on its own) or
	// RedisRefuse (the calls of keys with bounds are refused).
	RedisUnreachable string `yaml:"redis_unreachable"`
	// FlushInterval is how often usage reaches the store.
	FlushInterval time.Duration `yaml:"flush_interval"`
	// DefaultDailyCredits is the balance of new keys that name none.
	DefaultDailyCredits int64 `yaml:"default_daily_credits"`
	// Instance names this instance's journal checkpoint in a shared store;
	// empty derives a stable name kept in the data directory.
	Instance string `yaml:"instance"`
}

// Values of Metering.RedisUnreachable.
const (
	RedisPerInstance = "per_instance"
	RedisRefuse      = "refuse"
)

// Admin configures the admin HTTP API on the shared listener (/admin/v1/).
type Admin struct {
	// Token is the bearer token of the admin API, usually
	// ${PORTICO_ADMIN_TOKEN}. Empty turns the API off.
	Token string `yaml:"token"`
}

// Cache configures the cache of answers, which follows each family's
// finality rules (docs/methods.md).
type Cache struct {
	// MaxBytes bounds this instance's cache; 0 turns caching off.
	MaxBytes uint64 `yaml:"max_bytes"`
	// HitDiscountPercent is the share of a call's cost given back when its
	// answer came from cache; 0 charges hits like misses.
	HitDiscountPercent int `yaml:"hit_discount_percent"`
	// Redis is a redis:// URL of a cache that many instances share (final
	// answers only, zstd-compressed); empty keeps the cache per instance.
	Redis string `yaml:"redis"`
	// RedisPrefix starts every key of the shared cache.
	RedisPrefix string `yaml:"redis_prefix"`
	// RedisTTL is how long a shared entry lives; RedisMaxEntryBytes bounds
	// one entry after compression.
	RedisTTL           time.Duration `yaml:"redis_ttl"`
	RedisMaxEntryBytes int           `yaml:"redis_max_entry_bytes"`
	// CoalesceDisabled sends every cacheable read to a node, even when an
	// identical one is already on its way (docs/methods.md, "Coalescing").
	CoalesceDisabled bool `yaml:"coalesce_disabled"`
}

// Log configures logging.
type Log struct {
	// Level is debug, info, warn or error.
	Level string `yaml:"level"`
	// Format is text or json.
	Format string `yaml:"format"`
	// AccessSample is the share of calls given an access-log line at
	// info level, from 0 to 1; calls that failed are always logged. The
	// default, 1, logs every call.
	AccessSample float64 `yaml:"access_sample"`
}

// Network is one served network.
type Network struct {
	// Name identifies the network and gives its default host,
	// <name>.localhost.
	Name string `yaml:"name"`
	// Family selects the method table and devnet: a registered family
	// (solana, evm, starknet).
	Family portico.Family `yaml:"family"`
	// Hosts are the Host names that select the network on the shared
	// listener.
	Hosts []string `yaml:"hosts"`
	// Listen is the network's own listener; "off" disables it.
	Listen string `yaml:"listen"`
	// Upstreams are the nodes, in order of preference. With none, an
	// embedded devnet serves the network where the family has one.
	Upstreams []Upstream `yaml:"upstreams"`
	// Methods replaces the family's default allowlist of forwarded methods
	// when set.
	Methods []string `yaml:"methods"`
	// Enable adds to the allowlist: a method group the family keeps off
	// by default (evm: accounts, debug, trace, txpool), or a method by
	// name.
	Enable []string `yaml:"enable"`
	// Costs overrides credit costs by method name.
	Costs map[string]int `yaml:"costs"`
	// DefaultCost is the cost of allowlisted methods without a row; 0 keeps
	// the family default.
	DefaultCost int `yaml:"default_cost"`
	// NotificationCosts overrides the credit cost of each notification a
	// subscriber receives, by subscription kind (newHeads, logs, slot…);
	// the cost of subscribing is in Costs under the subscribe method.
	NotificationCosts map[string]int `yaml:"notification_costs"`
	// Timeout bounds a call including failover; AttemptTimeout one node.
	Timeout        time.Duration `yaml:"timeout"`
	AttemptTimeout time.Duration `yaml:"attempt_timeout"`
	// ChainID is the chain every node must be on (an EVM chain id such as
	// "0x1", the slot chain's genesis hash, the rollup's chain id); a node
	// on another chain gets no calls. Empty means the chain most nodes
	// report.
	ChainID string `yaml:"chain_id"`
	// MaxLag is how many blocks (slots) behind the best node a node may be
	// and still get calls about the newest blocks; 0 keeps the family's
	// default (evm 10, solana 50, starknet 5).
	MaxLag uint64 `yaml:"max_lag"`
	// PollInterval is how often each node's heads are read; 0 keeps the
	// family's default (evm and solana 1s, starknet 2s).
	PollInterval time.Duration `yaml:"poll_interval"`
	// Hedge configures hedged reads.
	Hedge Hedge `yaml:"hedge"`
	// Broadcast says where signed transactions go: [all] (the default:
	// every node that serves the method, at once), [first] (one node, as
	// any call), or the names of the upstreams to send them to (a private
	// relay alone, say).
	Broadcast []string `yaml:"broadcast"`
	// Transactions configures how the network follows the transactions
	// it sends (docs/nodes.md).
	Transactions Transactions `yaml:"transactions"`
	// Devnet configures the embedded devnet used when there are no
	// upstreams.
	Devnet Devnet `yaml:"devnet"`
	// Logs bounds, splits and prices the network's log queries
	// (eth_getLogs, starknet_getEvents): docs/logs.md.
	Logs Logs `yaml:"logs"`
	// Verify checks nodes' answers against trusted headers: off (the
	// default), on (check what can be checked, pass the rest on marked
	// unverified) or strict (refuse what cannot be checked). EVM networks
	// only (docs/verify.md).
	Verify string `yaml:"verify"`
	// VerifyQuorum is how many nodes must report the same hash at a
	// height for it to be trusted; 0 means a majority of the network's
	// nodes, at least 2 where there are 2 or more.
	VerifyQuorum int `yaml:"verify_quorum"`
	// VerifyCheckpoint is a block hash trusted for good (a finalized
	// block from a source the operator trusts), with its ancestors.
	VerifyCheckpoint string `yaml:"verify_checkpoint"`
}

// Transactions configures how a network follows the signed transactions
// it sends for its clients.
type Transactions struct {
	// SyncTimeout is how long eth_sendRawTransactionSync waits for the
	// receipt when the client names no timeout (default 20s);
	// SyncTimeoutMax bounds the timeout a client may name (default 50s,
	// below limits.write_timeout).
	SyncTimeout    time.Duration `yaml:"sync_timeout"`
	SyncTimeoutMax time.Duration `yaml:"sync_timeout_max"`
	// ResendAfter is how long a transaction Portico keeps goes unchecked
	// before it is sent again if it has not landed and no node holds it
	// (default 15s).
	ResendAfter time.Duration `yaml:"resend_after"`
}

// Logs configures a network's log queries: portico.LogSettings, each field
// left out keeping its default (portico.DefaultLogSettings); a bound set to
// 0 is off.
type Logs struct {
	portico.LogSettings
	set bool
}

// logsFields are the members a logs block may have.
var logsFields = []string{"max_block_range", "max_addresses", "max_topics", "max_logs", "node_range", "parallel", "cost", "cost_blocks", "cost_per_log"}

// UnmarshalYAML decodes a logs block over the defaults, refusing members
// it does not know as the rest of the file does.
func (l *Logs) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(v.Content); i += 2 {
			if k := v.Content[i]; !slices.Contains(logsFields, k.Value) {
				return fmt.Errorf("line %d: field %s not found in type config.Logs", k.Line, k.Value)
			}
		}
	}
	s := portico.DefaultLogSettings()
	if err := v.Decode(&s); err != nil {
		return err
	}
	l.LogSettings, l.set = s, true
	return nil
}

// LogsOf is a logs block that says s in full, as a config built in code
// (tests, tools) sets it.
func LogsOf(s portico.LogSettings) Logs { return Logs{LogSettings: s, set: true} }

// Settings returns the network's log settings: the defaults when its
// config has no logs block.
func (l Logs) Settings() portico.LogSettings {
	if !l.set {
		return portico.DefaultLogSettings()
	}
	return l.LogSettings
}

// Hedge configures hedged reads: a read with no answer after the first
// node's p95 latency (within [min_delay, max_delay]) is also sent to the
// next node; the first good answer wins.
type Hedge struct {
	Disabled bool          `yaml:"disabled"`
	MinDelay time.Duration `yaml:"min_delay"`
	MaxDelay time.Duration `yaml:"max_delay"`
}

// Devnet configures an embedded devnet.
type Devnet struct {
	// Disabled turns the embedded devnet off; calls then fail with "no
	// upstream".
	Disabled bool `yaml:"disabled"`
	// BlockPeriod is the time between blocks (slots for the solana
	// family); zero keeps the devnet's default: 400ms for solana, 2s for
	// evm, 3s for starknet.
	BlockPeriod time.Duration `yaml:"block_period"`
	// KeepSlots is how many recent slots the solana devnet keeps before
	// ledger cleanup; zero means 4096.
	KeepSlots uint64 `yaml:"keep_slots"`
	// Traffic makes the devnet send transactions of every type.
	Traffic *bool `yaml:"traffic"`
	// Accounts is the number of prefunded dev accounts.
	Accounts int `yaml:"accounts"`
	// Genesis and ChainRLP start the EVM devnet from a genesis file and
	// import a chain.
	Genesis  string `yaml:"genesis"`
	ChainRLP string `yaml:"chain_rlp"`
}

// Bounds on settings that would hurt the nodes or the process
// (docs/configuration.md says why each is where it is).
const (
	// MinPollInterval is the shortest poll_interval: each poll asks
	// every node of the network for its heads (a few calls), so 50ms is
	// at most 20 polls a second per node, several per block on the
	// fastest EVM chains (250ms blocks), where 1ns made a node take
	// 23,700 calls a second.
	MinPollInterval = 50 * time.Millisecond
	// MaxBatchCeiling bounds limits.max_batch: the calls of a batch are
	// checked and charged as one unit and its answers assembled in one
	// response, so one request of 10,000 calls already holds 10,000
	// node calls' worth of work and memory; 100 times the default.
	MaxBatchCeiling = 10_000
	// MaxLogsParallel bounds logs.parallel, the chunks of one log query
	// at the nodes at once: each is a node call and a connection, and
	// 64 is 16 times the default, more than a network's nodes take at
	// once from one client.
	MaxLogsParallel = 64
)

// DefaultListen is the shared listener's default address. The built-in
// networks' own listeners take the next ports.
const DefaultListen = "127.0.0.1:8700"

// DefaultConfig returns the configuration `portico serve` runs with when no
// file is given. It names no networks: a config without networks serves
// one built-in network per registered chain family (see package
// families), which the caller fills in.
func DefaultConfig() Config {
	return Config{
		Listen:   DefaultListen,
		Limits:   portico.DefaultLimits(),
		Cache:    Cache{MaxBytes: 64 << 20, RedisPrefix: "portico:cache:", RedisTTL: 24 * time.Hour, RedisMaxEntryBytes: 1 << 20},
		Log:      Log{Level: "info", Format: "text", AccessSample: 1},
		Store:    Store{KeyCacheTTL: 5 * time.Second},
		Metering: Metering{FlushInterval: time.Second, DefaultDailyCredits: 3_000_000, RedisPrefix: "portico:", LeaseTTL: 2 * time.Second, RedisUnreachable: RedisPerInstance},
	}
}

// Load reads a config file over the defaults. Relative paths in it
// (data_dir, each devnet's genesis and chain_rlp) are taken from the
// file's folder, not the working directory: a config means the same
// wherever portico is started from.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	cfg, err := Parse(data, os.LookupEnv)
	if err != nil {
		return Config{}, err
	}
	cfg.resolvePaths(filepath.Dir(path))
	return cfg, nil
}

// resolvePaths makes the config's relative paths relative to dir.
func (c *Config) resolvePaths(dir string) {
	at := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	at(&c.DataDir)
	for i := range c.Networks {
		at(&c.Networks[i].Devnet.Genesis)
		at(&c.Networks[i].Devnet.ChainRLP)
	}
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Parse decodes YAML over DefaultConfig. ${NAME} is replaced by the
// environment variable NAME, and an unset variable is an error. Unknown
// fields are errors. Paths are kept as written (Load resolves them
// against the file's folder).
func Parse(data []byte, lookup func(string) (string, bool)) (Config, error) {
	var missing []string
	data = envRef.ReplaceAllFunc(data, func(m []byte) []byte {
		name := string(envRef.FindSubmatch(m)[1])
		v, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		return []byte(v)
	})
	if len(missing) > 0 {
		return Config{}, fmt.Errorf("config: environment variable %s is not set", strings.Join(missing, ", "))
	}
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, errEOF) {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// errEOF is what the decoder returns for an empty document.
var errEOF = func() error {
	var v struct{}
	return yaml.NewDecoder(bytes.NewReader(nil)).Decode(&v)
}()

// Validate checks every field that can be checked without knowing the
// chain families, and names the first bad one. The family of each network,
// and the method names in its costs and methods, are checked against the
// family registry by the caller (portico's config check).
func (c *Config) Validate() error {
	if err := checkAddr("listen", c.Listen); err != nil {
		return err
	}
	keyNames := map[string]int{}
	keyHashes := map[apikey.Hash]int{}
	for i, k := range c.Keys {
		field := fmt.Sprintf("keys[%d]", i)
		if k.Name == "" {
			return fmt.Errorf("config: %s.name: required", field)
		}
		if err := keyError(field, apikey.CheckName(k.Name)); err != nil {
			return err
		}
		if j, ok := keyNames[k.Name]; ok {
			return fmt.Errorf("config: %s.name: %q is also the name of keys[%d]", field, k.Name, j)
		}
		keyNames[k.Name] = i
		switch {
		case (k.Key == "") == (k.Hash == ""):
			return fmt.Errorf("config: %s: set exactly one of key and hash", field)
		case k.Hash != "":
			if _, err := apikey.ParseHash(k.Hash); err != nil {
				return fmt.Errorf("config: %s.hash: %v", field, err)
			}
		}
		h, _ := apikey.ParseHash(k.Hash)
		if k.Key != "" {
			h = apikey.Sum(k.Key)
		}
		if j, ok := keyHashes[h]; ok {
			return fmt.Errorf("config: %s: the same key as keys[%d]", field, j)
		}
		keyHashes[h] = i
		switch {
		case k.Key != "" && !apikey.Valid(k.Key):
			return fmt.Errorf("config: %s.key: must be %d to %d characters of [0-9A-Za-z_-]", field, apikey.MinLength, apikey.MaxLength)
		case k.DailyCredits < 0:
			return fmt.Errorf("config: %s.daily_credits: must not be negative", field)
		case k.RatePerSecond < 0:
			return fmt.Errorf("config: %s.rate_per_second: must not be negative", field)
		}
		if err := checkKeyRules(field, &k); err != nil {
			return err
		}
	}
	if c.Store.KeyCacheTTL <= 0 {
		return errors.New("config: store.key_cache_ttl: must be positive")
	}
	if c.Metering.FlushInterval <= 0 {
		return errors.New("config: metering.flush_interval: must be positive")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"retry_for", c.Webhooks.RetryFor}, {"timeout", c.Webhooks.Timeout}, {"lease_for", c.Webhooks.LeaseFor}} {
		if d.v < 0 {
			return errors.New("config: webhooks." + d.name + ": must not be negative")
		}
	}
	if c.Metering.DefaultDailyCredits < 0 {
		return errors.New("config: metering.default_daily_credits: must not be negative")
	}
	if u := c.Metering.Redis; u != "" && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") && !strings.HasPrefix(u, "unix://") {
		return errors.New("config: metering.redis: want a redis://, rediss:// or unix:// URL")
	}
	if err := c.Metering.checkRedis(); err != nil {
		return err
	}
	if u := c.Metering.RedisUnreachable; u != RedisPerInstance && u != RedisRefuse {
		return fmt.Errorf("config: metering.redis_unreachable: want %s or %s, not %q", RedisPerInstance, RedisRefuse, u)
	}
	if strings.Contains(c.Metering.RedisPrefix, "{") {
		return errors.New("config: metering.redis_prefix: must not hold '{' (each key's Redis keys carry a hash tag of their own)")
	}
	if u := c.Cache.Redis; u != "" && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") && !strings.HasPrefix(u, "unix://") {
		return errors.New("config: cache.redis: want a redis://, rediss:// or unix:// URL")
	}
	if p := c.Cache.HitDiscountPercent; p < 0 || p > 100 {
		return errors.New("config: cache.hit_discount_percent: must be 0 to 100")
	}
	if u := c.Store.Postgres; u != "" && !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
		return errors.New("config: store.postgres: want a postgres:// URL")
	}
	if t := c.Admin.Token; t != "" && len(t) < 16 {
		return errors.New("config: admin.token: use at least 16 characters")
	}
	l := c.Limits
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"limits.max_body_bytes", l.MaxBodyBytes},
		{"limits.max_batch", int64(l.MaxBatch)},
		{"limits.max_ws_message_bytes", l.MaxWSMessageBytes},
		{"limits.max_connections", int64(l.MaxConnections)},
		{"limits.max_ws_connections", int64(l.MaxWSConnections)},
		{"limits.max_batch_response_bytes", l.MaxBatchResponseBytes},
		{"limits.max_result_bytes", l.MaxResultBytes},
		{"limits.max_subscriptions_per_connection", int64(l.MaxSubscriptionsPerConnection)},
		{"limits.max_subscriptions_per_key", int64(l.MaxSubscriptionsPerKey)},
		{"limits.max_notification_queue", int64(l.MaxNotificationQueue)},
		{"limits.max_resume_blocks", int64(l.MaxResumeBlocks)},
		{"limits.read_timeout", int64(l.ReadTimeout)},
		{"limits.header_timeout", int64(l.HeaderTimeout)},
		{"limits.write_timeout", int64(l.WriteTimeout)},
		{"limits.idle_timeout", int64(l.IdleTimeout)},
		{"limits.ws_idle_timeout", int64(l.WSIdleTimeout)},
	} {
		if f.v <= 0 {
			return fmt.Errorf("config: %s: must be positive", f.name)
		}
	}
	if l.MaxBatch > MaxBatchCeiling {
		return fmt.Errorf("config: limits.max_batch: at most %d, got %d: a batch is checked, charged and answered as one request", MaxBatchCeiling, l.MaxBatch)
	}
	if l.MaxConnectionsPerIP < 0 {
		return errors.New("config: limits.max_connections_per_ip: must not be negative")
	}
	if l.MaxWSConnectionsPerKey < 0 {
		return errors.New("config: limits.max_ws_connections_per_key: must not be negative")
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"limits.memory_bytes", l.MemoryBytes},
		{"limits.key_memory_bytes", l.KeyMemoryBytes},
		{"limits.connection_memory_bytes", l.ConnectionMemoryBytes},
	} {
		if f.v < 0 {
			return fmt.Errorf("config: %s: must not be negative", f.name)
		}
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("config: log.level: %q is not one of debug, info, warn, error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return fmt.Errorf("config: log.format: %q is not one of text, json", c.Log.Format)
	}
	if c.Log.AccessSample < 0 || c.Log.AccessSample > 1 {
		return fmt.Errorf("config: log.access_sample: %v is not from 0 to 1", c.Log.AccessSample)
	}
	if c.Metrics.Listen != "" {
		if err := checkAddr("metrics.listen", c.Metrics.Listen); err != nil {
			return err
		}
	}
	if r := c.Tracing.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		return fmt.Errorf("config: tracing.sample_ratio: %v is not from 0 to 1", *r)
	}
	if e := c.Tracing.Endpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: tracing.endpoint: %q is not an http or https URL", e)
		}
	}
	names := map[string]bool{}
	hosts := map[string]string{}
	for i, n := range c.Networks {
		field := fmt.Sprintf("networks[%d]", i)
		if !validName(n.Name) {
			return fmt.Errorf("config: %s.name: %q must be lower-case letters, digits and dashes", field, n.Name)
		}
		if names[n.Name] {
			return fmt.Errorf("config: %s.name: %q is used twice", field, n.Name)
		}
		names[n.Name] = true
		if n.Family == "" {
			return fmt.Errorf("config: %s.family: required", field)
		}
		for _, h := range n.HostNames() {
			if other, ok := hosts[h]; ok {
				return fmt.Errorf("config: %s.hosts: %q is also a host of %s", field, h, other)
			}
			hosts[h] = n.Name
		}
		if n.Listen != "" && n.Listen != "off" {
			if err := checkAddr(field+".listen", n.Listen); err != nil {
				return err
			}
		}
		if err := checkUpstreams(field, n); err != nil {
			return err
		}
		for m, cost := range n.Costs {
			if cost < 0 {
				return fmt.Errorf("config: %s.costs.%s: must not be negative", field, m)
			}
		}
		for kind, cost := range n.NotificationCosts {
			if cost < 0 {
				return fmt.Errorf("config: %s.notification_costs.%s: must not be negative", field, kind)
			}
		}
		if n.DefaultCost < 0 {
			return fmt.Errorf("config: %s.default_cost: must not be negative", field)
		}
		if n.Timeout < 0 || n.AttemptTimeout < 0 {
			return fmt.Errorf("config: %s.timeout: must not be negative", field)
		}
		if n.PollInterval < 0 || (n.PollInterval > 0 && n.PollInterval < MinPollInterval) {
			return fmt.Errorf("config: %s.poll_interval: want 0 (the family's default) or at least %s, got %s: each poll asks every node for its heads", field, MinPollInterval, n.PollInterval)
		}
		if n.Hedge.MinDelay < 0 || n.Hedge.MaxDelay < 0 || (n.Hedge.MaxDelay > 0 && n.Hedge.MaxDelay < n.Hedge.MinDelay) {
			return fmt.Errorf("config: %s.hedge: delays must not be negative and max_delay not below min_delay", field)
		}
		if err := checkLogs(field+".logs", n.Logs.Settings()); err != nil {
			return err
		}
		if err := checkVerify(field, &n); err != nil {
			return err
		}
	}
	return nil
}

// HostNames returns the Host names of the network, lower-cased, with the
// default <name>.localhost when none is configured.
func (n *Network) HostNames() []string {
	if len(n.Hosts) == 0 {
		return []string{n.Name + ".localhost"}
	}
	out := make([]string, len(n.Hosts))
	for i, h := range n.Hosts {
		out[i] = strings.ToLower(h)
	}
	return out
}

// ListenAddr returns the network's own listener address given its index:
// the configured one, or the shared listener's port plus index+1 (port 0
// stays 0, so tests get free ports). It returns "" when the network has no
// listener of its own.
func (c *Config) ListenAddr(i int) string {
	n := c.Networks[i]
	switch n.Listen {
	case "off":
		return ""
	case "":
	default:
		return n.Listen
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return ""
	}
	p, err := strconv.Atoi(port)
	if err != nil || p == 0 {
		return net.JoinHostPort(host, "0")
	}
	return net.JoinHostPort(host, strconv.Itoa(p+i+1))
}

func validName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func checkAddr(field, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("config: %s: %q is not host:port", field, addr)
	}
	_ = host
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("config: %s: port %q is not 0 to 65535", field, port)
	}
	return nil
}

// checkLogs checks a network's log settings.
func checkLogs(field string, l portico.LogSettings) error {
	switch {
	case l.MaxAddresses < 0 || l.MaxTopics < 0 || l.MaxLogs < 0:
		return fmt.Errorf("config: %s: max_addresses, max_topics and max_logs must not be negative", field)
	case l.Parallel < 1 || l.Parallel > MaxLogsParallel:
		return fmt.Errorf("config: %s.parallel: want 1 to %d chunks of one query at the nodes at once, got %d", field, MaxLogsParallel, l.Parallel)
	case l.Cost != portico.LogCostCall && l.Cost != portico.LogCostRange && l.Cost != portico.LogCostLogs:
		return fmt.Errorf("config: %s.cost: want call, range or logs, got %q", field, l.Cost)
	case l.Cost == portico.LogCostRange && l.CostBlocks == 0:
		return fmt.Errorf("config: %s.cost_blocks: must be at least 1 with cost: range", field)
	case l.CostPerLog < 0:
		return fmt.Errorf("config: %s.cost_per_log: must not be negative", field)
	}
	return nil
}

// checkKeyRules checks a config key's own rules with the checks the store
// runs when the key is imported (apikey.Settings.Check), so that a file
// `portico config check` passes is not refused at start or reload.
func checkKeyRules(field string, k *Key) error {
	var jwtKeys *[]apikey.JWTKey
	if k.JWTKeys != nil {
		keys := APIKeys(*k.JWTKeys)
		jwtKeys = &keys
	}
	err := apikey.Settings{AllowAddresses: k.AllowAddresses, AllowUserAgents: k.AllowUserAgents,
		MaxConcurrent: k.MaxConcurrent, RequestsPerSecond: k.RequestsPerSecond,
		JWTKeys: jwtKeys, JWTMaxLifetime: k.JWTMaxLifetime, JWTAudience: k.JWTAudience, Logs: k.Logs}.Check()
	return keyError(field, err)
}

// keyError names a key setting's field under the key's.
func keyError(field string, err error) error {
	var se *apikey.SettingError
	if errors.As(err, &se) {
		return fmt.Errorf("config: %s.%s: %s", field, se.Field, se.Reason)
	}
	return err
}

// SharedRedis reports whether instances share balances through Redis.
func (m *Metering) SharedRedis() bool { return m.Redis != "" || len(m.RedisAddrs) > 0 }

// checkRedis checks the Redis fields of metering.
func (m *Metering) checkRedis() error {
	switch {
	case m.Redis != "" && len(m.RedisAddrs) > 0:
		return errors.New("config: metering.redis_addrs: set redis or redis_addrs, not both")
	case m.RedisMasterName != "" && len(m.RedisAddrs) == 0:
		return errors.New("config: metering.redis_master_name: needs the Sentinels in redis_addrs")
	case m.LeaseTTL < 0 || m.LeaseTTL > 0 && m.LeaseTTL < 100*time.Millisecond:
		return errors.New("config: metering.lease_ttl: 0 (no leases) or at least 100ms")
	}
	for i, a := range m.RedisAddrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return fmt.Errorf("config: metering.redis_addrs[%d]: want host:port", i)
		}
	}
	return nil
}
