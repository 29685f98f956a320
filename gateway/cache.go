package gateway

import (
	"context"
	"encoding/binary"
	"sync"

	"github.com/maypok86/otter/v2"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/paramkey"
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
	head    uint64 // the head perHead entries are about
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

// setUnfinal stores an answer about block n, not yet final: a reorg from
// n or below drops it.
func (c *Cache) setUnfinal(network string, n uint64, key string, result []byte) {
	c.mu.Lock()
	ix := c.index(network)
	if ix.n >= maxUnfinalKeys {
		c.mu.Unlock()
		return
	}
	ix.unfinal[n] = append(ix.unfinal[n], key)
	ix.n++
	c.mu.Unlock()
	c.c.Set(key, append([]byte(nil), result...))
}

// setPerHead stores an answer about head: the next head drops it.
func (c *Cache) setPerHead(network string, head uint64, key string, result []byte) {
	c.mu.Lock()
	ix := c.index(network)
	if head != ix.head || len(ix.perHead) >= maxUnfinalKeys {
		c.mu.Unlock()
		return // a head has passed meanwhile, or the burst is too large
	}
	ix.perHead = append(ix.perHead, key)
	c.mu.Unlock()
	c.c.Set(key, append([]byte(nil), result...))
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
	ix := c.index(network)
	var drop []string
	if h.Latest != ix.head {
		drop, ix.perHead, ix.head = ix.perHead, nil, h.Latest
	}
	for n, keys := range ix.unfinal {
		if n <= h.Finalized {
			ix.n -= len(keys)
			delete(ix.unfinal, n)
		}
	}
	c.mu.Unlock()
	for _, k := range drop {
		c.c.Invalidate(k)
	}
}

// reorg drops a network's answers about blocks from on, which the chain
// replaced.
func (c *Cache) reorg(network string, from uint64) {
	c.mu.Lock()
	ix := c.index(network)
	var drop []string
	for n, keys := range ix.unfinal {
		if n >= from {
			drop = append(drop, keys...)
			ix.n -= len(keys)
			delete(ix.unfinal, n)
		}
	}
	drop = append(drop, ix.perHead...)
	ix.perHead = nil
	c.mu.Unlock()
	for _, k := range drop {
		c.c.Invalidate(k)
	}
}

// Close stops the cache's background work.
func (c *Cache) Close() { c.c.StopAllGoroutines() }
