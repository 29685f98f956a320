package limit

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico/internal/testsvc"
)

// twoInstances returns Shared for two instances on the test Redis, each
// with its own client, under one prefix.
func twoInstances(t *testing.T) (Shared, Shared) {
	url, prefix := testsvc.Redis(t)
	var out [2]Shared
	for i := range out {
		opts, _ := redis.ParseURL(url)
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { _ = rdb.Close() })
		out[i] = NewRedis(rdb, prefix)
	}
	return out[0], out[1]
}

// TestSharedWindow: a client's requests over two instances are counted as
// one window.
func TestSharedWindow(t *testing.T) {
	a, b := twoInstances(t)
	wa := &Window{Limit: 4, Per: time.Minute, Shared: a, Name: "starts"}
	wb := &Window{Limit: 4, Per: time.Minute, Shared: b, Name: "starts"}
	other := &Window{Limit: 4, Per: time.Minute, Shared: b, Name: "codes"}
	for i := range 4 {
		w := []*Window{wa, wb}[i%2]
		if !w.Allow("203.0.113.7", 1) {
			t.Fatalf("take %d refused", i)
		}
	}
	for _, w := range []*Window{wa, wb} {
		ok, wait := w.Take("203.0.113.7", 1)
		if ok || wait <= 0 || wait > time.Minute {
			t.Fatalf("a fifth of 4 over two instances: %v %v", ok, wait)
		}
	}
	if !wb.Allow("203.0.113.8", 4) || !other.Allow("203.0.113.7", 4) {
		t.Fatal("another client's window, or another limit's, was taken")
	}
	if wa.Len() != 0 {
		t.Fatalf("memory holds %d windows while Redis answers", wa.Len())
	}
}

// TestSharedBackoff: failures over two instances lock as one, a success
// on either resets them, and they are forgotten after Forget.
func TestSharedBackoff(t *testing.T) {
	a, b := twoInstances(t)
	mk := func(s Shared) *Backoff {
		return &Backoff{Free: 2, Base: time.Minute, Max: time.Hour, Forget: time.Hour, Shared: s, Name: "codes"}
	}
	ba, bb := mk(a), mk(b)
	if n, lock := ba.Fail("x@example.com"); n != 1 || lock != 0 {
		t.Fatalf("1st: %d %v", n, lock)
	}
	if n, lock := bb.Fail("x@example.com"); n != 2 || lock != 0 {
		t.Fatalf("2nd, other instance: %d %v", n, lock)
	}
	if n, lock := ba.Fail("x@example.com"); n != 3 || lock != time.Minute {
		t.Fatalf("3rd: %d %v", n, lock)
	}
	if w := bb.Wait("x@example.com"); w <= 0 || w > time.Minute {
		t.Fatalf("the other instance's wait: %v", w)
	}
	if n, lock := bb.Fail("x@example.com"); n != 4 || lock != 2*time.Minute {
		t.Fatalf("4th: %d %v", n, lock)
	}
	if bb.Failures("x@example.com") != 4 || ba.Failures("y@example.com") != 0 {
		t.Fatal("failures")
	}
	ba.Reset("x@example.com")
	if bb.Wait("x@example.com") != 0 || bb.Failures("x@example.com") != 0 {
		t.Fatal("a reset on one instance did not reach the other")
	}
	short := &Backoff{Free: 0, Base: 50 * time.Millisecond, Max: 50 * time.Millisecond, Forget: 100 * time.Millisecond, Shared: a, Name: "short"}
	short.Fail("k")
	deadline := time.Now().Add(30 * time.Second)
	for short.Failures("k") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("failures not forgotten")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSharedUnreachable: without Redis the limits count in memory, as
// without Shared.
func TestSharedUnreachable(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()
	s := NewRedis(rdb, "x:")
	w := &Window{Limit: 2, Per: time.Minute, Shared: s, Name: "w"}
	if !w.Allow("a", 2) || w.Allow("a", 1) {
		t.Fatal("the window in memory")
	}
	b := &Backoff{Free: 1, Base: time.Minute, Max: time.Hour, Shared: s, Name: "b"}
	b.Fail("a")
	if _, lock := b.Fail("a"); lock != time.Minute || b.Wait("a") <= 0 {
		t.Fatal("the backoff in memory")
	}
}
