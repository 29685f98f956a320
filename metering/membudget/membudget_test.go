package membudget_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/membudget"
)

func TestTake(t *testing.T) {
	tests := []struct {
		name      string
		process   int64
		key       int64
		conn      int64
		held      int64 // taken from the connection first
		take      int64
		refusedBy string // "" when taken
	}{
		{"fits everywhere", 100, 50, 20, 0, 20, ""},
		{"connection full", 100, 50, 20, 10, 11, "connection"},
		{"key full", 100, 15, 20, 10, 6, "key"},
		{"process full", 12, 50, 20, 10, 3, "process"},
		{"no bound of its own", 100, 0, 0, 60, 40, ""},
		{"only the process bounds", 100, 0, 0, 60, 41, "process"},
		{"zero takes nothing", 1, 1, 1, 1, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := membudget.New("process", tc.process, nil)
			k := membudget.New("key", tc.key, p)
			c := membudget.New("connection", tc.conn, k)
			if !c.Take(tc.held) && tc.held > 0 {
				t.Fatal("setup take refused")
			}
			err := c.TakeErr(tc.take)
			var r *membudget.Refused
			switch {
			case tc.refusedBy == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refusedBy != "" && !errors.As(err, &r):
				t.Fatalf("taken, want refused by %s", tc.refusedBy)
			case tc.refusedBy != "" && r.Budget != tc.refusedBy:
				t.Fatalf("refused by %s, want %s", r.Budget, tc.refusedBy)
			}
			want := tc.held
			if err == nil {
				want += tc.take
			}
			for _, b := range []*membudget.Budget{c, k, p} {
				if b.Used() != want {
					t.Errorf("%s holds %d, want %d (a refused take must take nothing anywhere)", b.Name(), b.Used(), want)
				}
			}
			var limit *portico.LimitError
			if err != nil && (!errors.As(err, &limit) || limit.Limit != portico.LimitMemory) {
				t.Errorf("error %v is not a memory LimitError", err)
			}
		})
	}
}

func TestForceAndGive(t *testing.T) {
	p := membudget.New("process", 10, nil)
	c := membudget.New("connection", 5, p)
	c.Force(8)
	if !c.Over() || p.Over() || p.Used() != 8 {
		t.Fatalf("after Force(8): conn over %v, process over %v holding %d", c.Over(), p.Over(), p.Used())
	}
	if c.Take(1) {
		t.Fatal("a take past a forced budget was allowed")
	}
	c.Give(8)
	if c.Used() != 0 || p.Used() != 0 || c.Over() {
		t.Fatalf("after Give: %d, %d", c.Used(), p.Used())
	}
	var nilBudget *membudget.Budget
	if !nilBudget.Take(1 << 40) {
		t.Fatal("a nil budget bounds nothing")
	}
	nilBudget.Give(1)
	nilBudget.Force(1)
}

// TestConcurrentTakes: many holders taking and giving at once never make
// any budget of the tree hold more than its limit, and it all comes back.
func TestConcurrentTakes(t *testing.T) {
	p := membudget.New("process", 1<<20, nil)
	keys := membudget.NewKeys(400<<10, p)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var worst int64
	for g := range 16 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			k := keys.Of([]string{"a", "b", "c"}[g%3])
			c := membudget.New("connection", 200<<10, k)
			var held []int64
			for range 5000 {
				if len(held) > 0 && r.IntN(2) == 0 {
					c.Give(held[len(held)-1])
					held = held[:len(held)-1]
					continue
				}
				n := r.Int64N(64 << 10)
				if c.Take(n) {
					held = append(held, n)
				}
				for _, b := range []*membudget.Budget{c, k, p} {
					if u := b.Used(); u > b.Limit() {
						mu.Lock()
						worst = max(worst, u-b.Limit())
						mu.Unlock()
					}
				}
			}
			for _, n := range held {
				c.Give(n)
			}
		})
	}
	wg.Wait()
	// A take adds before it checks, so a reader can see a budget above its
	// limit for an instant; what matters is that no take that passed a
	// limit was kept: the tree comes back to zero and each limit held for
	// the takes that succeeded (checked by the refusals above).
	if p.Used() != 0 {
		t.Fatalf("process holds %d after every holder gave back", p.Used())
	}
	for _, name := range []string{"a", "b", "c"} {
		if u := keys.Of(name).Used(); u != 0 {
			t.Fatalf("key %s holds %d", name, u)
		}
	}
	t.Logf("largest momentary excess seen by a reader: %d bytes", worst)
}

func TestSystemMemory(t *testing.T) {
	m := membudget.SystemMemory()
	if m <= 0 {
		t.Fatalf("SystemMemory() = %d on Linux", m)
	}
	if d := membudget.DefaultProcessLimit(); d != m/membudget.ProcessShare {
		t.Errorf("DefaultProcessLimit() = %d, want %d", d, m/membudget.ProcessShare)
	}
}

func TestSetLimit(t *testing.T) {
	tests := []struct {
		name     string
		held     int64
		limit    int64
		take     int64
		taken    bool
		wantOver bool
	}{
		{"raised", 90, 200, 100, true, false},
		{"lowered below what is held", 90, 50, 1, false, true},
		{"lowered, still room", 10, 50, 40, true, false},
		{"no bound", 90, 0, 1000, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := membudget.New("process", 100, nil)
			b.Force(tc.held)
			b.SetLimit(tc.limit)
			if b.Over() != tc.wantOver {
				t.Fatalf("Over() = %v, want %v", b.Over(), tc.wantOver)
			}
			if got := b.Take(tc.take); got != tc.taken {
				t.Fatalf("Take(%d) = %v, want %v", tc.take, got, tc.taken)
			}
			if b.Limit() != max(tc.limit, 0) {
				t.Fatalf("Limit() = %d, want %d", b.Limit(), tc.limit)
			}
		})
	}
}

func TestKeysSetLimit(t *testing.T) {
	k := membudget.NewKeys(10, nil)
	before := k.Of("a")
	if before.Take(11) {
		t.Fatal("a key's budget of 10 took 11")
	}
	k.SetLimit(20)
	after := k.Of("b")
	for _, b := range []*membudget.Budget{before, after} {
		if !b.Take(11) {
			t.Fatal("a key's budget raised to 20 refused 11")
		}
		if b.Limit() != 20 {
			t.Fatalf("Limit() = %d, want 20", b.Limit())
		}
	}
}
