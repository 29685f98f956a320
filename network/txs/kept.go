package txs

import (
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/metering/membudget"
)

// Bounds of the transactions kept for resending.
const (
	// KeepFor is how long a transaction that never landed is kept.
	KeepFor = 30 * time.Minute
	// MaxKeyTxs and MaxKeyBytes bound what one key keeps on one network:
	// more are still sent, not kept.
	MaxKeyTxs   = 1024
	MaxKeyBytes = 4 << 20
	// keptOverhead is what a kept transaction holds besides its bytes.
	keptOverhead = 256
)

// keptTx is a transaction kept until it lands or expires.
type keptTx struct {
	hash, key string
	method    string
	params    jsontext.Value
	size      int64
	added     time.Time
	checked   time.Time // sent, or last found held by a node
	resends   int
}

// keptTxs are the transactions a network keeps, by hash, with what each
// key holds; their bytes are taken from mem.
type keptTxs struct {
	mu     sync.Mutex
	byHash map[string]*keptTx
	perKey map[string]keyUse
	mem    *membudget.Budget
}

type keyUse struct {
	txs   int
	bytes int64
}

// add keeps a transaction key sent, once: kept says it is kept, fresh
// that it was not before; kept is false when the key's bounds or the
// memory budget leave no room.
func (k *keptTxs) add(key, hash, method string, params jsontext.Value, now time.Time) (kept, fresh bool) {
	size := int64(len(params)+len(hash)+len(method)) + keptOverhead
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.byHash[hash]; ok {
		return true, false
	}
	use := k.perKey[key]
	if use.txs >= MaxKeyTxs || use.bytes+size > MaxKeyBytes || !k.mem.Take(size) {
		return false, false
	}
	if k.byHash == nil {
		k.byHash, k.perKey = map[string]*keptTx{}, map[string]keyUse{}
	}
	k.byHash[hash] = &keptTx{hash: hash, key: key, method: method, params: append(jsontext.Value(nil), params...),
		size: size, added: now, checked: now}
	k.perKey[key] = keyUse{txs: use.txs + 1, bytes: use.bytes + size}
	return true, true
}

// remove lets a transaction go.
func (k *keptTxs) remove(hash string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.byHash[hash]
	if !ok {
		return
	}
	delete(k.byHash, hash)
	k.mem.Give(t.size)
	use := k.perKey[t.key]
	if use.txs <= 1 {
		delete(k.perKey, t.key)
		return
	}
	k.perKey[t.key] = keyUse{txs: use.txs - 1, bytes: use.bytes - t.size}
}

// due returns copies of the transactions not checked for after, and the
// hashes of those kept longer than KeepFor.
func (k *keptTxs) due(now time.Time, after time.Duration) (check []keptTx, expired []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for h, t := range k.byHash {
		switch {
		case now.Sub(t.added) >= KeepFor:
			expired = append(expired, h)
		case now.Sub(t.checked) >= after:
			check = append(check, *t)
		}
	}
	return check, expired
}

// checked notes that a transaction was sent again (resent) or found
// held by a node.
func (k *keptTxs) checked(hash string, now time.Time, resent bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if t, ok := k.byHash[hash]; ok {
		t.checked = now
		if resent {
			t.resends++
		}
	}
}

// len returns how many transactions are kept.
func (k *keptTxs) len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.byHash)
}
