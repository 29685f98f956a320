package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Webhooks (issue 38): a key's webhooks, each with its cursor, its lease
// and its outbox. What was promised to a receiver lives here, not in a
// process: a delivery is written to the outbox (with its id, which every
// retry sends again) before it is sent and marked acknowledged when the
// receiver answered 2xx, in order of seq; the blocks a webhook has been
// sent are kept (webhook_blocks) so that a restarted worker resumes its
// stream from the last of them and knows what a reorg takes back. The
// lease (owner, deadline) makes one instance at a time deliver a
// webhook.

// ErrWebhookNotFound: the key has no webhook with that id.
var ErrWebhookNotFound = errors.New("store: webhook not found")

// ErrLeaseLost: the instance no longer holds the webhook's lease; what it
// tried to write was not written.
var ErrLeaseLost = errors.New("store: webhook lease lost")

// Webhook states.
const (
	WebhookActive = "active"
	WebhookPaused = "paused"
)

// WebhookSpec is what a webhook is created with.
type WebhookSpec struct {
	Network string
	// Event is newHeads, logs or address.
	Event string
	// Filter is the event's filter as JSON (a logs filter, or
	// {"address": "0x…"}); "" for none.
	Filter string
	URL    string
	// Secret signs each delivery (HMAC-SHA256). It is stored as given,
	// because signing needs it (docs/webhooks.md says how the store is
	// protected).
	Secret string
}

// BlockRef is a block as a webhook's cursor and deliveries name it.
type BlockRef struct {
	Number     int64
	Hash       string
	ParentHash string
	// Silent marks a sent block that had nothing for the webhook: it was
	// followed, not delivered.
	Silent bool
}

// Webhook is one stored webhook.
type Webhook struct {
	ID      string
	KeyID   int64
	KeyName string
	WebhookSpec
	State string
	// PausedReason says why a paused webhook is paused.
	PausedReason string
	// Cursor is the block of the last acknowledged delivery; Hash is ""
	// before the first.
	Cursor BlockRef
	// Delivered counts the acknowledged deliveries; Pending the outbox's
	// entries not acknowledged yet.
	Delivered, Pending int64
	// LeaseOwner is the instance that delivers the webhook, until
	// LeaseUntil; "" when none does.
	LeaseOwner string
	LeaseUntil time.Time
	CreatedAt  time.Time
}

// Delivery is one delivery in a webhook's outbox.
type Delivery struct {
	// Seq orders a webhook's deliveries.
	Seq int64
	// ID is the delivery id (X-Portico-Delivery), the same on every retry.
	ID      string
	Block   BlockRef
	Removed bool
	Body    []byte
	// Silent is a block followed, not delivered (Block.Silent): it takes
	// no place in the outbox.
	Silent bool
}

const webhookColumns = `w.id, w.key_id, k.name, w.network, w.event, w.filter, w.url, w.secret, w.state, w.paused_reason,
	w.cursor_number, w.cursor_hash, w.delivered, w.lease_owner, w.lease_until, w.created_at,
	(SELECT COUNT(*) FROM webhook_deliveries d WHERE d.webhook_id = w.id AND d.acked = 0)`

func scanWebhook(row interface{ Scan(...any) error }) (Webhook, error) {
	var w Webhook
	var created, until int64
	err := row.Scan(&w.ID, &w.KeyID, &w.KeyName, &w.Network, &w.Event, &w.Filter, &w.URL, &w.Secret, &w.State, &w.PausedReason,
		&w.Cursor.Number, &w.Cursor.Hash, &w.Delivered, &w.LeaseOwner, &until, &created, &w.Pending)
	w.CreatedAt = time.UnixMilli(created).UTC()
	if w.LeaseOwner != "" {
		w.LeaseUntil = time.UnixMilli(until).UTC()
	}
	return w, err
}

