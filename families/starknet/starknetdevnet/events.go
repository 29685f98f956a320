package starknetdevnet

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
)

// emitted is one event as getEvents returns it.
type emitted struct {
	at        position
	blockHash *Felt // nil in the pending block
	txHash    Felt
	ev        event
}

// resolve turns a block reference into a block number; -1 means "no such
// block yet" (l1_accepted before any block is). Unknown hashes are
// ErrBlockNotFound; numbers past the chain are not an error.
func (d *Devnet) resolve(ctx context.Context, r *blockRef) (int64, error) {
	switch r.tag {
	case "latest":
		return int64(d.head.number), nil
	case "pending", "pre_confirmed":
		return int64(d.pending.number), nil
	case "l1_accepted":
		return d.l1Head(), nil
	}
	if !r.byHash {
		return int64(r.number), nil
	}
	h := r.hash.Bytes()
	var n int64
	err := d.db.QueryRowContext(ctx, `SELECT number FROM blocks WHERE hash = ?`, h[:]).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrBlockNotFound
	}
	return n, err
}

// l1Head is the newest block reported accepted on L1, or -1.
func (d *Devnet) l1Head() int64 {
	if d.cfg.L1Lag < 0 {
		return -1
	}
	return int64(d.head.number) - int64(d.cfg.L1Lag)
}

// getEvents answers a filter: up to chunk_size matching events from the
// start position, and a token naming the next match when there is one. It
// reads the database in batches, so memory stays bounded by the page and
// batch sizes however many events match.
func (d *Devnet) getEvents(ctx context.Context, f *eventFilter) ([]emitted, string, error) {
	from, to := int64(0), int64(d.pending.number)
	var err error
	if f.from != nil {
		if from, err = d.resolve(ctx, f.from); err != nil {
			return nil, "", err
		}
	}
	if f.to != nil {
		if to, err = d.resolve(ctx, f.to); err != nil {
			return nil, "", err
		}
	}
	start := position{block: uint64(max(from, 0))}
	if f.hasToken {
		p, err := decodeToken(f.token, f.fingerprnt)
		if err != nil || p.block > d.pending.number {
			return nil, "", ErrInvalidToken
		}
		start = p
	}
	if from < 0 || to < 0 || int64(start.block) > to {
		return nil, "", nil
	}
	want := f.chunkSize + 1
	var out []emitted
	if dbTo := min(uint64(to), d.head.number); start.block <= dbTo {
		out, err = d.scanDB(ctx, f, start, dbTo, want)
		if err != nil {
			return nil, "", err
		}
	}
	if len(out) < want && uint64(to) >= d.pending.number {
		out = d.scanPending(f, start, out, want)
	}
	if len(out) == want {
		return out[:f.chunkSize], encodeToken(out[f.chunkSize].at, f.fingerprnt), nil
	}
	return out, "", nil
}

// scanPending appends the pending block's matches at or after start.
func (d *Devnet) scanPending(f *eventFilter, start position, out []emitted, want int) []emitted {
	p := d.pending
	pos := uint64(0)
	for _, t := range p.txs {
		for _, e := range t.events {
			at := position{p.number, pos}
			pos++
			if at.less(start) || !f.matches(&e.from, e.keys) {
				continue
			}
			out = append(out, emitted{at: at, txHash: t.hash, ev: e})
			if len(out) == want {
				return out
			}
		}
	}
	return out
}

// eventColumns are read by every events query.
const eventColumns = `e.block, e.pos, b.hash, t.hash, e.address, e.key0, e.keys, e.data
	FROM events e
	JOIN blocks b ON b.number = e.block
	JOIN txs t ON t.block = e.block AND t.idx = e.tx`

// scanDB collects up to want matches in blocks [start.block, to], reading
// batches in (block, pos) order. With a first-key or address filter each
// value is read through its index and the sorted streams are merged, so a
// selective filter reads only its own events.
func (d *Devnet) scanDB(ctx context.Context, f *eventFilter, start position, to uint64, want int) ([]emitted, error) {
	column, values := "", []Felt(nil)
	switch {
	case len(f.keys) > 0 && len(f.keys[0]) > 0:
		column, values = "key0", f.keys[0]
	case len(f.addresses) > 0:
		column, values = "address", f.addresses
	}
	// Each distinct value is one sorted stream; a repeated value would
	// read its events twice.
	values = slices.CompactFunc(slices.SortedFunc(slices.Values(values), func(a, b Felt) int { return a.Cmp(&b) }),
		func(a, b Felt) bool { return a.Equal(&b) })
	batch := min(max(want, 256), 4096)
	var out []emitted
	cursor := start
	for {
		rows, limit, done, err := d.fetchBatch(ctx, column, values, cursor, to, batch)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			if f.matches(&rows[i].ev.from, rows[i].ev.keys) {
				out = append(out, rows[i])
				if len(out) == want {
					return out, nil
				}
			}
		}
		if done {
			return out, nil
		}
		cursor = position{limit.block, limit.pos + 1}
	}
}

