package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// Rules are a key's own settings beyond its credits and its method,
// network and origin lists (issue 26, docs/keys.md), stored as one JSON
// column. The zero value is a key without any of them.
type Rules struct {
	// SecretHash is the digest of the key's secret (apikey.SumSecret);
	// empty when the key has none.
	SecretHash string `json:"secret_hash,omitempty"`
	// PrevSecretHash is the previous secret's digest, accepted until
	// PrevSecretUntil (a rotation's grace period).
	PrevSecretHash  string    `json:"prev_secret_hash,omitempty"`
	PrevSecretUntil time.Time `json:"prev_secret_until,omitzero"`
	// JWTKeys, when set, make the key require a JWT signed by one of
	// them; JWTMaxLifetime bounds its exp (0: the default) and
	// JWTAudience is its aud ("" : the key's name).
	JWTKeys        []apikey.JWTKey `json:"jwt_keys,omitempty"`
	JWTMaxLifetime time.Duration   `json:"jwt_max_lifetime,omitempty"`
	JWTAudience    string          `json:"jwt_audience,omitempty"`
	// AllowAddresses and AllowUserAgents are allowlists of contract
	// addresses and User-Agent substrings; empty allows everything.
	AllowAddresses  []string `json:"allow_addresses,omitempty"`
	AllowUserAgents []string `json:"allow_user_agents,omitempty"`
	// MaxConcurrent and RequestsPerSecond bound the key's calls; 0 is no
	// bound.
	MaxConcurrent     int `json:"max_concurrent,omitempty"`
	RequestsPerSecond int `json:"requests_per_second,omitempty"`
	// Logs overrides the network's bounds on log queries.
	Logs *portico.LogLimits `json:"logs,omitempty"`
}

// Zero reports whether the key has none of these settings.
func (r Rules) Zero() bool {
	return r.SecretHash == "" && r.PrevSecretHash == "" && len(r.JWTKeys) == 0 && r.JWTAudience == "" && r.JWTMaxLifetime == 0 &&
		len(r.AllowAddresses) == 0 && len(r.AllowUserAgents) == 0 && r.MaxConcurrent == 0 && r.RequestsPerSecond == 0 && r.Logs == nil
}

// HasSecret reports whether calls with the key must carry a secret.
func (r Rules) HasSecret() bool { return r.SecretHash != "" }

// check validates the settings (apikey.Settings.Check, the checks a
// config file's keys get too) and normalizes the address list.
func (r *Rules) check() error {
	if err := (apikey.Settings{AllowAddresses: &r.AllowAddresses, AllowUserAgents: &r.AllowUserAgents,
		MaxConcurrent: &r.MaxConcurrent, RequestsPerSecond: &r.RequestsPerSecond,
		JWTKeys: &r.JWTKeys, JWTMaxLifetime: &r.JWTMaxLifetime, JWTAudience: &r.JWTAudience, Logs: r.Logs}).Check(); err != nil {
		return inputError(err)
	}
	for i, a := range r.AllowAddresses {
		r.AllowAddresses[i] = strings.ToLower(a)
	}
	if l := r.Logs; l != nil && *l == (portico.LogLimits{}) {
		r.Logs = nil
	}
	return nil
}

// inputError turns a *apikey.SettingError into the store's InputError.
func inputError(err error) error {
	var se *apikey.SettingError
	if errors.As(err, &se) {
		return &InputError{se.Field, se.Reason}
	}
	return err
}

func encodeRules(r Rules) string {
	if r.Zero() {
		return ""
	}
	b, _ := json.Marshal(r) // plain data always marshals
	return string(b)
}

func decodeRules(s string) (Rules, error) {
	var r Rules
	if s == "" {
		return r, nil
	}
	err := json.Unmarshal([]byte(s), &r)
	return r, err
}

// RulesPatch changes some of a key's Rules; nil fields stay as they are.
// An empty list removes a restriction; a zero LogLimits removes the
// override.
type RulesPatch struct {
	JWTKeys           *[]apikey.JWTKey
	JWTMaxLifetime    *time.Duration
	JWTAudience       *string
	AllowAddresses    *[]string
	AllowUserAgents   *[]string
	MaxConcurrent     *int
	RequestsPerSecond *int
	Logs              *portico.LogLimits
	// LogBounds changes some of the key's own log bounds, applied after
	// Logs: each bound it gives replaces the key's, the others stay.
	LogBounds *LogBoundsPatch
}

// LogBoundsPatch changes some of a key's own log bounds; nil fields stay
// as they are, and 0 sets a bound back to the network's.
type LogBoundsPatch struct {
	MaxBlockRange *uint64
	MaxAddresses  *int
	MaxTopics     *int
	MaxLogs       *int
}

// apply returns l with the bounds p gives replaced; l may be nil (no
// bounds of the key's own).
func (p *LogBoundsPatch) apply(l *portico.LogLimits) *portico.LogLimits {
	var out portico.LogLimits
	if l != nil {
		out = *l
	}
	set(&out.MaxBlockRange, p.MaxBlockRange)
	set(&out.MaxAddresses, p.MaxAddresses)
	set(&out.MaxTopics, p.MaxTopics)
	set(&out.MaxLogs, p.MaxLogs)
	return &out
}

