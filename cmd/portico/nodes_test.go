package main

import (
	"encoding/json"
	"testing"

	"github.com/porticohq/portico/config"
)

// TestNodesFromHeads: the admin API's nodes answer counts the calls
// answered from a network's heads apart from its nodes' calls (each
// eth_blockNumber is one or the other), and names the family's heads.
func TestNodesFromHeads(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Admin.Token = "nodes-test-admin-token-0123456789"
	cfg.Networks = []config.Network{{Name: "evm-devnet", Family: "evm"}, {Name: "starknet-devnet", Family: "starknet"}}
	s := start(t, cfg)
	type network struct {
		Name      string `json:"name"`
		FromHeads uint64 `json:"fromHeads"`
		Marks     []struct {
			Tag    string `json:"tag"`
			Number uint64 `json:"number"`
		} `json:"marks"`
		Nodes []struct {
			Calls uint64 `json:"calls"`
		} `json:"nodes"`
	}
	nodes := func() map[string]network {
		t.Helper()
		status, body := getAuth(t, "http://"+s.m.Shared+"/admin/v1/nodes", cfg.Admin.Token)
		var nets []network
		if err := json.Unmarshal([]byte(body), &nets); status != 200 || err != nil {
			t.Fatalf("nodes: %d %v %s", status, err, body)
		}
		out := map[string]network{}
		for _, n := range nets {
			out[n.Name] = n
		}
		return out
	}
	before := nodes()
	const calls = 3
	for range calls {
		if a := call(t, s.url(t, "evm-devnet"), `{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}`); a.status != 200 {
			t.Fatalf("eth_blockNumber: %d %s", a.status, a.body)
		}
	}
	after := nodes()
	evm := after["evm-devnet"]
	toNode := evm.Nodes[0].Calls - before["evm-devnet"].Nodes[0].Calls
	if got := evm.FromHeads - before["evm-devnet"].FromHeads; got+toNode != calls {
		t.Errorf("eth_blockNumber ×%d: %d from heads and %d to the node", calls, got, toNode)
	}
	t.Logf("eth_blockNumber ×%d: %d from heads, %d to the node", calls, evm.FromHeads-before["evm-devnet"].FromHeads, toNode)
	if sn := after["starknet-devnet"]; sn.FromHeads != 0 || len(sn.Marks) != 2 || sn.Marks[0].Tag != "latest" || sn.Marks[1].Tag != "l1_accepted" {
		t.Errorf("starknet-devnet: %+v", sn)
	}
	if len(evm.Marks) != 3 || evm.Marks[1].Tag != "safe" || evm.Marks[0].Number == 0 {
		t.Errorf("evm-devnet marks: %+v", evm.Marks)
	}
}