// CreateWebhook stores a new active webhook of the active key named
// keyName. The spec's values are checked by the caller (package webhook);
// here only their presence.
func (s *Store) CreateWebhook(ctx context.Context, keyName string, spec WebhookSpec) (Webhook, error) {
	for _, f := range []struct{ name, v string }{{"network", spec.Network}, {"event", spec.Event}, {"url", spec.URL}, {"secret", spec.Secret}} {
		if f.v == "" {
			return Webhook{}, &InputError{f.name, "is required"}
		}
	}
	k, err := s.Get(ctx, keyName)
	if err != nil {
		return Webhook{}, err
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	id := "wh_" + hex.EncodeToString(b[:])
	if _, err := s.db.ExecContext(ctx, s.dialect.Rebind(`INSERT INTO webhooks
		(id, key_id, network, event, filter, url, secret, state, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		id, k.ID, spec.Network, spec.Event, spec.Filter, spec.URL, spec.Secret, WebhookActive, s.now().UnixMilli()); err != nil {
		return Webhook{}, fmt.Errorf("store: create webhook: %w", err)
	}
	return s.Webhook(ctx, id)
}

// Webhook returns the webhook with that id.
func (s *Store) Webhook(ctx context.Context, id string) (Webhook, error) {
	w, err := scanWebhook(s.db.QueryRowContext(ctx, s.dialect.Rebind(`SELECT `+webhookColumns+`
		FROM webhooks w JOIN api_keys k ON k.id = w.key_id WHERE w.id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return Webhook{}, fmt.Errorf("%w: %q", ErrWebhookNotFound, id)
	}
	return w, err
}

// Webhooks returns the webhooks of the active key named keyName, or of
// every active key when keyName is "", oldest first.
func (s *Store) Webhooks(ctx context.Context, keyName string) ([]Webhook, error) {
	q := `SELECT ` + webhookColumns + ` FROM webhooks w JOIN api_keys k ON k.id = w.key_id WHERE k.revoked_at IS NULL`
	var args []any
	if keyName != "" {
		if _, err := s.Get(ctx, keyName); err != nil {
			return nil, err
		}
		q, args = q+` AND k.name = ?`, append(args, keyName)
	}
	rows, err := s.db.QueryContext(ctx, s.dialect.Rebind(q+` ORDER BY w.created_at, w.id`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: webhooks: %w", err)
	}
	defer rows.Close()
	var out []Webhook
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// DeleteWebhook deletes a webhook of the key named keyName, with its
// outbox.
func (s *Store) DeleteWebhook(ctx context.Context, keyName, id string) error {
	w, err := s.Webhook(ctx, id)
	if err != nil {
		return err
	}
	if w.KeyName != keyName {
		return fmt.Errorf("%w: %q", ErrWebhookNotFound, id)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, t := range []string{"webhook_deliveries", "webhook_blocks", "webhooks"} {
		col := "webhook_id"
		if t == "webhooks" {
			col = "id"
		}
		if _, err := tx.ExecContext(ctx, s.dialect.Rebind(`DELETE FROM `+t+` WHERE `+col+` = ?`), id); err != nil {
			return fmt.Errorf("store: delete webhook: %w", err)
		}
	}
	return tx.Commit()
}

// SetWebhookState pauses a webhook with the reason, or makes it active
// again (reason ""), whoever holds its lease.
func (s *Store) SetWebhookState(ctx context.Context, id, state, reason string) error {
	res, err := s.db.ExecContext(ctx, s.dialect.Rebind(`UPDATE webhooks SET state = ?, paused_reason = ? WHERE id = ?`), state, reason, id)
	if err != nil {
		return fmt.Errorf("store: webhook state: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: %q", ErrWebhookNotFound, id)
	}
	return nil
}

// LeaseWebhook takes or renews the webhook's lease for owner until the
// deadline, and reports whether owner holds it: a lease is taken only
// when it is free or past its deadline. Only an active webhook is leased.
func (s *Store) LeaseWebhook(ctx context.Context, id, owner string, until time.Time) (bool, error) {
	now := s.now().UnixMilli()
	res, err := s.db.ExecContext(ctx, s.dialect.Rebind(`UPDATE webhooks SET lease_owner = ?, lease_until = ?
		WHERE id = ? AND state = ? AND (lease_owner = ? OR lease_owner = '' OR lease_until < ?)`),
		owner, until.UnixMilli(), id, WebhookActive, owner, now)
	if err != nil {
		return false, fmt.Errorf("store: lease webhook: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// LeaseWebhooks renews every lease owner holds and takes up to take
// free or expired ones of active webhooks, until the deadline, in one
// transaction; it returns the ids of the webhooks owner holds.
func (s *Store) LeaseWebhooks(ctx context.Context, owner string, until time.Time, take int) ([]string, error) {
	defer s.lockHooks()()
	now := s.now().UnixMilli()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, s.dialect.Rebind(`UPDATE webhooks SET lease_until = ? WHERE lease_owner = ? AND state = ? AND lease_until >= ?`),
		until.UnixMilli(), owner, WebhookActive, now); err != nil {
		return nil, fmt.Errorf("store: lease webhooks: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.dialect.Rebind(`UPDATE webhooks SET lease_owner = ?, lease_until = ? WHERE id IN
		(SELECT w.id FROM webhooks w JOIN api_keys k ON k.id = w.key_id
		 WHERE w.state = ? AND k.revoked_at IS NULL AND (w.lease_owner = '' OR w.lease_until < ?) ORDER BY w.created_at LIMIT ?)`),
		owner, until.UnixMilli(), WebhookActive, now, take); err != nil {
		return nil, fmt.Errorf("store: lease webhooks: %w", err)
	}
	rows, err := tx.QueryContext(ctx, s.dialect.Rebind(`SELECT w.id FROM webhooks w JOIN api_keys k ON k.id = w.key_id
		WHERE w.lease_owner = ? AND w.state = ? AND k.revoked_at IS NULL`), owner, WebhookActive)
	if err != nil {
		return nil, fmt.Errorf("store: lease webhooks: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return ids, tx.Commit()
}

// ReleaseWebhook gives the lease back, if owner holds it.
func (s *Store) ReleaseWebhook(ctx context.Context, id, owner string) error {
	_, err := s.db.ExecContext(ctx, s.dialect.Rebind(`UPDATE webhooks SET lease_owner = '', lease_until = 0 WHERE id = ? AND lease_owner = ?`), id, owner)
	return err
}

// pruneEvery is how often, in deliveries, a webhook's old sent blocks
// and acknowledged deliveries are deleted: they are kept at least keep
// and at most keep+pruneEvery.
const pruneEvery = 32

// lockHooks serializes webhook writes on SQLite and returns the unlock.
func (s *Store) lockHooks() func() {
	if s.dialect.Name != "sqlite" {
		return func() {}
	}
	s.hookMu.Lock()
	return s.hookMu.Unlock
}

// OutboxWrite is one write to a webhook's outbox, by the instance Owner
// that holds its lease: deliveries to add (Add, see Enqueue) or one
// acknowledged (Ack, see Ack). Added and Err are what it did.
type OutboxWrite struct {
	Webhook, Owner string
	// Keep is how many sent blocks and acknowledged deliveries below the
	// newest are kept.
	Keep  int64
	Add   []Delivery
	Ack   *Delivery
	Added []Delivery
	Err   error
}

// WriteOutbox does writes, of any webhooks, in one transaction: a
// thousand webhooks that saw the same block write their deliveries with
// one commit, not a thousand (SQLite has one writer). A write refused for
// its own sake (its lease lost, its webhook deleted), which leaves
// nothing half done, has that as its Err; any other error fails the
// transaction, and then each write is done in a transaction of its own,
// so that a failure is only its own write's.
func (s *Store) WriteOutbox(ctx context.Context, ws []*OutboxWrite) {
	defer s.lockHooks()()
	if len(ws) > 1 && s.writeOutbox(ctx, ws) == nil {
		return
	}
	for _, w := range ws {
		if err := s.writeOutbox(ctx, []*OutboxWrite{w}); err != nil {
			w.Added, w.Err = nil, err
		}
	}
}

// writeOutbox does ws in one transaction, and returns its error.
func (s *Store) writeOutbox(ctx context.Context, ws []*OutboxWrite) error {
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = sqlTx.Rollback() }()
	tx := &batchTx{Tx: sqlTx, s: s, stmts: map[string]*sql.Stmt{}}
	for _, w := range ws {
		w.Added, w.Err = nil, nil
		if w.Ack != nil {
			err = s.ackTx(ctx, tx, w)
		} else {
			err = s.enqueueTx(ctx, tx, w)
		}
		switch {
		case errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrWebhookNotFound):
			w.Err = err
		case err != nil:
			return err
		}
	}
	return tx.Commit()
}

// batchTx is a transaction that prepares each of its statements once, for
// the many writes of a batch (parsing them again took a tenth of the CPU
// of 1,000 webhooks' deliveries, docs/benchmarks.md, issue 38).
type batchTx struct {
	*sql.Tx
	s     *Store
	stmts map[string]*sql.Stmt // by query, as written (before Rebind)
}

// stmt prepares query in the transaction, once.
func (tx *batchTx) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := tx.stmts[query]; ok {
		return st, nil
	}
	st, err := tx.PrepareContext(ctx, tx.s.dialect.Rebind(query))
	if err != nil {
		return nil, err
	}
	tx.stmts[query] = st
	return st, nil
}

func (tx *batchTx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := tx.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// queryRow is QueryRowContext of the prepared query; its errors come with
// Scan.
func (tx *batchTx) queryRow(ctx context.Context, query string, args ...any) rowScanner {
	st, err := tx.stmt(ctx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// rowScanner is a row to scan.
type rowScanner interface{ Scan(...any) error }

// errRow is a row whose query could not be prepared.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// Enqueue writes deliveries to the webhook's outbox, after those there,
// if owner holds the lease, in one transaction; a delivery whose id is
// there already (an event seen again after a restart) is left out. A
// delivery that is not removed adds its block to the webhook's sent
// blocks, a removed one takes it out; sent blocks more than keep below
// the highest are forgotten.
func (s *Store) Enqueue(ctx context.Context, id, owner string, ds []Delivery, keep int64) ([]Delivery, error) {
	w := &OutboxWrite{Webhook: id, Owner: owner, Keep: keep, Add: ds}
	s.WriteOutbox(ctx, []*OutboxWrite{w})
	return w.Added, w.Err
}

// enqueueTx is w's Enqueue in tx.
func (s *Store) enqueueTx(ctx context.Context, tx *batchTx, w *OutboxWrite) error {
	id, owner, keep := w.Webhook, w.Owner, w.Keep
	// The lease and the last seq in one statement.
	var got string
	var until int64
	var seq sql.NullInt64
	err := tx.queryRow(ctx, `SELECT w.lease_owner, w.lease_until,
		(SELECT MAX(d.seq) FROM webhook_deliveries d WHERE d.webhook_id = w.id) FROM webhooks w WHERE w.id = ?`, id).Scan(&got, &until, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %q", ErrWebhookNotFound, id)
	}
	if err != nil {
		return err
	}
	if got != owner || until < s.now().UnixMilli() {
		return ErrLeaseLost
	}
	next := seq.Int64 + 1
	for _, d := range w.Add {
		if d.Silent {
			if err := s.followSilent(ctx, tx, id, d); err != nil {
				return err
			}
			continue
		}
		d.Seq = next
		res, err := tx.exec(ctx, `INSERT INTO webhook_deliveries
			(webhook_id, seq, id, block_number, block_hash, parent_hash, removed, body, acked) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)
			ON CONFLICT (webhook_id, id) DO NOTHING`,
			id, d.Seq, d.ID, d.Block.Number, d.Block.Hash, d.Block.ParentHash, boolInt(d.Removed), string(d.Body))
		if err != nil {
			return fmt.Errorf("store: enqueue: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			continue // seen before: known by its id
		}
		next++
		if d.Removed {
			_, err = tx.exec(ctx, `DELETE FROM webhook_blocks WHERE webhook_id = ? AND hash = ?`, id, d.Block.Hash)
		} else {
			_, err = tx.exec(ctx, `INSERT INTO webhook_blocks (webhook_id, number, hash, parent_hash)
				VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, id, d.Block.Number, d.Block.Hash, d.Block.ParentHash)
		}
		if err != nil {
			return fmt.Errorf("store: enqueue: %w", err)
		}
		w.Added = append(w.Added, d)
	}
	if next/pruneEvery != seq.Int64/pruneEvery {
		if _, err := tx.exec(ctx, `DELETE FROM webhook_blocks WHERE webhook_id = ? AND number <
			(SELECT MAX(number) FROM webhook_blocks WHERE webhook_id = ?) - ?`, id, id, keep); err != nil {
			return err
		}
	}
	return nil
}

// followSilent adds or takes back a block followed without a delivery.
func (s *Store) followSilent(ctx context.Context, tx *batchTx, id string, d Delivery) error {
	var err error
	if d.Removed {
		_, err = tx.exec(ctx, `DELETE FROM webhook_blocks WHERE webhook_id = ? AND hash = ?`, id, d.Block.Hash)
	} else {
		_, err = tx.exec(ctx, `INSERT INTO webhook_blocks (webhook_id, number, hash, parent_hash, silent)
			VALUES (?, ?, ?, ?, 1) ON CONFLICT DO NOTHING`, id, d.Block.Number, d.Block.Hash, d.Block.ParentHash)
	}
	if err != nil {
		return fmt.Errorf("store: enqueue: %w", err)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SentBlocks returns the blocks the webhook has been sent and not taken
// back, by number (the last is where its stream resumes).
func (s *Store) SentBlocks(ctx context.Context, id string) ([]BlockRef, error) {
	rows, err := s.db.QueryContext(ctx, s.dialect.Rebind(`SELECT number, hash, parent_hash, silent FROM webhook_blocks WHERE webhook_id = ? ORDER BY number, hash`), id)
	if err != nil {
		return nil, fmt.Errorf("store: sent blocks: %w", err)
	}
	defer rows.Close()
	var out []BlockRef
	for rows.Next() {
		var b BlockRef
		var silent int
		if err := rows.Scan(&b.Number, &b.Hash, &b.ParentHash, &silent); err != nil {
			return nil, err
		}
		b.Silent = silent != 0
		out = append(out, b)
	}
	return out, rows.Err()
}

// Pending returns up to limit deliveries of the webhook not acknowledged
// yet, in order.
func (s *Store) Pending(ctx context.Context, id string, limit int) ([]Delivery, error) {
	rows, err := s.db.QueryContext(ctx, s.dialect.Rebind(`SELECT seq, id, block_number, block_hash, parent_hash, removed, body
		FROM webhook_deliveries WHERE webhook_id = ? AND acked = 0 ORDER BY seq LIMIT ?`), id, limit)
	if err != nil {
		return nil, fmt.Errorf("store: pending deliveries: %w", err)
	}
	defer rows.Close()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		var removed int
		var body string
		if err := rows.Scan(&d.Seq, &d.ID, &d.Block.Number, &d.Block.Hash, &d.Block.ParentHash, &removed, &body); err != nil {
			return nil, err
		}
		d.Removed, d.Body = removed != 0, []byte(body)
		out = append(out, d)
	}
	return out, rows.Err()
}

// Ack marks a delivery acknowledged and moves the webhook's cursor to its
// block, if owner holds the lease. Acknowledged deliveries are kept (so a
// resent event is known by its id) until more than keep newer ones are.
func (s *Store) Ack(ctx context.Context, id, owner string, d Delivery, keep int64) error {
	w := &OutboxWrite{Webhook: id, Owner: owner, Keep: keep, Ack: &d}
	s.WriteOutbox(ctx, []*OutboxWrite{w})
	return w.Err
}

// ackTx is w's Ack in tx.
func (s *Store) ackTx(ctx context.Context, tx *batchTx, w *OutboxWrite) error {
	id, owner, d, keep := w.Webhook, w.Owner, w.Ack, w.Keep
	// The cursor moves only under the lease.
	res, err := tx.exec(ctx, `UPDATE webhooks SET cursor_number = ?, cursor_hash = ?, delivered = delivered + 1
		WHERE id = ? AND lease_owner = ? AND lease_until >= ?`, d.Block.Number, d.Block.Hash, id, owner, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("store: ack: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return ErrLeaseLost
	}
	if _, err := tx.exec(ctx, `UPDATE webhook_deliveries SET acked = 1, body = '' WHERE webhook_id = ? AND seq = ?`,
		id, d.Seq); err != nil {
		return fmt.Errorf("store: ack: %w", err)
	}
	if d.Seq%pruneEvery == 0 {
		if _, err := tx.exec(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ? AND acked = 1 AND seq < ?`,
			id, d.Seq-keep); err != nil {
			return fmt.Errorf("store: ack: %w", err)
		}
	}
	return nil
}