func (p RulesPatch) empty() bool { return p == RulesPatch{} }

func (p RulesPatch) apply(r *Rules) {
	set(&r.JWTKeys, p.JWTKeys)
	set(&r.JWTMaxLifetime, p.JWTMaxLifetime)
	set(&r.JWTAudience, p.JWTAudience)
	set(&r.AllowAddresses, p.AllowAddresses)
	set(&r.AllowUserAgents, p.AllowUserAgents)
	set(&r.MaxConcurrent, p.MaxConcurrent)
	set(&r.RequestsPerSecond, p.RequestsPerSecond)
	if p.Logs != nil {
		l := *p.Logs
		r.Logs = &l
	}
	if p.LogBounds != nil {
		r.Logs = p.LogBounds.apply(r.Logs)
	}
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// DefaultSecretGrace is how long a rotated-out secret keeps working when
// the rotation names no grace period.
const DefaultSecretGrace = 24 * time.Hour

// MaxSecretGrace bounds a rotation's grace period.
const MaxSecretGrace = 30 * 24 * time.Hour

// RotateSecret gives the active key with that name a new secret and
// returns it, once; only its digest is kept. A key that had a secret keeps
// accepting the old one for grace (0: none; it then stops at once, as
// when a secret leaked). A key without a secret gets its first.
func (s *Store) RotateSecret(ctx context.Context, name string, grace time.Duration) (Key, string, error) {
	if grace < 0 || grace > MaxSecretGrace {
		return Key{}, "", &InputError{"grace", fmt.Sprintf("must be 0 to %s", MaxSecretGrace)}
	}
	secret := apikey.GenerateSecret()
	k, err := s.changeRules(ctx, name, func(r *Rules) error {
		r.PrevSecretHash, r.PrevSecretUntil = "", time.Time{}
		if r.SecretHash != "" && grace > 0 {
			r.PrevSecretHash, r.PrevSecretUntil = r.SecretHash, s.now().Add(grace).UTC().Truncate(time.Millisecond)
		}
		r.SecretHash = apikey.SumSecret(secret).String()
		return nil
	})
	if err != nil {
		return Key{}, "", err
	}
	return k, secret, nil
}

// RemoveSecret drops the key's secret (and a previous one in its grace
// period): calls with the key need none again.
func (s *Store) RemoveSecret(ctx context.Context, name string) (Key, error) {
	return s.changeRules(ctx, name, func(r *Rules) error {
		r.SecretHash, r.PrevSecretHash, r.PrevSecretUntil = "", "", time.Time{}
		return nil
	})
}

// changeRules reads, changes and writes the rules of the active key with
// that name in one transaction (the row locked on PostgreSQL).
func (s *Store) changeRules(ctx context.Context, name string, change func(*Rules) error) (Key, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Key{}, fmt.Errorf("store: update key: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	q := `SELECT ` + keyColumns + ` FROM api_keys WHERE name = ? AND revoked_at IS NULL`
	if s.dialect.Name == "postgres" {
		q += ` FOR UPDATE`
	}
	k, err := scanKey(tx.QueryRowContext(ctx, s.dialect.Rebind(q), name))
	if errors.Is(err, sql.ErrNoRows) {
		return Key{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if err != nil {
		return Key{}, err
	}
	if err := change(&k.Rules); err != nil {
		return Key{}, err
	}
	if err := k.Rules.check(); err != nil {
		return Key{}, err
	}
	if _, err := tx.ExecContext(ctx, s.dialect.Rebind(`UPDATE api_keys SET rules = ? WHERE id = ?`), encodeRules(k.Rules), k.ID); err != nil {
		return Key{}, fmt.Errorf("store: update key: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return Key{}, fmt.Errorf("store: update key: %w", err)
	}
	return k, nil
}

// identityRules is what the gateway needs of a key's Rules: nil when it
// has none. Stored settings that no longer parse refuse every token
// rather than turn into "no restriction".
func identityRules(k Key) *apikey.Rules {
	r := k.Rules
	if r.Zero() {
		return nil
	}
	out := &apikey.Rules{
		Addresses: r.AllowAddresses, UserAgents: r.AllowUserAgents,
		MaxConcurrent: r.MaxConcurrent, RequestsPerSecond: r.RequestsPerSecond, Logs: r.Logs,
	}
	for _, d := range []struct {
		hash  string
		until time.Time
	}{{r.SecretHash, time.Time{}}, {r.PrevSecretHash, r.PrevSecretUntil}} {
		if d.hash == "" {
			continue
		}
		h, err := apikey.ParseHash(d.hash)
		if err != nil {
			continue // matches nothing: the secret is refused
		}
		out.Secrets = append(out.Secrets, apikey.SecretDigest{Hash: h, Until: d.until})
	}
	if r.SecretHash != "" && len(out.Secrets) == 0 {
		// A digest that does not parse must still require a secret.
		out.Secrets = []apikey.SecretDigest{{}}
	}
	if len(r.JWTKeys) > 0 {
		j, err := apikey.NewJWT(r.JWTKeys, r.JWTMaxLifetime, r.JWTAudience)
		if err != nil {
			j = &apikey.JWT{} // no keys: every token is refused
		}
		out.JWT = j
	}
	return out
}
