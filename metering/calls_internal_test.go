package metering

import (
	"errors"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// TestKeyCallsBucket: calls per second refill continuously, a batch is
// admitted whole, and a key without a bucket is forgotten when idle.
func TestKeyCallsBucket(t *testing.T) {
	var k Calls
	now := time.Unix(1000, 0)
	r := &apikey.Rules{RequestsPerSecond: 10}
	for i := range 10 {
		rel, err := k.Take("a", r, 1, now)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		rel()
	}
	var q *portico.QuotaError
	if _, err := k.Take("a", r, 1, now); !errors.As(err, &q) || q.Limit != portico.QuotaRequests || q.RetryAfter != 100*time.Millisecond {
		t.Fatalf("11th call: %v", err)
	}
	if _, err := k.Take("a", r, 5, now.Add(400*time.Millisecond)); err == nil {
		t.Fatal("5 calls with 4 refilled passed")
	}
	rel, err := k.Take("a", r, 4, now.Add(400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rel()
	c := &apikey.Rules{MaxConcurrent: 2}
	rel1, _ := k.Take("b", c, 2, now)
	if _, err := k.Take("b", c, 1, now); !errors.As(err, &q) || q.Limit != portico.QuotaConcurrent {
		t.Fatalf("third in flight: %v", err)
	}
	rel1()
	if _, ok := k.keys["b"]; ok {
		t.Error("an idle key without a bucket is kept")
	}
}
