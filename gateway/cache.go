package gateway

import (
	"github.com/maypok86/otter/v2"
)

// Cache holds answers that can never change, bounded by their total size in
// bytes. What may be cached is the family's decision, made by a method's
// params rule in its one scan of the params (portico.Params.Cache); the
// gateway only builds a key for a call that can hit.
type Cache struct {
	c *otter.Cache[string, []byte]
}

// NewCache returns a cache holding at most maxBytes of keys and results.
func NewCache(maxBytes uint64) *Cache {
	return &Cache{c: otter.Must(&otter.Options[string, []byte]{
		MaximumWeight: maxBytes,
		Weigher: func(k string, v []byte) uint32 {
			return uint32(min(len(k)+len(v), 1<<31))
		},
	})}
}

// cacheKey builds the cache key of a call.
func cacheKey(network, method string, params []byte) string {
	b := make([]byte, 0, len(network)+len(method)+len(params)+2)
	b = append(b, network...)
	b = append(b, 0)
	b = append(b, method...)
	b = append(b, 0)
	b = append(b, params...)
	return string(b)
}

// Get returns a cached result.
func (c *Cache) Get(key string) ([]byte, bool) { return c.c.GetIfPresent(key) }

// Set stores a result. The cache keeps its own copy.
func (c *Cache) Set(key string, result []byte) {
	c.c.Set(key, append([]byte(nil), result...))
}

// Close stops the cache's background work.
func (c *Cache) Close() { c.c.StopAllGoroutines() }
