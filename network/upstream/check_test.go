package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/network/upstream"
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

// methodNode answers each method with its own function.
type methodNode map[string]func() (jsontext.Value, error)

func (n methodNode) Call(ctx context.Context, method string, params jsontext.Value, dst []byte) (jsontext.Value, error) {
	return n.Send(ctx, method, params, upstream.Limits{}, dst)
}
func (n methodNode) Send(_ context.Context, method string, _ jsontext.Value, _ upstream.Limits, _ []byte) (jsontext.Value, error) {
	return n[method]()
}
func (n methodNode) Close() error { return nil }

// TestFaultNotClearedByEarlierCall: a good answer to a call that was sent
// before the node's wrong answer does not lift the bench the wrong answer
// earned (calls in flight side by side, as a local eth_call's fetches are).
func TestFaultNotClearedByEarlierCall(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{})
	liar := methodNode{
		"slow":  func() (jsontext.Value, error) { close(arrived); <-release; return jsontext.Value(`"fine"`), nil },
		"proof": func() (jsontext.Value, error) { return jsontext.Value(`"lie"`), nil },
	}
	honest := methodNode{
		"slow":  func() (jsontext.Value, error) { return jsontext.Value(`"fine"`), nil },
		"proof": func() (jsontext.Value, error) { return jsontext.Value(`"truth"`), nil },
	}
	pool := upstream.NewPool(upstream.PoolConfig{Network: "n", Members: []upstream.Member{{Name: "liar", Node: liar}, {Name: "honest", Node: honest}},
		Hedge: upstream.Hedge{Disabled: true}})
	slow := make(chan error, 1)
	go func() {
		_, err := pool.Do(context.Background(), upstream.Request{Method: "slow"}, nil)
		slow <- err
	}()
	<-arrived // the slow call is at the liar before it lies
	res, err := pool.Do(context.Background(), upstream.Request{Method: "proof", Check: func(_ string, res jsontext.Value) error {
		if string(res) != `"truth"` {
			return errors.New("wrong")
		}
		return nil
	}}, nil)
	if err != nil || string(res) != `"truth"` {
		t.Fatalf("proof = %s, %v", res, err)
	}
	close(release) // the slow call, sent to the liar before its lie, answers well
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	for _, s := range pool.Nodes() {
		if s.Name == "liar" && !s.Benched {
			t.Error("an answer to a call sent before the wrong answer lifted the bench")
		}
	}
}
