package upstream

import "testing"

// The lag rule at its edges: a node exactly max_lag behind still serves
// the newest blocks, one more block behind does not, and a max_lag of 0
// bounds nothing.
func TestBeyondLag(t *testing.T) {
	cases := []struct {
		name        string
		lag, maxLag uint64
		want        bool
	}{
		{"at the head", 0, 10, false},
		{"exactly max_lag behind", 10, 10, false},
		{"one block more", 11, 10, true},
		{"no bound, at the head", 0, 0, false},
		{"no bound, far behind", 1 << 40, 0, false},
	}
	for _, c := range cases {
		if got := beyondLag(c.lag, c.maxLag); got != c.want {
			t.Errorf("%s: beyondLag(%d, %d) = %v, want %v", c.name, c.lag, c.maxLag, got, c.want)
		}
	}
}
