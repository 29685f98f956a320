package starknetdevnet

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

type txStatusJSON struct {
	TransactionHash string `json:"transaction_hash"`
	Status          struct {
		Finality  string `json:"finality_status"`
		Execution string `json:"execution_status"`
	} `json:"status"`
}

func expectStatus(t *testing.T, w *wsClient, id json.RawMessage, hash Felt, finality string) {
	t.Helper()
	s := decodeJSON[txStatusJSON](t, w.expect(notifyTxStatus, id).Params.Result)
	if s.TransactionHash != starknettx.Hex(&hash) || s.Status.Finality != finality || s.Status.Execution != "SUCCEEDED" {
		t.Fatalf("status %+v, want %s %s SUCCEEDED", s, starknettx.Hex(&hash), finality)
	}
}

// pendingTx returns the i-th transaction of the pending block.
func pendingTx(d *Devnet, i int) *txn {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.pending.txs[i]
}

// TestWSTransactionStatus follows transactions through the devnet's
// statuses: ACCEPTED_ON_L2 from the pending block on (sealing does not
// change it), ACCEPTED_ON_L1 once the block is L1Lag behind, and then the
// subscription ends itself.
func TestWSTransactionStatus(t *testing.T) {
	spec := loadWSSpec(t)
	d, _ := startDevnet(t, Config{Clock: fixedClock, L1Lag: 2})
	buildChain(t, d, 1, 1)
	w := dialWS(t, d, spec)

	// A transaction of the traffic, subscribed to while pending.
	traffic(t, d)
	tx := pendingTx(d, 0)
	id := w.subscribe("starknet_subscribeTransactionStatus", `{"transaction_hash":"`+starknettx.Hex(&tx.hash)+`"}`)
	expectStatus(t, w, id, tx.hash, statusL2)
	n := seal(t, d) // sealed: still ACCEPTED_ON_L2, nothing to say
	w.quiet()
	seal(t, d)
	w.quiet()
	seal(t, d) // block n is now latest-2: accepted on L1
	expectStatus(t, w, id, tx.hash, statusL1)
	w.quiet()
	if res := w.must("starknet_unsubscribe", `[`+string(id)+`]`); string(res) != "false" {
		t.Fatalf("unsubscribe after the final status: %s, want false (it ended itself)", res)
	}

	// Already final: one notification, then the subscription has ended.
	old := firstTx(t, d, n)
	id = w.subscribe("rollup_subscribeTransactionStatus", `["`+starknettx.Hex(&old)+`"]`)
	expectStatus(t, w, id, old, statusL1)
	if res := w.must("starknet_unsubscribe", `{"subscription_id":`+string(id)+`}`); string(res) != "false" {
		t.Fatalf("unsubscribe of a final status: %s", res)
	}

	// Sealed but not on L1 yet.
	traffic(t, d)
	m := seal(t, d)
	recent := firstTx(t, d, m)
	id = w.subscribe("starknet_subscribeTransactionStatus", `["`+starknettx.Hex(&recent)+`"]`)
	expectStatus(t, w, id, recent, statusL2)
	seal(t, d)
	w.quiet()
	seal(t, d)
	expectStatus(t, w, id, recent, statusL1)

	// Unknown: nothing until it appears; here it appears only when sealed
	// (put in the pending block without traffic), then it goes on as usual.
	unknown := starknettx.FeltU64(0x5ca1ab1e)
	id = w.subscribe("starknet_subscribeTransactionStatus", `["`+starknettx.Hex(&unknown)+`"]`)
	w.quiet()
	traffic(t, d)
	w.quiet()
	d.mu.Lock()
	d.pending.txs = append(d.pending.txs, &txn{hash: unknown, kind: kindInvoke, sender: starknettx.FeltU64(1)})
	d.mu.Unlock()
	seal(t, d)
	expectStatus(t, w, id, unknown, statusL2)
	seal(t, d)
	w.quiet()
	seal(t, d)
	expectStatus(t, w, id, unknown, statusL1)
	w.quiet()
}

// firstTx returns the first transaction hash of a sealed block.
func firstTx(t *testing.T, d *Devnet, block uint64) Felt {
	t.Helper()
	var h []byte
	if err := d.db.QueryRow(`SELECT hash FROM txs WHERE block = ? ORDER BY idx LIMIT 1`, block).Scan(&h); err != nil {
		t.Fatal(err)
	}
	return feltFromKey(h)
}

// txDetailsJSON is a TXN_WITH_HASH as the devnet sends it.
type txDetailsJSON struct {
	TransactionHash string   `json:"transaction_hash"`
	Type            string   `json:"type"`
	Version         string   `json:"version"`
	Nonce           string   `json:"nonce"`
	SenderAddress   string   `json:"sender_address"`
	Calldata        []string `json:"calldata"`
	ClassHash       string   `json:"class_hash"`
	CompiledClass   string   `json:"compiled_class_hash"`
	Salt            string   `json:"contract_address_salt"`
	Constructor     []string `json:"constructor_calldata"`
	Tip             string   `json:"tip"`
	ResourceBounds  map[string]struct {
		MaxAmount string `json:"max_amount"`
		MaxPrice  string `json:"max_price_per_unit"`
	} `json:"resource_bounds"`
}

