package topics

import "testing"

// TestResumerSeam: held notifications wait for the backfill; once live,
// the live stream's notifications about blocks the backfill told of are
// dropped (a node's stream that lags the view the backfill read) until
// one tells of another block; after it nothing is dropped.
func TestResumerSeam(t *testing.T) {
	r := &resumer{}
	if !r.hold("m", []byte(`1`)) {
		t.Fatal("a notification during the backfill was not held")
	}
	if held, lost := r.take(map[string]bool{"0xa": true}); len(held) != 1 || lost {
		t.Fatalf("take: %d held, lost %v", len(held), lost)
	}
	if held, _ := r.take(map[string]bool{"0xa": true, "0xb": true}); len(held) != 0 {
		t.Fatalf("take again: %d held", len(held))
	}
	if r.hold("m", []byte(`2`)) {
		t.Fatal("held after the client went live")
	}
	key := func(k string, ok bool) func() (string, bool) { return func() (string, bool) { return k, ok } }
	for _, c := range []struct {
		key     string
		ok      bool
		dropped bool
	}{
		{"0xa", true, true},  // the stream catching up with the backfill
		{"0xb", true, true},  // still told of
		{"0xc", true, false}, // past the seam: live from here
		{"0xa", true, false}, // never dropped again (a reorg back)
		{"", false, false},
	} {
		if got := r.toldOf(key(c.key, c.ok)); got != c.dropped {
			t.Errorf("%q: dropped %v, want %v", c.key, got, c.dropped)
		}
	}
	// A notification naming no block ends the check too.
	r = &resumer{}
	r.take(map[string]bool{"0xa": true})
	if r.toldOf(key("", false)) || r.toldOf(key("0xa", true)) {
		t.Error("dropped after a notification naming no block")
	}
}