// fetchBatch reads the events from cursor on, up to block to: for each
// value of the indexed column (or the whole table when column is empty) at
// most batch rows. It returns the merged rows up to limit, the last
// position that every stream has fully covered; done is true when no
// stream was cut short.
func (d *Devnet) fetchBatch(ctx context.Context, column string, values []Felt, cursor position, to uint64, batch int) ([]emitted, position, bool, error) {
	var q string
	var argsFor func(v *Felt) []any
	base := []any{cursor.block, cursor.pos, to, batch}
	if column == "" {
		q = `SELECT ` + eventColumns + ` WHERE (e.block, e.pos) >= (?, ?) AND e.block <= ? ORDER BY e.block, e.pos LIMIT ?`
		argsFor = func(*Felt) []any { return base }
		values = []Felt{{}}
	} else {
		q = `SELECT ` + strings.Replace(eventColumns, "FROM events e", "FROM events e INDEXED BY events_"+column, 1) +
			` WHERE e.` + column + ` = ? AND (e.block, e.pos) >= (?, ?) AND e.block <= ? ORDER BY e.block, e.pos LIMIT ?`
		argsFor = func(v *Felt) []any {
			b := v.Bytes()
			return append([]any{b[:]}, base...)
		}
	}
	var all []emitted
	limit, done := position{block: to, pos: ^uint64(0)}, true
	for i := range values {
		rows, err := d.db.QueryContext(ctx, q, argsFor(&values[i])...)
		if err != nil {
			return nil, position{}, false, err
		}
		n := 0
		var last position
		for rows.Next() {
			e, err := scanEvent(rows)
			if err != nil {
				rows.Close()
				return nil, position{}, false, err
			}
			all = append(all, e)
			last = e.at
			n++
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, position{}, false, err
		}
		if n == batch {
			done = false
			if last.less(limit) {
				limit = last
			}
		}
	}
	if len(values) > 1 {
		slices.SortFunc(all, func(a, b emitted) int {
			switch {
			case a.at.less(b.at):
				return -1
			case b.at.less(a.at):
				return 1
			}
			return 0
		})
	}
	if !done {
		cut := len(all)
		for cut > 0 && limit.less(all[cut-1].at) {
			cut--
		}
		all = all[:cut]
	}
	return all, limit, done, nil
}

// scanEvent reads one row of eventColumns.
func scanEvent(rows *sql.Rows) (emitted, error) {
	var e emitted
	var bh, th, addr, key0, keys, data []byte
	if err := rows.Scan(&e.at.block, &e.at.pos, &bh, &th, &addr, &key0, &keys, &data); err != nil {
		return e, err
	}
	h := feltFromKey(bh)
	e.blockHash = &h
	e.txHash = feltFromKey(th)
	e.ev.from = feltFromKey(addr)
	rest, err := unfelts(keys)
	if err != nil {
		return e, err
	}
	if key0 != nil {
		e.ev.keys = append([]Felt{feltFromKey(key0)}, rest...)
	}
	if e.ev.data, err = unfelts(data); err != nil {
		return e, err
	}
	return e, nil
}

// appendEventsChunk renders an EVENTS_CHUNK.
func appendEventsChunk(b []byte, events []emitted, token string) []byte {
	b = append(b, `{"events":[`...)
	for i := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEmitted(b, &events[i])
	}
	b = append(b, ']')
	if token != "" {
		b = append(b, `,"continuation_token":"`...)
		b = append(b, token...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// appendEmitted renders an EMITTED_EVENT.
func appendEmitted(b []byte, e *emitted) []byte {
	b = append(b, '{')
	b = appendEventBody(b, &e.ev)
	if e.blockHash != nil {
		b = append(b, `,"block_hash":`...)
		b = appendFeltJSON(b, e.blockHash)
	}
	b = append(b, `,"block_number":`...)
	b = appendUint(b, e.at.block)
	b = append(b, `,"transaction_hash":`...)
	b = appendFeltJSON(b, &e.txHash)
	return append(b, '}')
}
