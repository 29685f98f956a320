package network

import (
	"context"
	"encoding/binary"
	"sync"

	"github.com/maypok86/otter/v2"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/network/chainview"
	"github.com/porticohq/portico/network/paramkey"
)

// Cache holds answers that a family's params rule says may be cached
// (portico.Params.Cache), bounded by their total size in bytes, and keeps
// them true as the chain moves: answers about unfinalized blocks are
// dropped when a reorg replaces their block, answers about the current
// head when a new head arrives. Final answers may also go to a Shared
// cache that many instances use.
//
// What may be cached is the family's decision, made by a method's params
// rule in its one scan of the params; the gateway only builds a key for a
// call that can hit.
type Cache struct {
	c      *otter.Cache[string, []byte]
	shared Shared // nil: this instance only

	mu       sync.Mutex
	networks map[string]*netIndex
}

// Shared is a cache that many instances share (Redis): only final answers
// go there, since each instance follows reorgs and heads on its own.
type Shared interface {
	Get(ctx context.Context, key string) ([]byte, bool)
	Set(ctx context.Context, key string, value []byte)
}

// netIndex finds the entries of one network that the chain can still make
// wrong: those about unfinalized blocks, by block, and those about the
// current head.
type netIndex struct {
	unfinal map[uint64][]string
	n       int // keys in unfinal
	perHead []string
	head    string // the hash of the head perHead entries are about
}

// maxUnfinalKeys bounds the index of unfinalized entries per network; an
// answer beyond it is not cached (a burst about new blocks passes by).
const maxUnfinalKeys = 1 << 16

// NewCache returns a cache holding at most maxBytes of keys and results;
// shared may be nil.
func NewCache(maxBytes uint64, shared Shared) *Cache {
	return &Cache{
		c: otter.Must(&otter.Options[string, []byte]{
			MaximumWeight: maxBytes,
			Weigher: func(k string, v []byte) uint32 {
				return uint32(min(len(k)+len(v), 1<<31))
			},
		}),
		shared:   shared,
		networks: map[string]*netIndex{},
	}
}

// cacheKey builds the cache key of a call: params in their canonical form
// (paramkey), so that clients spelling the same params differently share
// answers. at, when not 0, is the head a PerHead answer is about.
func cacheKey(form portico.KeyForm, network, method string, params []byte, at uint64) string {
	b := make([]byte, 0, len(network)+len(method)+len(params)+11)
	b = append(b, network...)
	b = append(b, 0)
	b = append(b, method...)
	b = append(b, 0)
	if at != 0 {
		b = binary.BigEndian.AppendUint64(b, at)
		b = append(b, 0)
	}
	b = paramkey.Append(b, params, form)
	return string(b)
}

// get returns a cached answer: this instance's, else the shared one's.
func (c *Cache) get(ctx context.Context, key string, final bool) ([]byte, bool) {
	if v, ok := c.c.GetIfPresent(key); ok {
		return v, true
	}
	if final && c.shared != nil {
		if v, ok := c.shared.Get(ctx, key); ok {
			c.c.Set(key, v)
			return v, true
		}
	}
	return nil, false
}

// setFinal stores an answer that can never change.
func (c *Cache) setFinal(ctx context.Context, key string, result []byte) {
	v := append([]byte(nil), result...)
	c.c.Set(key, v)
	if c.shared != nil {
		c.shared.Set(ctx, key, v)
	}
}

// setUnfinal stores an answer about block n, not yet final, that was
// answered at the block with hash: only if that block is still on the
// served chain (onChain), so that a reorg that happened while the call
// was on its way cannot leave a wrong answer; a later reorg that drops
// block n drops it. Both happen under the index's lock, with the entry
// written there too, so a reorg's drop and a store never interleave.
func (c *Cache) setUnfinal(network string, n uint64, hash string, onChain func(string) bool, key string, result []byte) {
	v := append([]byte(nil), result...)
	c.mu.Lock()
	defer c.mu.Unlock()
	ix := c.index(network)
	if ix.n >= maxUnfinalKeys || hash == "" || !onChain(hash) {
		return
	}
	ix.unfinal[n] = append(ix.unfinal[n], key)
	ix.n++
	c.c.Set(key, v)
}

// setPerHead stores an answer about the head with hash: the next head
// drops it.
func (c *Cache) setPerHead(network string, hash string, key string, result []byte) {
	v := append([]byte(nil), result...)
	c.mu.Lock()
	defer c.mu.Unlock()
	ix := c.index(network)
	if hash == "" || hash != ix.head || len(ix.perHead) >= maxUnfinalKeys {
		return // a head has passed meanwhile, or the burst is too large
	}
	ix.perHead = append(ix.perHead, key)
	c.c.Set(key, v)
}

func (c *Cache) index(network string) *netIndex {
	ix := c.networks[network]
	if ix == nil {
		ix = &netIndex{unfinal: map[uint64][]string{}}
		c.networks[network] = ix
	}
	return ix
}

// heads follows a network's new heads: answers about the old head go, and
// answers about blocks now final stay for good (they leave the index).
func (c *Cache) heads(network string, h portico.Heads) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ix := c.index(network)
	if h.Head.Hash != ix.head {
		for _, k := range ix.perHead {
			c.c.Invalidate(k)
		}
		ix.perHead, ix.head = nil, h.Head.Hash
	}
	for n, keys := range ix.unfinal {
		if n <= h.Finalized {
			ix.n -= len(keys)
			delete(ix.unfinal, n)
		}
	}
}

// switched follows a switch of a network's served chain: a reorg drops
// every answer about a block above the common ancestor at once, a reset
// every answer about a block not final.
func (c *Cache) switched(network string, sw chainview.Switch) {
	if !sw.Reorg() && !sw.Reset {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ix := c.index(network)
	for n, keys := range ix.unfinal {
		if sw.Reset || n > sw.Ancestor.Number {
			for _, k := range keys {
				c.c.Invalidate(k)
			}
			ix.n -= len(keys)
			delete(ix.unfinal, n)
		}
	}
	for _, k := range ix.perHead {
		c.c.Invalidate(k)
	}
	ix.perHead = nil
}

// Close stops the cache's background work.
func (c *Cache) Close() { c.c.StopAllGoroutines() }
