package keynet

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/porticohq/portico/store/sqldb"
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

// Store is a node's storage in SQLite or PostgreSQL. Several nodes may
// share one database: every row carries the network and the node index.
type Store struct {
	db *sql.DB
	d  sqldb.Dialect
	// now is the clock.
	now func() time.Time
	// sealer, once set by the node that owns the store, encrypts its
	// shares at rest.
	sealer *Sealer
}

// SealWith makes the store seal the shares it writes with sl, and open
// sealed ones with it. NewNode calls it with the node's own key.
func (s *Store) SealWith(sl *Sealer) { s.sealer = sl }

// SealPlaintext seals a node's shares written before shares were sealed
// and returns how many it sealed.
func (s *Store) SealPlaintext(ctx context.Context, network string, node int) (int, error) {
	if s.sealer == nil {
		return 0, errors.New("keynet: no sealer")
	}
	rows, err := s.db.QueryContext(ctx, s.d.Rebind(`SELECT verifier, verifier_id, share FROM keynet_keys
		WHERE network = ? AND node_index = ? AND share NOT LIKE 'enc1:%'`), network, node)
	if err != nil {
		return 0, fmt.Errorf("keynet: seal: %w", err)
	}
	type row struct{ verifier, id, share string }
	var plain []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.verifier, &r.id, &r.share); err != nil {
			rows.Close()
			return 0, fmt.Errorf("keynet: seal: %w", err)
		}
		plain = append(plain, r)
	}
	rows.Close()
	for _, r := range plain {
		var b [32]byte
		if err := decodeShare(r.share, &b); err != nil {
			return 0, fmt.Errorf("keynet: seal: stored share: %w", err)
		}
		sealed := s.sealer.seal(&b, shareAD(network, node, r.verifier, r.id))
		clear(b[:])
		if _, err := s.db.ExecContext(ctx, s.d.Rebind(`UPDATE keynet_keys SET share = ? WHERE network = ? AND node_index = ? AND verifier = ? AND verifier_id = ? AND share = ?`),
			sealed, network, node, r.verifier, r.id, r.share); err != nil {
			return 0, fmt.Errorf("keynet: seal: %w", err)
		}
	}
	return len(plain), nil
}

// OpenSQLite opens (creating) the SQLite database at path, private to
// its owner (mode 0600), and migrates it; an empty path is a private
// in-memory database. Commits are synced fully: a node's share must
// survive a power cut.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	return openStore(ctx, sqldb.SQLiteFile(path, sqldb.SQLiteOptions{FullSync: true}))
}

// OpenPostgres opens the PostgreSQL database at dsn and migrates it.
// Several nodes may share one database: a smaller pool each.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	return openStore(ctx, sqldb.PostgresDSN(dsn, 8))
}

func openStore(ctx context.Context, src sqldb.Source) (*Store, error) {
	s := &Store{d: src.Dialect(), now: time.Now}
	// The lock id is any number fixed for this package.
	schema := sqldb.Schema{Table: "keynet_schema_migrations", LockID: 31647734761612144, Steps: sqldb.SQL(keynetMigrations()...)}
	db, err := sqldb.Open(ctx, src, schema, s.now())
	if err != nil {
		return nil, fmt.Errorf("keynet: %w", err)
	}
	s.db = db
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Backend is "sqlite" or "postgres".
func (s *Store) Backend() string { return s.d.Name }

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

// Version returns the schema version.
func (s *Store) Version(ctx context.Context) (int, error) {
	return sqldb.Version(ctx, s.db, "keynet_schema_migrations")
}

// Key returns the node's share for a user, or ErrNotFound.
func (s *Store) Key(ctx context.Context, network string, node int, verifier, verifierID string) (*StoredKey, error) {
	k := &StoredKey{Network: network, Node: node, Verifier: verifier, VerifierID: verifierID}
	var share, comms string
	var created int64
	err := s.db.QueryRowContext(ctx, s.d.Rebind(`SELECT share, commitments, created_at FROM keynet_keys
		WHERE network = ? AND node_index = ? AND verifier = ? AND verifier_id = ?`), network, node, verifier, verifierID).Scan(&share, &comms, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("keynet: read key: %w", err)
	}
	if err := s.sealer.open(share, shareAD(network, node, verifier, verifierID), &k.Share); err != nil {
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
	share := encodeShare(&k.Share)
	if s.sealer != nil {
		share = s.sealer.seal(&k.Share, shareAD(k.Network, k.Node, k.Verifier, k.VerifierID))
	}
	_, err := s.db.ExecContext(ctx, s.d.Rebind(`INSERT INTO keynet_keys (network, node_index, verifier, verifier_id, share, commitments, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`), k.Network, k.Node, k.Verifier, k.VerifierID, share, string(comms), k.CreatedAt.UnixMilli())
	if err != nil {
		if sqldb.IsUnique(err) {
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
	if _, err := s.db.ExecContext(ctx, s.d.Rebind(`DELETE FROM keynet_used_tokens WHERE expires_at < ?`), s.now().UnixMilli()); err != nil {
		return fmt.Errorf("keynet: expire tokens: %w", err)
	}
	_, err := s.db.ExecContext(ctx, s.d.Rebind(`INSERT INTO keynet_used_tokens (network, node_index, commitment, expires_at) VALUES (?, ?, ?, ?)`),
		network, node, commitment, expires.UnixMilli())
	if err != nil {
		if sqldb.IsUnique(err) {
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
	err := s.db.QueryRowContext(ctx, s.d.Rebind(`SELECT version, data, signature, updated_at FROM keynet_metadata
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
	if s.d.Name == "postgres" {
		lock = " FOR UPDATE"
	}
	var have int64
	err = tx.QueryRowContext(ctx, s.d.Rebind(`SELECT version FROM keynet_metadata WHERE network = ? AND node_index = ? AND owner = ?`+lock),
		m.Network, m.Node, m.Owner).Scan(&have)
	now := s.now().UnixMilli()
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, s.d.Rebind(`INSERT INTO keynet_metadata (network, node_index, owner, version, data, signature, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`), m.Network, m.Node, m.Owner, m.Version, m.Data, m.Signature, now)
		if err != nil && sqldb.IsUnique(err) {
			return ErrStaleMetadata
		}
	case err != nil:
		return fmt.Errorf("keynet: store metadata: %w", err)
	case m.Version <= have:
		return ErrStaleMetadata
	default:
		_, err = tx.ExecContext(ctx, s.d.Rebind(`UPDATE keynet_metadata SET version = ?, data = ?, signature = ?, updated_at = ?
			WHERE network = ? AND node_index = ? AND owner = ?`), m.Version, m.Data, m.Signature, now, m.Network, m.Node, m.Owner)
	}
	if err != nil {
		return fmt.Errorf("keynet: store metadata: %w", err)
	}
	return tx.Commit()
}
