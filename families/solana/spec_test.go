package solana_test

import (
	"bufio"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/porticohq/portico/families/solana"
	"github.com/porticohq/portico/gateway"
)

// TestSpecMethods: the table serves by default exactly the HTTP methods of
// agave's RPC, each with a cost, and subscribes and unsubscribes as agave's
// PubSub does (testdata/specs/agave/rpc-methods.txt, taken from its
// sources).
func TestSpecMethods(t *testing.T) {
	f, err := os.Open("../../internal/testdata/specs/agave/rpc-methods.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var http []string
	pubsub := map[string]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[http]":
			http = append(http, line)
		case section == "[pubsub]":
			sub, unsub, ok := strings.Cut(line, " ")
			if !ok {
				t.Fatalf("pubsub line %q", line)
			}
			pubsub[sub] = unsub
		}
	}
	if len(http) < 50 || len(pubsub) < 9 {
		t.Fatalf("read %d HTTP methods and %d subscriptions", len(http), len(pubsub))
	}
	tb := solana.Table()
	m, err := gateway.NewMethods(tb, gateway.MethodsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(http)
	if got := m.Names(); !slices.Equal(got, http) {
		t.Errorf("served by default:\n%v\nagave's HTTP methods:\n%v", got, http)
	}
	for _, name := range http {
		if r := m.Lookup(name); r != nil && r.Cost <= 0 {
			t.Errorf("%s costs %d", name, r.Cost)
		}
	}
	served := map[string]string{}
	for _, s := range tb.Subscriptions.Methods {
		served[s.Method] = s.Unsubscribe
		if m.Subscription(s.Method) == nil || s.Cost <= 0 {
			t.Errorf("%s is not served or costs nothing", s.Method)
		}
	}
	if len(served) != len(pubsub) {
		t.Errorf("subscriptions %v, agave's %v", served, pubsub)
	}
	for sub, unsub := range pubsub {
		if served[sub] != unsub {
			t.Errorf("%s: served with %q, agave's unsubscribe is %s", sub, served[sub], unsub)
		}
	}
}
