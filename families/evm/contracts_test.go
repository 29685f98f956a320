package evm_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/gateway"
)

// TestContractsStated: every method the family can serve (a row, a rule,
// the default allowlist, a group, a write, the spec's list) states where
// its params name contracts, for a key's contract-address allowlist; no
// statement is for a method the family does not know; every subscription
// kind states it too. A method added to the table (or to the spec's list)
// without a statement fails here.
func TestContractsStated(t *testing.T) {
	tb := evm.Table()
	served := map[string]bool{}
	add := func(names ...string) {
		for _, n := range names {
			served[n] = true
		}
	}
	for _, m := range append(slices.Clone(tb.Methods), tb.Known...) {
		add(m.Name)
	}
	add(tb.DefaultAllow...)
	for _, g := range tb.Optional {
		add(g...)
	}
	add(tb.Writes...)
	add(evm.SpecMethods()...)
	for _, name := range slices.Sorted(maps.Keys(served)) {
		c := tb.Contracts[name]
		for _, m := range tb.Methods {
			if m.Name == name && m.Contracts.Reads != portico.ReadsUnstated {
				c = m.Contracts
			}
		}
		if c.Reads == portico.ReadsUnstated {
			t.Errorf("%s does not state which contracts it reads (families/evm/contracts.go)", name)
		}
	}
	for name := range tb.Contracts {
		if !served[name] {
			t.Errorf("%s has a statement but the family does not serve it", name)
		}
	}
	for _, s := range tb.Subscriptions.Methods {
		for kind := range s.NotificationCost {
			if s.Contracts[kind].Reads == portico.ReadsUnstated {
				t.Errorf("%s %s does not state which contracts it follows", s.Method, kind)
			}
		}
	}
	// The gateway takes every statement (it refuses one it cannot walk)
	// and every served method carries its own.
	all, err := gateway.NewMethods(tb, gateway.MethodsConfig{Enable: []string{"accounts", "debug", "trace", "txpool"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range all.Names() {
		if all.Lookup(name).Contracts.Reads == portico.ReadsUnstated {
			t.Errorf("%s is served without a statement", name)
		}
	}
}
