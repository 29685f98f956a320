package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/upstream"
)

// TestCheck: an answer a request's Check refuses is the node's fault: the
// node is benched, the call goes on to the next node, whose answer is
// returned; a check that says the node lacks the data moves on without
// benching; when every node is refused, the error says so.
func TestCheck(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	calls := map[string]int{}
	mk := func(name string) upstream.Member {
		return upstream.Member{Name: name, Node: nodeFunc(func() (jsontext.Value, error) {
			mu.Lock()
			calls[name]++
			mu.Unlock()
			return jsontext.Value(`"` + name + `"`), nil
		})}
	}
	pool := upstream.NewPool(upstream.PoolConfig{Network: "n", Members: []upstream.Member{mk("liar"), mk("lagging"), mk("honest")},
		Now: func() time.Time { return now }, Hedge: upstream.Hedge{Disabled: true}})
	wrong := errors.New("balance differs from the proof")
	checkFn := func(node string, res jsontext.Value) error {
		switch node {
		case "liar":
			return wrong
		case "lagging":
			return fmt.Errorf("null for a trusted block: %w", upstream.ErrMissing)
		}
		return nil
	}
	res, err := pool.Do(context.Background(), upstream.Request{Method: "m", Check: checkFn}, nil)
	if err != nil || string(res) != `"honest"` {
		t.Fatalf("Do = %s, %v; want the honest node's answer", res, err)
	}
	benched := map[string]bool{}
	for _, s := range pool.Nodes() {
		benched[s.Name] = s.Benched
	}
	if want := map[string]bool{"liar": true, "lagging": false, "honest": false}; fmt.Sprint(benched) != fmt.Sprint(want) {
		t.Errorf("benched = %v, want %v", benched, want)
	}
	if calls["liar"] != 1 || calls["lagging"] != 1 || calls["honest"] != 1 {
		t.Errorf("calls = %v, want one each", calls)
	}

	_, err = pool.Do(context.Background(), upstream.Request{Method: "m", Check: func(string, jsontext.Value) error { return wrong }}, nil)
	var ce *upstream.CheckError
	if !errors.As(err, &ce) || !errors.Is(err, wrong) {
		t.Errorf("every node refused: err = %v, want a CheckError wrapping the check's error", err)
	}

	// Fault benches a node found wrong after the fact.
	pool.Fault("honest")
	for _, s := range pool.Nodes() {
		if s.Name == "honest" && !s.Benched {
			t.Error("Fault did not bench the node")
		}
	}
	if res, err := pool.Ask(context.Background(), "lagging", "m", nil); err != nil || string(res) != `"lagging"` {
		t.Errorf("Ask = %s, %v", res, err)
	}
}
