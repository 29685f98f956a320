// Package store keeps API keys (hashed) and per-day usage history in SQL:
// an SQLite file by default (pure-Go driver, nothing to install) or
// PostgreSQL (pgx) when several gateway instances share one store. Both
// backends run the same queries and the same migrations, applied at Open.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store/sqldb"
)

// Errors returned by the store.
var (
	// ErrNotFound: no active key has that name (or id).
	ErrNotFound = errors.New("store: key not found")
	// ErrNameTaken: an active key already has that name.
	ErrNameTaken = errors.New("store: an active key already has that name")
)

// InputError reports a bad value for a key's field.
type InputError struct {
	Field  string
	Reason string
}

// Error names the field.
func (e *InputError) Error() string { return "store: " + e.Field + ": " + e.Reason }

// Key is one API key as stored: its digest, never the key itself.
type Key struct {
	ID   int64
	Name string
	Hash apikey.Hash
	// DailyCredits is the balance granted each UTC day.
	DailyCredits int64
	// RatePerSecond bounds credits spent per second; 0 means no bound.
	RatePerSecond int64
	// AllowMethods, AllowNetworks and AllowOrigins restrict the key; empty
	// means no restriction. Origins may start with "*." to match a domain
	// and its subdomains.
	AllowMethods  []string
	AllowNetworks []string
	AllowOrigins  []string
	// Rules are the key's own settings beyond these (issue 26).
	Rules     Rules
	CreatedAt time.Time
	// RevokedAt is zero for an active key.
	RevokedAt time.Time
	// NewSecret is the key's secret, set only in what Create returns when
	// KeySpec.WithSecret asked for one; it is not kept and cannot be shown
	// again.
	NewSecret string
}

// Active reports whether the key has not been revoked.
func (k Key) Active() bool { return k.RevokedAt.IsZero() }

// KeySpec is the settings of a key to create: what Create needs.
type KeySpec struct {
	Name          string
	DailyCredits  int64
	RatePerSecond int64
	AllowMethods  []string
	AllowNetworks []string
	AllowOrigins  []string
	// Secret, if set, is stored instead of a generated key (used to import
	// keys from config files). It must pass apikey.Check.
	Secret string
	// Rules are the key's own settings beyond these; their secret digests
	// are ignored (see WithSecret).
	Rules Rules
	// WithSecret gives the key a generated secret, returned once in
	// Key.NewSecret.
	WithSecret bool
}

// Patch changes some settings of a key; nil fields stay as they are.
type Patch struct {
	DailyCredits  *int64
	RatePerSecond *int64
	AllowMethods  *[]string
	AllowNetworks *[]string
	AllowOrigins  *[]string
	// Rules changes the key's own settings (issue 26); secrets change
	// through RotateSecret and RemoveSecret.
	Rules RulesPatch
}

// Usage is what one key spent on one method on one UTC day.
type Usage struct {
	// Day is the UTC date, YYYY-MM-DD.
	Day     string
	KeyID   int64
	KeyName string
	Method  string
	Calls   int64
	Credits int64
}

// UsageFilter selects usage rows; zero fields select everything.
type UsageFilter struct {
	KeyID int64
	// From and To are inclusive UTC dates, YYYY-MM-DD.
	From, To string
}

