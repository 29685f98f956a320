package starknetdevnet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	_ "modernc.org/sqlite" // the pure-Go SQLite driver

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// schema is the devnet's database. Felts are 32-byte big-endian blobs.
// A block's counts and commitments (the columns after state_diff) came
// later than the rest: migrate adds them to an older database.
// Events are keyed by (block, pos), pos being the event's index in its
// block across transactions, which is also the order getEvents returns
// them in; the two secondary indexes serve selective filters (first key,
// emitting contract) without scanning.
const schema = `
CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blocks(
	number INTEGER PRIMARY KEY,
	hash BLOB NOT NULL UNIQUE,
	parent BLOB NOT NULL,
	old_root BLOB NOT NULL,
	new_root BLOB NOT NULL,
	timestamp INTEGER NOT NULL,
	state_diff TEXT NOT NULL,
	tx_count INTEGER,
	event_count INTEGER,
	diff_length INTEGER,
	tx_commitment BLOB,
	event_commitment BLOB,
	receipt_commitment BLOB,
	diff_commitment BLOB
);
CREATE TABLE IF NOT EXISTS txs(
	hash BLOB PRIMARY KEY,
	block INTEGER NOT NULL,
	idx INTEGER NOT NULL,
	kind TEXT NOT NULL,
	sender BLOB NOT NULL,
	fee INTEGER NOT NULL,
	l1_gas INTEGER NOT NULL,
	l1_data_gas INTEGER NOT NULL,
	l2_gas INTEGER NOT NULL,
	deployed INTEGER NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS txs_position ON txs(block, idx);
CREATE TABLE IF NOT EXISTS events(
	block INTEGER NOT NULL,
	pos INTEGER NOT NULL,
	tx INTEGER NOT NULL,
	address BLOB NOT NULL,
	key0 BLOB,
	keys BLOB NOT NULL,
	data BLOB NOT NULL,
	PRIMARY KEY(block, pos)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_key0 ON events(key0, block, pos);
CREATE INDEX IF NOT EXISTS events_address ON events(address, block, pos);
CREATE TABLE IF NOT EXISTS contracts(address BLOB PRIMARY KEY, class_hash BLOB NOT NULL, nonce INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS storage(address BLOB NOT NULL, key BLOB NOT NULL, value BLOB NOT NULL, PRIMARY KEY(address, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS classes(hash BLOB PRIMARY KEY, compiled BLOB) WITHOUT ROWID;
`

// openDB opens (creating) the database file and its schema.
func openDB(ctx context.Context, path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, fmt.Errorf("starknetdevnet: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("starknetdevnet: schema: %w", err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("starknetdevnet: migrate: %w", err)
	}
	return db, nil
}

// felts packs felts into one blob.
func felts(fs []Felt) []byte {
	out := make([]byte, 0, 32*len(fs))
	for i := range fs {
		b := fs[i].Bytes()
		out = append(out, b[:]...)
	}
	return out
}

// unfelts unpacks a blob of felts.
func unfelts(b []byte) ([]Felt, error) {
	if len(b)%32 != 0 {
		return nil, errors.New("starknetdevnet: corrupt felt blob")
	}
	out := make([]Felt, len(b)/32)
	for i := range out {
		out[i] = feltFromKey(b[32*i : 32*i+32])
	}
	return out, nil
}

// blockRow is a sealed block's header as stored.
type blockRow struct {
	number    uint64
	hash      Felt
	parent    Felt
	oldRoot   Felt
	newRoot   Felt
	timestamp uint64
	stateDiff string // the rendered STATE_DIFF JSON
	commit    commitments
}

// sealedBlock is everything a block adds to the database.
type sealedBlock struct {
	blockRow
	txs []*txn
}

