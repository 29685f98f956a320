package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/internal/testsvc"
	"github.com/porticohq/portico/network"
)

// TestSharedCache: two instances share final answers through a real
// Redis: what one asked a node for, the other serves without asking;
// answers not final stay with the instance that has them; entries are
// compressed and live under a TTL; a dead Redis is a miss, not an error.
func TestSharedCache(t *testing.T) {
	url, prefix := testsvc.Redis(t)
	opts, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	shared, err := network.NewRedisShared(rdb, network.RedisSharedConfig{Prefix: prefix, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	node := newChainNode(t, evmNode)
	a := newSharedEnv(t, node, shared)
	b := newSharedEnv(t, node, shared)
	hash := `"0x` + strings.Repeat("cd", 32) + `"`
	a.call(t, "eth_getBlockByHash", `[`+hash+`,true]`)
	waitFor(t, func() bool { return keys(t, rdb, prefix) == 1 }) // written off the call's path
	if _, state := b.call(t, "eth_getBlockByHash", `[`+hash+`,true]`); state != "HIT" {
		t.Fatalf("the second instance missed a shared final answer: X-Cache %q", state)
	}
	if got := node.count("eth_getBlockByHash", `[`+hash+`,true]`); got != 1 {
		t.Fatalf("the node was asked %d times", got)
	}
	// Not final: each instance asks on its own.
	a.call(t, "eth_getBlockByNumber", `["0x13",true]`)
	b.call(t, "eth_getBlockByNumber", `["0x13",true]`)
	if got := node.count("eth_getBlockByNumber", `["0x13",true]`); got != 2 {
		t.Fatalf("an unfinalized answer was shared: %d node calls", got)
	}
	if n := keys(t, rdb, prefix); n != 1 {
		t.Fatalf("%d shared entries, want 1", n)
	}
	for _, k := range rdb.Keys(context.Background(), prefix+"*").Val() {
		if ttl := rdb.TTL(context.Background(), k).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("entry TTL %v", ttl)
		}
		if v := rdb.Get(context.Background(), k).Val(); !strings.HasPrefix(v, "\x28\xb5\x2f\xfd") {
			t.Errorf("entry is not a zstd frame: %.60q", v)
		}
	}
	// Redis gone: a miss, the node answers.
	rdb.Close()
	c := newSharedEnv(t, node, shared)
	if got, _ := c.call(t, "eth_getBlockByHash", `[`+hash+`,false]`); !strings.Contains(got, `"result"`) {
		t.Fatalf("with Redis down: %s", got)
	}
}

func newSharedEnv(t *testing.T, node *chainNode, shared network.Shared) *cacheEnv {
	e := newCacheEnvWith(t, evm.Table(), node, network.NewCache(1<<20, shared))
	e.await(t, func(h portico.Heads) bool { return h.Latest == 20 })
	return e
}

func keys(t *testing.T, rdb *redis.Client, prefix string) int {
	t.Helper()
	ks, err := rdb.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return len(ks)
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSharedCacheEntryChecked: an entry someone else wrote to Redis that
// is not a JSON value is a miss, never an answer.
func TestSharedCacheEntryChecked(t *testing.T) {
	url, prefix := testsvc.Redis(t)
	opts, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	shared, err := network.NewRedisShared(rdb, network.RedisSharedConfig{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	shared.Set(context.Background(), "k", []byte(`{"a":1}`))
	waitFor(t, func() bool { _, ok := shared.Get(context.Background(), "k"); return ok })
	// A forged entry: a valid zstd frame of invalid JSON.
	forged, _ := network.NewRedisShared(rdb, network.RedisSharedConfig{Prefix: prefix})
	forged.Set(context.Background(), "k", []byte(`{"a":`))
	waitFor(t, func() bool { _, ok := shared.Get(context.Background(), "k"); return !ok })
}
