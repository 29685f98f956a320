package starknetdevnet

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// addCommitmentColumns adds the blocks columns a database made before the
// devnet stored its blocks' counts and commitments lacks.
const addCommitmentColumns = `
ALTER TABLE blocks ADD COLUMN tx_count INTEGER;
ALTER TABLE blocks ADD COLUMN event_count INTEGER;
ALTER TABLE blocks ADD COLUMN diff_length INTEGER;
ALTER TABLE blocks ADD COLUMN tx_commitment BLOB;
ALTER TABLE blocks ADD COLUMN event_commitment BLOB;
ALTER TABLE blocks ADD COLUMN receipt_commitment BLOB;
ALTER TABLE blocks ADD COLUMN diff_commitment BLOB;
`

// migrate brings an older database up to the schema: it adds a block's
// counts and commitments and computes them for every stored block from
// its transactions, events and state diff, one block at a time, in one
// transaction. The blocks keep their hashes: a chain sealed before the
// devnet used starkblock's layout keeps the hashes it was served with, so
// those blocks' headers do not hash to their block_hash (see
// docs/starknet-devnet.md).
func migrate(ctx context.Context, db *sql.DB) error {
	var have bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM pragma_table_info('blocks') WHERE name = 'tx_commitment')`).Scan(&have); err != nil {
		return err
	}
	if have {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, addCommitmentColumns); err != nil {
		return err
	}
	var head sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(number) FROM blocks`).Scan(&head); err != nil {
		return err
	}
	for n := int64(0); head.Valid && n <= head.Int64; n++ {
		c, err := storedCommitments(ctx, tx, uint64(n))
		if err != nil {
			return fmt.Errorf("block %d: %w", n, err)
		}
		txc, evc, rcc, sdc := c.tx.Bytes(), c.event.Bytes(), c.receipt.Bytes(), c.stateDiff.Bytes()
		if _, err := tx.ExecContext(ctx, `UPDATE blocks SET tx_count = ?, event_count = ?, diff_length = ?,
			tx_commitment = ?, event_commitment = ?, receipt_commitment = ?, diff_commitment = ? WHERE number = ?`,
			c.txCount, c.eventCount, c.diffLength, txc[:], evc[:], rcc[:], sdc[:], n); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// storedCommitments computes block n's commitments from what the database
// holds of it.
func storedCommitments(ctx context.Context, tx *sql.Tx, n uint64) (commitments, error) {
	var diffJSON string
	if err := tx.QueryRowContext(ctx, `SELECT state_diff FROM blocks WHERE number = ?`, n).Scan(&diffJSON); err != nil {
		return commitments{}, err
	}
	diff, err := parseStateDiff(diffJSON)
	if err != nil {
		return commitments{}, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT hash, fee, l1_gas, l1_data_gas, l2_gas FROM txs WHERE block = ? ORDER BY idx`, n)
	if err != nil {
		return commitments{}, err
	}
	var txs []*txn
	for rows.Next() {
		t := &txn{}
		var h []byte
		if err := rows.Scan(&h, &t.fee, &t.l1Gas, &t.dataGas, &t.l2Gas); err != nil {
			rows.Close()
			return commitments{}, err
		}
		t.hash = feltFromKey(h)
		txs = append(txs, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return commitments{}, err
	}
	if rows, err = tx.QueryContext(ctx, `SELECT tx, address, key0, keys, data FROM events WHERE block = ? ORDER BY pos`, n); err != nil {
		return commitments{}, err
	}
	defer rows.Close()
	for rows.Next() {
		var idx int
		var from, key0, keys, data []byte
		if err := rows.Scan(&idx, &from, &key0, &keys, &data); err != nil {
			return commitments{}, err
		}
		if idx < 0 || idx >= len(txs) {
			return commitments{}, fmt.Errorf("an event of transaction %d of %d", idx, len(txs))
		}
		e := event{from: feltFromKey(from)}
		if key0 != nil {
			e.keys = []Felt{feltFromKey(key0)}
		}
		rest, err := unfelts(keys)
		if err != nil {
			return commitments{}, err
		}
		e.keys = append(e.keys, rest...)
		if e.data, err = unfelts(data); err != nil {
			return commitments{}, err
		}
		txs[idx].events = append(txs[idx].events, e)
	}
	if err := rows.Err(); err != nil {
		return commitments{}, err
	}
	return blockCommitments(txs, diff), nil
}

// parseStateDiff reads back a STATE_DIFF that appendStateDiff rendered.
func parseStateDiff(s string) (*stateDiff, error) {
	var j struct {
		Storage []struct {
			Address feltText `json:"address"`
			Entries []struct {
				Key   feltText `json:"key"`
				Value feltText `json:"value"`
			} `json:"storage_entries"`
		} `json:"storage_diffs"`
		Legacy   []feltText `json:"deprecated_declared_classes"`
		Declared []struct {
			Hash     feltText `json:"class_hash"`
			Compiled feltText `json:"compiled_class_hash"`
		} `json:"declared_classes"`
		Deployed []struct {
			Address feltText `json:"address"`
			Class   feltText `json:"class_hash"`
		} `json:"deployed_contracts"`
		Replaced []struct {
			Address feltText `json:"contract_address"`
			Class   feltText `json:"class_hash"`
		} `json:"replaced_classes"`
		Nonces []struct {
			Address feltText `json:"contract_address"`
			Nonce   feltText `json:"nonce"`
		} `json:"nonces"`
	}
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return nil, fmt.Errorf("stored state diff: %w", err)
	}
	d := newStateDiff()
	key := func(f feltText) [32]byte { v := Felt(f); return v.Bytes() }
	for _, sd := range j.Storage {
		m := map[[32]byte]Felt{}
		for _, e := range sd.Entries {
			m[key(e.Key)] = Felt(e.Value)
		}
		d.storage[key(sd.Address)] = m
	}
	for _, l := range j.Legacy {
		d.legacy = append(d.legacy, Felt(l))
	}
	for _, dc := range j.Declared {
		d.declared = append(d.declared, [2]Felt{Felt(dc.Hash), Felt(dc.Compiled)})
	}
	for _, dc := range j.Deployed {
		d.deployed = append(d.deployed, [2]Felt{Felt(dc.Address), Felt(dc.Class)})
	}
	for _, rc := range j.Replaced {
		d.replaced = append(d.replaced, [2]Felt{Felt(rc.Address), Felt(rc.Class)})
	}
	for _, nc := range j.Nonces {
		n := Felt(nc.Nonce)
		if !n.IsUint64() {
			return nil, fmt.Errorf("stored state diff: nonce %s", starknettx.Hex(&n))
		}
		d.nonces[key(nc.Address)] = n.Uint64()
	}
	return d, nil
}

// feltText is a felt in JSON, as the devnet writes it.
type feltText Felt

// UnmarshalJSON reads a hex felt.
func (f *feltText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := starknettx.ParseFelt(s)
	*f = feltText(v)
	return err
}