// writeBlock stores a block, its transactions and events, and the state
// changes of its diff, in one transaction.
func writeBlock(ctx context.Context, db *sql.DB, b *sealedBlock, diff *stateDiff, w *worldState) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := insertBlock(ctx, tx, &b.blockRow); err != nil {
		return err
	}
	insTx, err := tx.PrepareContext(ctx, `INSERT INTO txs VALUES(?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer insTx.Close()
	insEv, err := tx.PrepareContext(ctx, `INSERT INTO events VALUES(?,?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer insEv.Close()
	pos := 0
	for i, t := range b.txs {
		h, s := t.hash.Bytes(), t.sender.Bytes()
		if _, err := insTx.ExecContext(ctx, h[:], b.number, i, t.kind, s[:], t.fee, t.l1Gas, t.dataGas, t.l2Gas, t.deployed); err != nil {
			return fmt.Errorf("tx %s: %w", starknettx.Hex(&t.hash), err)
		}
		for _, e := range t.events {
			if err := insertEvent(ctx, insEv, b.number, pos, i, &e); err != nil {
				return err
			}
			pos++
		}
	}
	if diff != nil {
		if err := writeDiff(ctx, tx, diff, w); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// insertBlock adds a block's row.
func insertBlock(ctx context.Context, tx *sql.Tx, b *blockRow) error {
	hash, parent, oldRoot, newRoot := b.hash.Bytes(), b.parent.Bytes(), b.oldRoot.Bytes(), b.newRoot.Bytes()
	c := &b.commit
	txc, evc, rcc, sdc := c.tx.Bytes(), c.event.Bytes(), c.receipt.Bytes(), c.stateDiff.Bytes()
	if _, err := tx.ExecContext(ctx, `INSERT INTO blocks(`+blockColumns+`) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		b.number, hash[:], parent[:], oldRoot[:], newRoot[:], b.timestamp, b.stateDiff,
		c.txCount, c.eventCount, c.diffLength, txc[:], evc[:], rcc[:], sdc[:]); err != nil {
		return fmt.Errorf("block %d: %w", b.number, err)
	}
	return nil
}

// insertEvent adds one event row.
func insertEvent(ctx context.Context, st *sql.Stmt, block uint64, pos, txIdx int, e *event) error {
	a := e.from.Bytes()
	var key0 []byte
	var rest []Felt
	if len(e.keys) > 0 {
		k := e.keys[0].Bytes()
		key0 = k[:]
		rest = e.keys[1:]
	}
	_, err := st.ExecContext(ctx, block, pos, txIdx, a[:], key0, felts(rest), felts(e.data))
	return err
}

// writeDiff persists the current values of everything the diff touched.
func writeDiff(ctx context.Context, tx *sql.Tx, d *stateDiff, w *worldState) error {
	touched := map[[32]byte]bool{}
	for _, dc := range d.deployed {
		touched[dc[0].Bytes()] = true
	}
	for _, rc := range d.replaced {
		touched[rc[0].Bytes()] = true
	}
	for a := range d.nonces {
		touched[a] = true
	}
	for a := range touched {
		c := w.contracts[a]
		ch := c.classHash.Bytes()
		if _, err := tx.ExecContext(ctx, `INSERT INTO contracts VALUES(?,?,?) ON CONFLICT(address) DO UPDATE SET class_hash=excluded.class_hash, nonce=excluded.nonce`,
			a[:], ch[:], c.nonce); err != nil {
			return err
		}
	}
	for a, m := range d.storage {
		for k, v := range m {
			vb := v.Bytes()
			if _, err := tx.ExecContext(ctx, `INSERT INTO storage VALUES(?,?,?) ON CONFLICT(address, key) DO UPDATE SET value=excluded.value`,
				a[:], k[:], vb[:]); err != nil {
				return err
			}
		}
	}
	for _, dc := range d.declared {
		h, c := dc[0].Bytes(), dc[1].Bytes()
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO classes VALUES(?,?)`, h[:], c[:]); err != nil {
			return err
		}
	}
	for _, lc := range d.legacy {
		h := lc.Bytes()
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO classes VALUES(?,NULL)`, h[:]); err != nil {
			return err
		}
	}
	return nil
}

// loadState reads the persisted state of the latest sealed block.
func loadState(ctx context.Context, db *sql.DB) (*worldState, error) {
	w := newWorldState()
	rows, err := db.QueryContext(ctx, `SELECT address, class_hash, nonce FROM contracts`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var a, ch []byte
		var nonce uint64
		if err := rows.Scan(&a, &ch, &nonce); err != nil {
			rows.Close()
			return nil, err
		}
		w.contracts[[32]byte(a)] = &contract{classHash: feltFromKey(ch), nonce: nonce, storage: map[[32]byte]Felt{}, dirty: true}
	}
	rows.Close()
	if rows, err = db.QueryContext(ctx, `SELECT address, key, value FROM storage`); err != nil {
		return nil, err
	}
	for rows.Next() {
		var a, k, v []byte
		if err := rows.Scan(&a, &k, &v); err != nil {
			rows.Close()
			return nil, err
		}
		c := w.contracts[[32]byte(a)]
		if c == nil {
			rows.Close()
			return nil, errors.New("starknetdevnet: storage of an unknown contract")
		}
		c.storage[[32]byte(k)] = feltFromKey(v)
	}
	rows.Close()
	if rows, err = db.QueryContext(ctx, `SELECT hash, compiled FROM classes`); err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var h, c []byte
		if err := rows.Scan(&h, &c); err != nil {
			return nil, err
		}
		if c == nil {
			w.legacy[[32]byte(h)] = true
		} else {
			w.classes[[32]byte(h)] = feltFromKey(c)
		}
	}
	return w, rows.Err()
}

// scanBlock reads a block row.
func scanBlock(row interface{ Scan(...any) error }) (*blockRow, error) {
	var b blockRow
	var hash, parent, oldRoot, newRoot, txc, evc, rcc, sdc []byte
	c := &b.commit
	if err := row.Scan(&b.number, &hash, &parent, &oldRoot, &newRoot, &b.timestamp, &b.stateDiff,
		&c.txCount, &c.eventCount, &c.diffLength, &txc, &evc, &rcc, &sdc); err != nil {
		return nil, err
	}
	b.hash, b.parent, b.oldRoot, b.newRoot = feltFromKey(hash), feltFromKey(parent), feltFromKey(oldRoot), feltFromKey(newRoot)
	c.tx, c.event, c.receipt, c.stateDiff = feltFromKey(txc), feltFromKey(evc), feltFromKey(rcc), feltFromKey(sdc)
	return &b, nil
}

// blockColumns are the blocks table's columns in scanBlock's order;
// headerColumns the same without the state diff (read as ”), for
// headers.
const (
	blockColumns = `number, hash, parent, old_root, new_root, timestamp, state_diff,
	tx_count, event_count, diff_length, tx_commitment, event_commitment, receipt_commitment, diff_commitment`
	headerColumns = `number, hash, parent, old_root, new_root, timestamp, '',
	tx_count, event_count, diff_length, tx_commitment, event_commitment, receipt_commitment, diff_commitment`
)