// Store is a key and usage store over one SQL database.
type Store struct {
	db      *sql.DB
	dialect sqldb.Dialect
	now     func() time.Time
	// hookMu serializes this process's webhook writes on SQLite, whose
	// one writer otherwise has many goroutines wait in its busy handler,
	// which sleeps (webhooks.go).
	hookMu sync.Mutex
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock used for created and revoked times.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// Ping checks that the database answers, for readiness checks.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Backend names the database behind the store: "sqlite" or "postgres".
func (s *Store) Backend() string { return s.dialect.Name }

// validName reports whether a key name is usable (apikey.CheckName).
func validName(name string) error { return inputError(apikey.CheckName(name)) }

// CreateFirst stores a key known by its digest only if the store holds no
// key at all, active or revoked, and reports whether it did. Of instances
// that race on an empty store, exactly one creates its key.
func (s *Store) CreateFirst(ctx context.Context, name string, h apikey.Hash, daily, rate int64) (bool, error) {
	if err := validName(name); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, s.dialect.Rebind(`INSERT INTO api_keys (name, hash, daily_credits, rate_per_second, created_at)
		SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT)
		WHERE NOT EXISTS (SELECT 1 FROM api_keys) ON CONFLICT DO NOTHING`),
		name, h.String(), daily, rate, s.now().UnixMilli())
	if err != nil {
		return false, fmt.Errorf("store: create key %q: %w", name, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Create stores a new key and returns it with the key itself, which is not
// kept and cannot be shown again.
func (s *Store) Create(ctx context.Context, nk KeySpec) (Key, string, error) {
	if err := validName(nk.Name); err != nil {
		return Key{}, "", err
	}
	if nk.DailyCredits < 0 {
		return Key{}, "", &InputError{"daily_credits", "must not be negative"}
	}
	if nk.RatePerSecond < 0 {
		return Key{}, "", &InputError{"rate_per_second", "must not be negative"}
	}
	secret := nk.Secret
	if secret == "" {
		secret = apikey.Generate()
	} else if err := apikey.Check(secret); err != nil {
		return Key{}, "", &InputError{"key", err.Error()}
	}
	k := Key{
		Name: nk.Name, Hash: apikey.Sum(secret), DailyCredits: nk.DailyCredits, RatePerSecond: nk.RatePerSecond,
		AllowMethods: nk.AllowMethods, AllowNetworks: nk.AllowNetworks, AllowOrigins: nk.AllowOrigins,
		Rules:     nk.Rules,
		CreatedAt: s.now().UTC().Truncate(time.Millisecond),
	}
	k.Rules.SecretHash, k.Rules.PrevSecretHash, k.Rules.PrevSecretUntil = "", "", time.Time{}
	if err := k.Rules.check(); err != nil {
		return Key{}, "", err
	}
	if nk.WithSecret {
		k.NewSecret = apikey.GenerateSecret()
		k.Rules.SecretHash = apikey.SumSecret(k.NewSecret).String()
	}
	err := s.db.QueryRowContext(ctx, s.dialect.Rebind(`INSERT INTO api_keys
		(name, hash, daily_credits, rate_per_second, allow_methods, allow_networks, allow_origins, rules, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		k.Name, k.Hash.String(), k.DailyCredits, k.RatePerSecond,
		encodeList(k.AllowMethods), encodeList(k.AllowNetworks), encodeList(k.AllowOrigins), encodeRules(k.Rules), k.CreatedAt.UnixMilli(),
	).Scan(&k.ID)
	if err != nil {
		if sqldb.IsUnique(err) {
			if strings.Contains(err.Error(), "hash") {
				return Key{}, "", errors.New("store: that key is already stored")
			}
			return Key{}, "", fmt.Errorf("%w: %q", ErrNameTaken, nk.Name)
		}
		return Key{}, "", fmt.Errorf("store: create key: %w", err)
	}
	return k, secret, nil
}

const keyColumns = `id, name, hash, daily_credits, rate_per_second, allow_methods, allow_networks, allow_origins, rules, created_at, revoked_at`

func scanKey(row interface{ Scan(...any) error }) (Key, error) {
	var (
		k                         Key
		hash, methods, nets, orig string
		rules                     string
		created                   int64
		revoked                   sql.NullInt64
	)
	if err := row.Scan(&k.ID, &k.Name, &hash, &k.DailyCredits, &k.RatePerSecond, &methods, &nets, &orig, &rules, &created, &revoked); err != nil {
		return Key{}, err
	}
	h, err := apikey.ParseHash(hash)
	if err != nil {
		return Key{}, fmt.Errorf("store: key %d: %w", k.ID, err)
	}
	k.Hash = h
	for _, l := range []struct {
		dst *[]string
		src string
	}{{&k.AllowMethods, methods}, {&k.AllowNetworks, nets}, {&k.AllowOrigins, orig}} {
		// A list that does not decode must not turn into "no restriction".
		if *l.dst, err = decodeList(l.src); err != nil {
			return Key{}, fmt.Errorf("store: key %d: allowlist: %w", k.ID, err)
		}
	}
	// Rules that do not decode must not turn into "no restriction" either.
	if k.Rules, err = decodeRules(rules); err != nil {
		return Key{}, fmt.Errorf("store: key %d: rules: %w", k.ID, err)
	}
	k.CreatedAt = time.UnixMilli(created).UTC()
	if revoked.Valid {
		k.RevokedAt = time.UnixMilli(revoked.Int64).UTC()
	}
	return k, nil
}

// ByHash returns the key with that digest, active or revoked.
func (s *Store) ByHash(ctx context.Context, h apikey.Hash) (Key, error) {
	k, err := scanKey(s.db.QueryRowContext(ctx, s.dialect.Rebind(`SELECT `+keyColumns+` FROM api_keys WHERE hash = ?`), h.String()))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, ErrNotFound
	}
	return k, err
}

// Get returns the active key with that name.
func (s *Store) Get(ctx context.Context, name string) (Key, error) {
	k, err := scanKey(s.db.QueryRowContext(ctx, s.dialect.Rebind(`SELECT `+keyColumns+` FROM api_keys WHERE name = ? AND revoked_at IS NULL`), name))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return k, err
}

// List returns the keys by id; revoked ones only when asked.
func (s *Store) List(ctx context.Context, withRevoked bool) ([]Key, error) {
	q := `SELECT ` + keyColumns + ` FROM api_keys`
	if !withRevoked {
		q += ` WHERE revoked_at IS NULL`
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: list keys: %w", err)
	}
	defer rows.Close()
	var keys []Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// Revoke revokes the active key with that name. A revoked key keeps its
// usage history; its name can be given to a new key.
func (s *Store) Revoke(ctx context.Context, name string) (Key, error) {
	k, err := scanKey(s.db.QueryRowContext(ctx, s.dialect.Rebind(`UPDATE api_keys SET revoked_at = ?
		WHERE name = ? AND revoked_at IS NULL RETURNING `+keyColumns), s.now().UnixMilli(), name))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return k, err
}

// Update changes the settings of the active key with that name.
func (s *Store) Update(ctx context.Context, name string, p Patch) (Key, error) {
	var (
		sets []string
		args []any
	)
	if p.DailyCredits != nil {
		if *p.DailyCredits < 0 {
			return Key{}, &InputError{"daily_credits", "must not be negative"}
		}
		sets, args = append(sets, "daily_credits = ?"), append(args, *p.DailyCredits)
	}
	if p.RatePerSecond != nil {
		if *p.RatePerSecond < 0 {
			return Key{}, &InputError{"rate_per_second", "must not be negative"}
		}
		sets, args = append(sets, "rate_per_second = ?"), append(args, *p.RatePerSecond)
	}
	for col, l := range map[string]*[]string{"allow_methods": p.AllowMethods, "allow_networks": p.AllowNetworks, "allow_origins": p.AllowOrigins} {
		if l != nil {
			sets, args = append(sets, col+" = ?"), append(args, encodeList(*l))
		}
	}
	if !p.Rules.empty() {
		if len(sets) > 0 {
			if _, err := s.Update(ctx, name, Patch{DailyCredits: p.DailyCredits, RatePerSecond: p.RatePerSecond,
				AllowMethods: p.AllowMethods, AllowNetworks: p.AllowNetworks, AllowOrigins: p.AllowOrigins}); err != nil {
				return Key{}, err
			}
		}
		return s.changeRules(ctx, name, func(r *Rules) error { p.Rules.apply(r); return nil })
	}
	if len(sets) == 0 {
		return s.Get(ctx, name)
	}
	args = append(args, name)
	k, err := scanKey(s.db.QueryRowContext(ctx, s.dialect.Rebind(`UPDATE api_keys SET `+strings.Join(sets, ", ")+`
		WHERE name = ? AND revoked_at IS NULL RETURNING `+keyColumns), args...))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return k, err
}

// AddUsage adds usage rows (deltas, summed into what is there) and moves
// instance's ledger checkpoint to seq, in one transaction: after a crash
// the ledger replays exactly the records past the checkpoint.
func (s *Store) AddUsage(ctx context.Context, rows []Usage, instance string, seq int64) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: add usage: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, s.dialect.Rebind(`INSERT INTO usage (day, key_id, method, calls, credits) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (day, key_id, method) DO UPDATE SET calls = usage.calls + excluded.calls, credits = usage.credits + excluded.credits`))
	if err != nil {
		return fmt.Errorf("store: add usage: %w", err)
	}
	defer stmt.Close()
	for _, u := range rows {
		if _, err := stmt.ExecContext(ctx, u.Day, u.KeyID, u.Method, u.Calls, u.Credits); err != nil {
			return fmt.Errorf("store: add usage: %w", err)
		}
	}
	if instance != "" {
		if _, err := tx.ExecContext(ctx, s.dialect.Rebind(`INSERT INTO ledger_checkpoints (instance, seq, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (instance) DO UPDATE SET seq = excluded.seq, updated_at = excluded.updated_at`),
			instance, seq, s.now().UnixMilli()); err != nil {
			return fmt.Errorf("store: ledger checkpoint: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: add usage: %w", err)
	}
	return nil
}

// Checkpoint returns the last ledger sequence number applied for instance,
// 0 when there is none.
func (s *Store) Checkpoint(ctx context.Context, instance string) (int64, error) {
	var seq int64
	err := s.db.QueryRowContext(ctx, s.dialect.Rebind(`SELECT seq FROM ledger_checkpoints WHERE instance = ?`), instance).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: ledger checkpoint: %w", err)
	}
	return seq, nil
}

// Spent returns the credits a key spent on a UTC day, as stored.
func (s *Store) Spent(ctx context.Context, keyID int64, day string) (int64, error) {
	var n sql.NullInt64
	err := s.db.QueryRowContext(ctx, s.dialect.Rebind(`SELECT SUM(credits) FROM usage WHERE key_id = ? AND day = ?`), keyID, day).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: spent: %w", err)
	}
	return n.Int64, nil
}

// Usage returns usage rows by day, key and method.
func (s *Store) Usage(ctx context.Context, f UsageFilter) ([]Usage, error) {
	q := `SELECT u.day, u.key_id, k.name, u.method, u.calls, u.credits FROM usage u JOIN api_keys k ON k.id = u.key_id WHERE 1 = 1`
	var args []any
	if f.KeyID != 0 {
		q, args = q+` AND u.key_id = ?`, append(args, f.KeyID)
	}
	if f.From != "" {
		q, args = q+` AND u.day >= ?`, append(args, f.From)
	}
	if f.To != "" {
		q, args = q+` AND u.day <= ?`, append(args, f.To)
	}
	rows, err := s.db.QueryContext(ctx, s.dialect.Rebind(q+` ORDER BY u.day, u.key_id, u.method`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	defer rows.Close()
	var out []Usage
	for rows.Next() {
		var u Usage
		if err := rows.Scan(&u.Day, &u.KeyID, &u.KeyName, &u.Method, &u.Calls, &u.Credits); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

func encodeList(l []string) string {
	if len(l) == 0 {
		return ""
	}
	b, _ := json.Marshal(l) // a []string always marshals
	return string(b)
}

func decodeList(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var l []string
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return nil, err
	}
	return l, nil
}

// Import makes sure a key known only by its digest (from a config file) is
// in the store with these settings: it is created when missing, and its
// name and limits follow the config when present. A revoked key stays
// revoked. It is atomic and idempotent: instances that start at the same
// moment on one store with the same keys all succeed, and the key is
// stored once.
func (s *Store) Import(ctx context.Context, name string, h apikey.Hash, daily, rate int64) (Key, error) {
	if err := validName(name); err != nil {
		return Key{}, err
	}
	// Insert unless the key (or an active key of that name) is there; a
	// concurrent import of the same key makes this a no-op, not an error.
	if _, err := s.db.ExecContext(ctx, s.dialect.Rebind(`INSERT INTO api_keys (name, hash, daily_credits, rate_per_second, created_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`), name, h.String(), daily, rate, s.now().UnixMilli()); err != nil {
		return Key{}, fmt.Errorf("store: import key %q: %w", name, err)
	}
	k, err := s.ByHash(ctx, h)
	switch {
	case errors.Is(err, ErrNotFound):
		// Not inserted, and not there: another active key has the name.
		return Key{}, fmt.Errorf("%w: %q", ErrNameTaken, name)
	case err != nil:
		return Key{}, err
	case k.Name == name && k.DailyCredits == daily && k.RatePerSecond == rate:
		return k, nil
	}
	if _, err := s.db.ExecContext(ctx, s.dialect.Rebind(`UPDATE api_keys SET name = ?, daily_credits = ?, rate_per_second = ? WHERE id = ?`),
		name, daily, rate, k.ID); err != nil {
		if sqldb.IsUnique(err) {
			return Key{}, fmt.Errorf("%w: %q", ErrNameTaken, name)
		}
		return Key{}, fmt.Errorf("store: import key %q: %w", name, err)
	}
	return s.ByHash(ctx, h)
}
