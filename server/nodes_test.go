package server

import (
	"slices"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families"
)

// TestNetworkViewMarks: each family's heads as the nodes answer names
// them; only the EVM family has a head called safe.
func TestNetworkViewMarks(t *testing.T) {
	want := map[portico.Family][]string{
		"evm":      {"latest", "safe", "finalized"},
		"solana":   {"processed", "confirmed", "finalized"},
		"starknet": {"latest", "l1_accepted"},
	}
	for _, f := range families.All() {
		var got []string
		for _, m := range newNetworkView(f.Table(true).Chain).marks {
			got = append(got, m.tag)
		}
		if !slices.Equal(got, want[f.Name]) {
			t.Errorf("%s: marks %v, want %v", f.Name, got, want[f.Name])
		}
	}
}

// TestNetworkViewCounting: the counting table counts the answers its
// methods give from heads, not the calls they leave to a node, and leaves
// the family's table as it was.
func TestNetworkViewCounting(t *testing.T) {
	give := true
	answer := func(portico.Params, portico.Heads) (jsontext.Value, bool) { return jsontext.Value(`"0x1"`), give }
	table := portico.Table{
		Methods: []portico.Method{{Name: "a", FromHeads: answer}, {Name: "b"}},
		Known:   []portico.Method{{Name: "c", FromHeads: answer}},
	}
	v := newNetworkView(portico.Chain{})
	counted := v.counting(table)
	for _, m := range []portico.Method{counted.Methods[0], counted.Known[0], counted.Methods[0]} {
		if res, ok := m.FromHeads(portico.Params{}, portico.Heads{}); !ok || string(res) != `"0x1"` {
			t.Fatalf("%s: %s %v", m.Name, res, ok)
		}
	}
	give = false
	counted.Methods[0].FromHeads(portico.Params{}, portico.Heads{})
	if n := v.fromHeads.Load(); n != 3 {
		t.Fatalf("counted %d answers from heads, want 3", n)
	}
	if counted.Methods[1].FromHeads != nil {
		t.Fatal("a method without FromHeads got one")
	}
	table.Methods[0].FromHeads(portico.Params{}, portico.Heads{})
	if n := v.fromHeads.Load(); n != 3 {
		t.Fatal("the family's own table counts too")
	}
}