// rehash recomputes a transaction's hash from what the notification shows,
// which proves the details are the transaction the devnet hashed.
func rehash(t *testing.T, d *Devnet, tx txDetailsJSON) Felt {
	t.Helper()
	f := func(s string) Felt {
		v, err := starknettx.ParseFelt(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return v
	}
	fs := func(ss []string) []Felt {
		out := make([]Felt, len(ss))
		for i, s := range ss {
			out[i] = f(s)
		}
		return out
	}
	u := func(s string) uint64 {
		v, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return v
	}
	rb := tx.ResourceBounds
	fees := resourceBounds{tip: u(tx.Tip),
		l1Amount: u(rb["l1_gas"].MaxAmount), l1Price: u(rb["l1_gas"].MaxPrice),
		l2Amount: u(rb["l2_gas"].MaxAmount), l2Price: u(rb["l2_gas"].MaxPrice),
		dataAmount: u(rb["l1_data_gas"].MaxAmount), dataPrice: u(rb["l1_data_gas"].MaxPrice)}
	nonce := u(tx.Nonce)
	switch tx.Type {
	case kindInvoke:
		return v3Hash("invoke", f(tx.SenderAddress), fees, d.chain, nonce, poseidonMany(), poseidonMany(fs(tx.Calldata)...))
	case kindDeclare:
		return v3Hash("declare", f(tx.SenderAddress), fees, d.chain, nonce, poseidonMany(), f(tx.ClassHash), f(tx.CompiledClass))
	case kindDeployAccount:
		ctor := fs(tx.Constructor)
		addr := contractAddress(Felt{}, f(tx.Salt), f(tx.ClassHash), ctor)
		return v3Hash("deploy_account", addr, fees, d.chain, nonce, poseidonMany(ctor...), f(tx.ClassHash), f(tx.Salt))
	}
	t.Fatalf("type %s", tx.Type)
	return Felt{}
}

// TestWSPendingTransactions subscribes to pending transactions as hashes,
// with details, and filtered by sender, and checks each against the
// transactions the traffic adds.
func TestWSPendingTransactions(t *testing.T) {
	spec := loadWSSpec(t)
	d, _ := startDevnet(t, Config{Clock: fixedClock})
	accts := d.world.accounts()
	sender := accts[3]
	w := dialWS(t, d, spec)
	traffic(t, d) // before the subscriptions: not sent
	hashes := w.subscribe("starknet_subscribePendingTransactions", "")
	details := w.subscribe("starknet_subscribePendingTransactions", `{"transaction_details":true}`)
	filtered := w.subscribe("rollup_subscribePendingTransactions", `[false,["`+starknettx.Hex(&sender)+`"]]`)
	w.quiet()

	kinds := map[string]int{}
	sawFiltered := 0
	for round := 0; kinds[kindDeclare] == 0 || kinds[kindDeployAccount] == 0 || sawFiltered == 0; round++ {
		if round > 200 {
			t.Fatalf("no DECLARE, DEPLOY_ACCOUNT and filtered transaction in 200 rounds: %v, %d", kinds, sawFiltered)
		}
		d.mu.RLock()
		before := len(d.pending.txs)
		d.mu.RUnlock()
		traffic(t, d)
		w.fence() // every notification of the round is in the backlog now
		d.mu.RLock()
		added := d.pending.txs[before:]
		d.mu.RUnlock()
		got := map[string][]json.RawMessage{}
		for len(w.backlog) > 0 {
			m := w.next()
			if m.Method != notifyPendingTx {
				t.Fatalf("got %s", m.Raw)
			}
			if err := spec.CheckNotification(m.Method, m.Params.SubscriptionID, m.Params.Result); err != nil {
				t.Fatalf("%s: %v", m.Raw, err)
			}
			got[string(m.Params.SubscriptionID)] = append(got[string(m.Params.SubscriptionID)], m.Params.Result)
		}
		var wantFiltered []Felt
		for _, tx := range added {
			if tx.sender.Equal(&sender) {
				wantFiltered = append(wantFiltered, tx.hash)
			}
		}
		if len(got[string(hashes)]) != len(added) || len(got[string(details)]) != len(added) || len(got[string(filtered)]) != len(wantFiltered) {
			t.Fatalf("round %d: %d transactions added; %d hashes, %d details, %d filtered (want %d)", round,
				len(added), len(got[string(hashes)]), len(got[string(details)]), len(got[string(filtered)]), len(wantFiltered))
		}
		for i, tx := range added {
			if h := decodeJSON[string](t, got[string(hashes)][i]); h != starknettx.Hex(&tx.hash) {
				t.Fatalf("hash %d: %s, want %s", i, h, starknettx.Hex(&tx.hash))
			}
			full := decodeJSON[txDetailsJSON](t, got[string(details)][i])
			if full.TransactionHash != starknettx.Hex(&tx.hash) || full.Type != tx.kind || full.Version != "0x3" {
				t.Fatalf("details %d: %+v", i, full)
			}
			if h := rehash(t, d, full); !h.Equal(&tx.hash) {
				t.Fatalf("%s details hash to %s, not %s", tx.kind, starknettx.Hex(&h), starknettx.Hex(&tx.hash))
			}
			kinds[tx.kind]++
		}
		for i, h := range wantFiltered {
			if g := decodeJSON[string](t, got[string(filtered)][i]); g != starknettx.Hex(&h) {
				t.Fatalf("filtered %d: %s, want %s", i, g, starknettx.Hex(&h))
			}
		}
		sawFiltered += len(wantFiltered)
		if round%3 == 2 {
			seal(t, d)
			w.quiet() // sealing sends nothing here
		}
	}
}
