package txs

import (
	"context"
	"errors"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network/chainview"
	"github.com/porticohq/portico/network/upstream"
)

// DefaultResendAfter is how long a kept transaction goes unchecked: then,
// when it has not landed and no node holds it, it is sent again.
const DefaultResendAfter = 15 * time.Second

// checkTimeout is the least time one kept transaction's check may take.
const checkTimeout = 10 * time.Second

// Keep keeps a transaction key sent with method and params (its bytes),
// until it lands or KeepFor passes, and sends it again when no node holds
// it; false when the key's bounds or the memory budget leave no room.
// It starts the tracker's resend loop the first time.
func (t *Tracker) Keep(key, hash, method string, params jsontext.Value) bool {
	if !t.Resends() {
		return false
	}
	kept, fresh := t.kept.add(key, hash, method, params, t.now())
	switch {
	case !kept:
		t.event(metrics.TxNotKept)
	case fresh:
		t.event(metrics.TxSent)
		t.start.Do(t.startLoop)
	}
	return kept
}

// Resends reports whether the tracker keeps and resends transactions:
// the family says how a node is asked where one landed.
func (t *Tracker) Resends() bool { return t.Follows() }

// Kept returns how many transactions the tracker keeps.
func (t *Tracker) Kept() int { return t.kept.len() }

// startLoop checks the kept transactions every half ResendAfter and at
// every change of the served chain, until Close.
func (t *Tracker) startLoop() {
	kick := make(chan struct{}, 1)
	stop := t.up.View().OnSwitch(func(chainview.Switch) {
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer stop()
		tick := time.NewTicker(max(t.set.ResendAfter/2, 10*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-t.done:
				return
			case <-kick:
			case <-tick.C:
			}
			t.sweep()
		}
	}()
}

// Close stops the resend loop; the kept transactions are let go.
func (t *Tracker) Close() {
	t.closeOnce.Do(func() { close(t.done) })
	t.wg.Wait()
}

// sweep checks each kept transaction that is due: one that landed on the
// served chain is let go, one a node holds waits, and one no node holds
// is sent again. One kept too long is let go.
func (t *Tracker) sweep() {
	check, expired := t.kept.due(t.now(), t.set.ResendAfter)
	for _, h := range expired {
		t.kept.remove(h)
		t.event(metrics.TxExpired)
	}
	for _, k := range check {
		t.check(k)
	}
}

// check looks at one kept transaction (see sweep).
func (t *Tracker) check(k keptTx) {
	// The nodes' own timeouts bound each call; this bounds the check.
	ctx, cancel := context.WithTimeout(context.Background(), max(t.set.ResendAfter, checkTimeout))
	defer cancel()
	if _, ok := t.landed(ctx, k.hash); ok {
		t.kept.remove(k.hash)
		t.landedAfter(t.now().Sub(k.added))
		return
	}
	if t.held(ctx, k.hash) {
		t.kept.checked(k.hash, t.now(), false)
		return
	}
	if t.expired(ctx, k) {
		t.kept.remove(k.hash)
		t.event(metrics.TxExpired)
		t.log.Debug("transaction let go: it can no longer land", "network", t.network, "tx", k.hash)
		return
	}
	_, err := t.up.Do(ctx, upstream.Request{Method: k.method, Params: k.params, Write: true, TxHash: k.hash, Resend: true}, nil)
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		// The nodes refuse it now (its nonce was used by another
		// transaction, its sender's funds are gone): nothing to resend.
		t.kept.remove(k.hash)
		t.event(metrics.TxRefused)
		return
	}
	t.kept.checked(k.hash, t.now(), true)
	t.event(metrics.TxResent)
	t.log.Debug("transaction sent again: no node held it", "network", t.network, "tx", k.hash, "err", err)
}

// held reports whether a node holds the transaction (pending or landed);
// false for a family whose nodes do not tell.
func (t *Tracker) held(ctx context.Context, hash string) bool {
	if t.rules.Held == nil || t.rules.Holds == nil {
		return false
	}
	method, params := t.rules.Held(hash)
	res, err := t.up.Do(ctx, upstream.Request{Method: method, Params: params}, nil)
	return err == nil && t.rules.Holds(res)
}

// expired reports whether a node says the transaction can no longer land
// (the family's Expiry); false when the family has no such rule or no
// node answers.
func (t *Tracker) expired(ctx context.Context, k keptTx) bool {
	if t.rules.Expiry == nil || t.rules.Expired == nil {
		return false
	}
	method, params, ok := t.rules.Expiry(k.params)
	if !ok {
		return false
	}
	res, err := t.up.Do(ctx, upstream.Request{Method: method, Params: params}, nil)
	return err == nil && t.rules.Expired(res)
}
