package keynet

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver
)

// Storage errors.
var (
	// ErrNotFound: no such key or metadata.
	ErrNotFound = errors.New("keynet: not found")
	// ErrKeyExists: a key is already stored for that verifier and id.
	ErrKeyExists = errors.New("keynet: key already assigned")
	// ErrTokenReused: the id token was already used at this node.
	ErrTokenReused = errors.New("keynet: id token already used")
	// ErrStaleMetadata: the stored metadata has the same or a newer version.
	ErrStaleMetadata = errors.New("keynet: metadata version not newer than the stored one")
)

// StoredKey is what one node keeps for one user: its own share of the
// user's key and the public polynomial, never the key.
type StoredKey struct {
	Network    string
	Node       int
	Verifier   string
	VerifierID string
	// Share is this node's share, 32 bytes big-endian.
	Share [32]byte
	// Commitments is the public polynomial of the DKG (compressed hex
	// points); Commitments[0] is the user's public key.
	Commitments []string
	CreatedAt   time.Time
}

// SignedMetadata is a user's tKey metadata as a node keeps it: opaque data
// signed by the user's network key (Owner is its public key).
type SignedMetadata struct {
	Network string
	Node    int
	// Owner is the network key's public key, compressed hex.
	Owner     string
	Version   int64
	Data      string
	Signature string
	UpdatedAt time.Time
}

type dialect struct {
	name     string
	numbered bool
}

func (d dialect) rebind(q string) string {
	if !d.numbered {
		return q
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

func (d dialect) isUnique(err error) bool {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code == "23505"
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed") || strings.Contains(err.Error(), "PRIMARY KEY")
}

// Store is a node's storage in SQLite or PostgreSQL. Several nodes may
// share one database: every row carries the network and the node index.
type Store struct {
	db *sql.DB
	d  dialect
	// now is the clock.
	now func() time.Time
}

// OpenSQLite opens (creating) the SQLite database at path and migrates
// it; an empty path is a private in-memory database.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Set("_txlock", "immediate")
	dsn := "file::memory:?" + q.Encode()
	if path != "" {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		dsn = "file:" + path + "?" + q.Encode()
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("keynet: open sqlite: %w", err)
	}
	if path == "" {
		db.SetMaxOpenConns(1)
	}
	return openStore(ctx, db, dialect{name: "sqlite"})
}

// OpenPostgres opens the PostgreSQL database at dsn and migrates it.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("keynet: open postgres: %w", err)
	}
	db.SetMaxOpenConns(8)
	return openStore(ctx, db, dialect{name: "postgres", numbered: true})
}

