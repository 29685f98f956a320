package gateway_test

import (
	"strings"
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
	"github.com/porticohq/portico/families/solana"
	"github.com/porticohq/portico/families/starknet"
	"github.com/porticohq/portico/gateway"
)

func TestMethodsResolveNamesAndCosts(t *testing.T) {
	tables := map[string]portico.Table{"evm": evm.Table(), "solana": solana.Table(), "starknet": starknet.Table()}
	cases := []struct {
		table, name, real string
		cost              int
	}{
		{"evm", "eth_getProof", "eth_getProof", 150},
		{"evm", "evm_getProof", "eth_getProof", 150},
		{"evm", "evm_getTransactionByBlockHashAndIndex", "eth_getTransactionByBlockHashAndIndex", 150},
		{"evm", "eth_getTransactionByBlockHashAndIndex", "eth_getTransactionByBlockHashAndIndex", 150},
		{"evm", "evm_chainId", "eth_chainId", 5},
		{"evm", "net_version", "net_version", 5},
		{"evm", "eth_call", "eth_call", 80},
		{"evm", "evm_getLogs", "eth_getLogs", 255},
		{"evm", "eth_simulateV1", "eth_simulateV1", 300},
		{"solana", "getBlock", "getBlock", 160},
		{"solana", "getSlot", "getSlot", 180},
		{"solana", "getLargestAccounts", "getLargestAccounts", 180},
		{"starknet", "rollup_getEvents", "starknet_getEvents", 200},
		{"starknet", "starknet_getEvents", "starknet_getEvents", 200},
		{"starknet", "rollup_getStateUpdate", "starknet_getStateUpdate", 80},
		{"starknet", "rollup_traceTransaction", "starknet_traceTransaction", 160},
		{"starknet", "rollup_blockNumber", "starknet_blockNumber", 80},
		{"evm", "getBlock", "", 0},
		{"solana", "eth_getProof", "", 0},
		{"evm", "debug_traceTransaction", "", 0},
		{"evm", "testing_buildBlockV1", "", 0},
	}
	for _, tc := range cases {
		m, err := gateway.NewMethods(tables[tc.table], gateway.MethodsConfig{})
		if err != nil {
			t.Fatal(err)
		}
		row := m.Lookup(tc.name)
		switch {
		case tc.real == "" && row != nil:
			t.Errorf("%s/%s served as %s", tc.table, tc.name, row.Name)
		case tc.real != "" && (row == nil || row.Name != tc.real || row.Cost != tc.cost):
			t.Errorf("%s/%s = %+v, want %s at %d", tc.table, tc.name, row, tc.real, tc.cost)
		}
	}
}

func TestMethodsConfig(t *testing.T) {
	m, err := gateway.NewMethods(evm.Table(), gateway.MethodsConfig{
		Allow:       []string{"eth_chainId", "evm_call", "eth_gasPrice"},
		Enable:      []string{"txpool", "admin_peers"},
		Costs:       map[string]int{"evm_getProof": 10, "eth_call": 5},
		DefaultCost: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Lookup("eth_getProof"); r == nil || r.Cost != 10 {
		t.Fatalf("getProof %+v", r)
	}
	if r := m.Lookup("eth_call"); r == nil || r.Cost != 5 {
		t.Fatalf("eth_call %+v", r)
	}
	// default_cost prices the methods the table has no figure for.
	if r := m.Lookup("evm_chainId"); r == nil || r.Cost != 5 {
		t.Fatalf("chainId %+v", r)
	}
	if r := m.Lookup("eth_gasPrice"); r == nil || r.Cost != 3 {
		t.Fatalf("gasPrice %+v", r)
	}
	// enable adds a group and a method named.
	if r := m.Lookup("txpool_content"); r == nil || r.Cost != 1000 || m.Lookup("txpool_status") == nil || m.Lookup("admin_peers") == nil {
		t.Fatalf("enabled methods %+v", r)
	}
	if m.Lookup("eth_blockNumber") != nil {
		t.Fatal("allowlist not replaced")
	}
	// The table's own rows must not be shared between networks.
	if fresh, _ := gateway.NewMethods(evm.Table(), gateway.MethodsConfig{}); fresh.Lookup("eth_getProof").Cost != 150 {
		t.Fatal("cost override leaked")
	}
	_, err = gateway.NewMethods(evm.Table(), gateway.MethodsConfig{Costs: map[string]int{"eth_nope": 1}})
	if err == nil || !strings.Contains(err.Error(), "costs.eth_nope") {
		t.Fatalf("err = %v", err)
	}
}

// TestSubscriptionCosts: a network's config sets what subscribing and
// each notification cost, by kind; an unknown kind is a config error.
func TestSubscriptionCosts(t *testing.T) {
	m, err := gateway.NewMethods(evm.Table(), gateway.MethodsConfig{Costs: map[string]int{"eth_subscribe": 3}, NotificationCosts: map[string]int{"logs": 7}})
	if err != nil {
		t.Fatal(err)
	}
	s := m.Subscription("evm_subscribe")
	if s == nil || s.Cost != 3 || s.NotificationCost["logs"] != 7 || s.NotificationCost["newHeads"] != evm.CostNewHeadNotification {
		t.Fatalf("rule %+v", s)
	}
	if evm.Table().Subscriptions.Methods[0].NotificationCost["logs"] != evm.CostLogNotification {
		t.Fatal("config changed the family's table")
	}
	if _, err := gateway.NewMethods(evm.Table(), gateway.MethodsConfig{NotificationCosts: map[string]int{"slot": 1}}); err == nil ||
		err.Error() != "notification_costs.slot: not a subscription kind of the evm family" {
		t.Fatalf("unknown kind: %v", err)
	}
}
