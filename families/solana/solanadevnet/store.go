package solanadevnet

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gagliardetto/solana-go"
	"github.com/go-json-experiment/json"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// store keeps the finalized ledger in SQLite: each rooted block (its
// transactions and their status) and the accounts as of the root.
type store struct {
	db *sql.DB
}

const schema = `
CREATE TABLE IF NOT EXISTS blocks (slot INTEGER PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS accounts (pubkey BLOB PRIMARY KEY, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v BLOB NOT NULL);
`

func openStore(ctx context.Context, dir string) (*store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("solanadevnet: DataDir: %w", err)
	}
	path := filepath.Join(dir, "solana-devnet.sqlite")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(5000)")
	if err != nil {
		return nil, fmt.Errorf("solanadevnet: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("solanadevnet: open %s: %w", path, err)
	}
	return &store{db: db}, nil
}

func (s *store) close() error { return s.db.Close() }

// save stores newly rooted blocks with the accounts they changed (their
// values as of the new root) and deletes cleaned-up blocks, in one
// transaction.
func (s *store) save(ctx context.Context, l *ledger, rooted []*block, gone []uint64) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO meta (k, v) VALUES ('genesis', ?)`, l.genesisHash[:]); err != nil {
		return err
	}
	keys := map[solana.PublicKey]bool{}
	for _, b := range rooted {
		body, err := json.Marshal(b)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO blocks (slot, body) VALUES (?, ?)`, int64(b.Slot), body); err != nil {
			return err
		}
		for k := range b.delta {
			keys[k] = true
		}
		if b.Slot == 0 {
			for k := range l.base {
				keys[k] = true
			}
		}
	}
	for k := range keys {
		a := l.base[k]
		if a == nil || a.Lamports == 0 {
			if _, err := tx.ExecContext(ctx, `DELETE FROM accounts WHERE pubkey = ?`, k[:]); err != nil {
				return err
			}
			continue
		}
		body, err := json.Marshal(a)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO accounts (pubkey, body) VALUES (?, ?)`, k[:], body); err != nil {
			return err
		}
	}
	for _, slot := range gone {
		if _, err := tx.ExecContext(ctx, `DELETE FROM blocks WHERE slot = ?`, int64(slot)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// load rebuilds the ledger from the store, with the newest stored block as
// root; it returns nil when the store is empty.
func (s *store) load(ctx context.Context) (*ledger, error) {
	l := newLedger()
	var gh []byte
	switch err := s.db.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = 'genesis'`).Scan(&gh); {
	case err == sql.ErrNoRows:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("solanadevnet: load: %w", err)
	}
	copy(l.genesisHash[:], gh)
	rows, err := s.db.QueryContext(ctx, `SELECT pubkey, body FROM accounts`)
	if err != nil {
		return nil, fmt.Errorf("solanadevnet: load accounts: %w", err)
	}
	for rows.Next() {
		var k, body []byte
		if err := rows.Scan(&k, &body); err != nil {
			rows.Close()
			return nil, fmt.Errorf("solanadevnet: load accounts: %w", err)
		}
		a := new(account)
		if err := json.Unmarshal(body, a); err != nil || len(k) != 32 {
			rows.Close()
			return nil, fmt.Errorf("solanadevnet: load account %x: bad record", k)
		}
		l.base[solana.PublicKeyFromBytes(k)] = a
	}
	rows.Close()
	rows, err = s.db.QueryContext(ctx, `SELECT slot, body FROM blocks ORDER BY slot`)
	if err != nil {
		return nil, fmt.Errorf("solanadevnet: load blocks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var slot int64
		var body []byte
		if err := rows.Scan(&slot, &body); err != nil {
			return nil, fmt.Errorf("solanadevnet: load blocks: %w", err)
		}
		b := new(block)
		if err := json.Unmarshal(body, b); err != nil {
			return nil, fmt.Errorf("solanadevnet: load block %d: %w", slot, err)
		}
		for _, r := range b.Txs {
			if r.tx, err = solana.TransactionFromBytes(r.Raw); err != nil {
				return nil, fmt.Errorf("solanadevnet: load block %d: %w", slot, err)
			}
		}
		if l.root == nil {
			l.first = b.Slot
		}
		l.blocks[b.Slot] = b
		l.hashes[b.Hash] = b.Height
		l.index(b)
		l.root = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("solanadevnet: load blocks: %w", err)
	}
	if l.root == nil {
		return nil, nil
	}
	l.conf = l.root
	l.slot = l.root.Slot
	return l, nil
}