func openStore(ctx context.Context, db *sql.DB, d dialect) (*Store, error) {
	s := &Store{db: db, d: d, now: time.Now}
	if err := s.migrate(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Backend is "sqlite" or "postgres".
func (s *Store) Backend() string { return s.d.name }

// keynetMigrations are applied in order, once each; append, never edit.
func keynetMigrations() []string {
	return []string{
		`CREATE TABLE keynet_keys (
			network TEXT NOT NULL,
			node_index BIGINT NOT NULL,
			verifier TEXT NOT NULL,
			verifier_id TEXT NOT NULL,
			share TEXT NOT NULL,
			commitments TEXT NOT NULL,
			created_at BIGINT NOT NULL,
			PRIMARY KEY (network, node_index, verifier, verifier_id)
		);
		CREATE TABLE keynet_used_tokens (
			network TEXT NOT NULL,
			node_index BIGINT NOT NULL,
			commitment TEXT NOT NULL,
			expires_at BIGINT NOT NULL,
			PRIMARY KEY (network, node_index, commitment)
		);
		CREATE INDEX keynet_used_tokens_expiry ON keynet_used_tokens (expires_at);
		CREATE TABLE keynet_metadata (
			network TEXT NOT NULL,
			node_index BIGINT NOT NULL,
			owner TEXT NOT NULL,
			version BIGINT NOT NULL,
			data TEXT NOT NULL,
			signature TEXT NOT NULL,
			updated_at BIGINT NOT NULL,
			PRIMARY KEY (network, node_index, owner)
		)`,
	}
}

func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("keynet: migrate: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if s.d.name == "postgres" {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(31647734761612144)`); err != nil {
			return fmt.Errorf("keynet: migrate: lock: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS keynet_schema_migrations (version BIGINT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("keynet: migrate: %w", err)
	}
	var have sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version) FROM keynet_schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("keynet: migrate: %w", err)
	}
	steps := keynetMigrations()
	if int(have.Int64) > len(steps) {
		return fmt.Errorf("keynet: schema version %d is newer than this portico (%d): upgrade portico", have.Int64, len(steps))
	}
	for v := int(have.Int64) + 1; v <= len(steps); v++ {
		for _, stmt := range strings.Split(steps[v-1], ";\n") {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("keynet: migration %d: %w", v, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.d.rebind(`INSERT INTO keynet_schema_migrations (version, applied_at) VALUES (?, ?)`), v, s.now().UnixMilli()); err != nil {
			return fmt.Errorf("keynet: migration %d: %w", v, err)
		}
	}
	return tx.Commit()
}

// Version returns the schema version.
func (s *Store) Version(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT MAX(version) FROM keynet_schema_migrations`).Scan(&v)
	return v, err
}

// Key returns the node's share for a user, or ErrNotFound.
func (s *Store) Key(ctx context.Context, network string, node int, verifier, verifierID string) (*StoredKey, error) {
	k := &StoredKey{Network: network, Node: node, Verifier: verifier, VerifierID: verifierID}
	var share, comms string
	var created int64
	err := s.db.QueryRowContext(ctx, s.d.rebind(`SELECT share, commitments, created_at FROM keynet_keys
		WHERE network = ? AND node_index = ? AND verifier = ? AND verifier_id = ?`), network, node, verifier, verifierID).Scan(&share, &comms, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("keynet: read key: %w", err)
	}
	if err := decodeShare(share, &k.Share); err != nil {
		return nil, fmt.Errorf("keynet: stored share: %w", err)
	}
	if err := json.Unmarshal([]byte(comms), &k.Commitments); err != nil || len(k.Commitments) == 0 {
		return nil, fmt.Errorf("keynet: stored commitments do not decode")
	}
	k.CreatedAt = time.UnixMilli(created).UTC()
	return k, nil
}

// PutKey stores a new key share; the first write wins and a second gets
// ErrKeyExists.
func (s *Store) PutKey(ctx context.Context, k StoredKey) error {
	comms, _ := json.Marshal(k.Commitments)
	if k.CreatedAt.IsZero() {
		k.CreatedAt = s.now()
	}
	_, err := s.db.ExecContext(ctx, s.d.rebind(`INSERT INTO keynet_keys (network, node_index, verifier, verifier_id, share, commitments, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`), k.Network, k.Node, k.Verifier, k.VerifierID, encodeShare(&k.Share), string(comms), k.CreatedAt.UnixMilli())
	if err != nil {
		if s.d.isUnique(err) {
			return ErrKeyExists
		}
		return fmt.Errorf("keynet: store key: %w", err)
	}
	return nil
}

// UseToken records that an id token (by its commitment) was used, until
// expires; a second use before then gets ErrTokenReused. Expired records
// are removed on the way.
func (s *Store) UseToken(ctx context.Context, network string, node int, commitment string, expires time.Time) error {
	if _, err := s.db.ExecContext(ctx, s.d.rebind(`DELETE FROM keynet_used_tokens WHERE expires_at < ?`), s.now().UnixMilli()); err != nil {
		return fmt.Errorf("keynet: expire tokens: %w", err)
	}
	_, err := s.db.ExecContext(ctx, s.d.rebind(`INSERT INTO keynet_used_tokens (network, node_index, commitment, expires_at) VALUES (?, ?, ?, ?)`),
		network, node, commitment, expires.UnixMilli())
	if err != nil {
		if s.d.isUnique(err) {
			return ErrTokenReused
		}
		return fmt.Errorf("keynet: record token: %w", err)
	}
	return nil
}

// Metadata returns the stored metadata of owner, or ErrNotFound.
func (s *Store) Metadata(ctx context.Context, network string, node int, owner string) (*SignedMetadata, error) {
	m := &SignedMetadata{Network: network, Node: node, Owner: owner}
	var updated int64
	err := s.db.QueryRowContext(ctx, s.d.rebind(`SELECT version, data, signature, updated_at FROM keynet_metadata
		WHERE network = ? AND node_index = ? AND owner = ?`), network, node, owner).Scan(&m.Version, &m.Data, &m.Signature, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("keynet: read metadata: %w", err)
	}
	m.UpdatedAt = time.UnixMilli(updated).UTC()
	return m, nil
}

// PutMetadata stores m if its version is newer than the stored one, else
// returns ErrStaleMetadata.
func (s *Store) PutMetadata(ctx context.Context, m SignedMetadata) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("keynet: store metadata: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	lock := ""
	if s.d.name == "postgres" {
		lock = " FOR UPDATE"
	}
	var have int64
	err = tx.QueryRowContext(ctx, s.d.rebind(`SELECT version FROM keynet_metadata WHERE network = ? AND node_index = ? AND owner = ?`+lock),
		m.Network, m.Node, m.Owner).Scan(&have)
	now := s.now().UnixMilli()
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, s.d.rebind(`INSERT INTO keynet_metadata (network, node_index, owner, version, data, signature, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`), m.Network, m.Node, m.Owner, m.Version, m.Data, m.Signature, now)
		if err != nil && s.d.isUnique(err) {
			return ErrStaleMetadata
		}
	case err != nil:
		return fmt.Errorf("keynet: store metadata: %w", err)
	case m.Version <= have:
		return ErrStaleMetadata
	default:
		_, err = tx.ExecContext(ctx, s.d.rebind(`UPDATE keynet_metadata SET version = ?, data = ?, signature = ?, updated_at = ?
			WHERE network = ? AND node_index = ? AND owner = ?`), m.Version, m.Data, m.Signature, now, m.Network, m.Node, m.Owner)
	}
	if err != nil {
		return fmt.Errorf("keynet: store metadata: %w", err)
	}
	return tx.Commit()
}
