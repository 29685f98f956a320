package main

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/internal/anvil"
)

// Two contracts on anvil with one code: it returns its own storage slot 0.
// The key under test may read c1 (slot 0 is 1) and not c2 (slot 0 is 42,
// the secret).
const (
	allowC1     = "0x00000000000000000000000000000000000000c1"
	secretC2    = "0x00000000000000000000000000000000000000c2"
	slot0Code   = "0x60005460005260206000f3" // SLOAD(0), MSTORE, RETURN 32 bytes
	c1Word      = "0x0000000000000000000000000000000000000000000000000000000000000001"
	secretWord  = "0x000000000000000000000000000000000000000000000000000000000000002a"
	contractKey = "contracts0123456789abcdef0123456"
	openKey     = "open0123456789abcdef0123456789ab"
)

// TestKeyAddressesAnvil puts anvil behind the gateway and tries every way
// the security review read contract c2 with a key allowed only c1: each
// request, sent with a key without lists, does read c2's secret from
// anvil (so the bypass is real); with the restricted key it is refused
// with -32002 naming the field, nothing reaches the node's answer and
// nothing is charged. Legitimate calls for c1, from go-ethereum's client
// too, still pass.
func TestKeyAddressesAnvil(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node, err := anvil.Start(ctx, anvil.Options{})
	if errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	for _, c := range []struct{ addr, word string }{{allowC1, c1Word}, {secretC2, secretWord}} {
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"anvil_setCode","params":["` + c.addr + `","` + slot0Code + `"]}`,
			`{"jsonrpc":"2.0","id":1,"method":"anvil_setStorageAt","params":["` + c.addr + `","0x0","` + c.word + `"]}`,
		} {
			if _, got := post(t, node.URL(), body); !strings.Contains(got, `"result"`) {
				t.Fatalf("%s: %s", body, got)
			}
		}
	}

	cfg := config.DefaultConfig()
	allowed := []string{allowC1}
	cfg.Keys = []config.Key{
		{Name: "contracts", Key: contractKey, DailyCredits: 1_000_000, AllowAddresses: &allowed},
		{Name: "open", Key: openKey, DailyCredits: 1_000_000},
	}
	cfg.Networks = []config.Network{{Name: "anvil", Family: "evm", Upstreams: []config.Upstream{{URL: node.URL()}}}}
	s := start(t, cfg)
	base := "http://" + s.addr(t, "anvil") + "/v3/"

	// A code for c1 that reads c2: STATICCALL(gas, c2, 0, 0, 0, 32), RETURN 32 bytes.
	callsC2 := "0x602060006000600073" + secretC2[2:] + "5afa5060206000f3"
	c2Slot := "0x0000000000000000000000000000000000000000000000000000000000000000"
	// read is what an open key's answer holds when anvil acted on c2:
	// its secret slot, or c2 in the access list ("" for an estimate).
	bypasses := []struct {
		name, body, field, read string
	}{
		{"eth_call with to (c2) and To (c1)", `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"` + secretC2 + `","To":"` + allowC1 + `"},"latest"]}`, "params[0].to", secretWord},
		{"eth_estimateGas with to and To", `{"jsonrpc":"2.0","id":1,"method":"eth_estimateGas","params":[{"to":"` + secretC2 + `","To":"` + allowC1 + `"},"latest"]}`, "params[0].to", ""},
		{"eth_createAccessList with to and To", `{"jsonrpc":"2.0","id":1,"method":"eth_createAccessList","params":[{"to":"` + secretC2 + `","To":"` + allowC1 + `"},"latest"]}`, "params[0].to", secretC2},
		{"eth_call with To first", `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"To":"` + allowC1 + `","to":"` + secretC2 + `"},"latest"]}`, "params[0].To", secretWord},
		{"a state override of c1's code", `{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"` + allowC1 + `"},"latest",{"` + allowC1 + `":{"code":"` + callsC2 + `"}}]}`, "params[2] (stateOverrides)", secretWord},
		{"eth_simulateV1", `{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"blockStateCalls":[{"calls":[{"to":"` + secretC2 + `"}]}]},"latest"]}`, "params[0].blockStateCalls[0].calls[0].to", secretWord},
		{"eth_getStorageValues", `{"jsonrpc":"2.0","id":1,"method":"eth_getStorageValues","params":[{"` + secretC2 + `":["` + c2Slot + `"]},"latest"]}`, "params[0] (requests)", secretWord},
	}
	credits := func(key string) float64 {
		_, body := post(t, base+key, `{"jsonrpc":"2.0","id":1,"method":"portico_getCredits"}`)
		var a struct {
			Result struct {
				Used float64 `json:"used"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(body), &a); err != nil {
			t.Fatalf("portico_getCredits: %s", body)
		}
		return a.Result.Used
	}
	for _, b := range bypasses {
		t.Run(b.name, func(t *testing.T) {
			// Through an open key, anvil acts on c2: the bypass is real
			// (the call returns, or the access list holds, c2's secret
			// slot; the estimate is of running c2).
			if status, got := post(t, base+openKey, b.body); status != 200 || !strings.Contains(got, `"result"`) || !strings.Contains(got, b.read) {
				t.Fatalf("with an open key: %d %s", status, got)
			}
			before := credits(contractKey)
			status, got := post(t, base+contractKey, b.body)
			var a struct {
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
					Data    struct {
						Reason string `json:"reason"`
					} `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(got), &a); err != nil {
				t.Fatalf("%d %s", status, got)
			}
			if status != 403 || a.Error == nil || a.Error.Code != portico.CodeKeyRejected || a.Error.Data.Reason != "address" ||
				!strings.HasPrefix(a.Error.Message, "rejected due to API key settings: "+b.field+": ") || a.Result != nil {
				t.Fatalf("got %d %s, want -32002 naming %s", status, got, b.field)
			}
			if after := credits(contractKey); after != before {
				t.Errorf("charged %v credits for a refused call", after-before)
			}
		})
	}

	t.Run("c1 still passes", func(t *testing.T) {
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"` + allowC1 + `","data":"0x"},"latest"]}`,
			`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"` + allowC1 + `"},"latest",{}]}`,
			`{"jsonrpc":"2.0","id":1,"method":"eth_simulateV1","params":[{"blockStateCalls":[{"calls":[{"to":"` + allowC1 + `"}]}]},"latest"]}`,
			`{"jsonrpc":"2.0","id":1,"method":"eth_getStorageValues","params":[{"` + allowC1 + `":["` + c2Slot + `"]},"latest"]}`,
			`{"jsonrpc":"2.0","id":1,"method":"eth_getStorageAt","params":["` + allowC1 + `","0x0","latest"]}`,
		} {
			if status, got := post(t, base+contractKey, body); status != 200 || !strings.Contains(got, c1Word) {
				t.Errorf("%s: %d %s", body, status, got)
			}
		}
		ec, err := ethclient.DialContext(ctx, base+contractKey)
		if err != nil {
			t.Fatal(err)
		}
		defer ec.Close()
		c1 := common.HexToAddress(allowC1)
		msg := ethereum.CallMsg{From: common.HexToAddress("0x00000000000000000000000000000000000000f0"), To: &c1, Value: big.NewInt(0), Data: []byte{}}
		out, err := ec.CallContract(ctx, msg, nil)
		if err != nil || common.BytesToHash(out) != common.HexToHash(c1Word) {
			t.Errorf("go-ethereum's CallContract: %x, %v", out, err)
		}
		if _, err := ec.EstimateGas(ctx, msg); err != nil {
			t.Errorf("go-ethereum's EstimateGas: %v", err)
		}
		c2 := common.HexToAddress(secretC2)
		msg.To = &c2
		if _, err := ec.CallContract(ctx, msg, nil); err == nil || !strings.Contains(err.Error(), "is not allowed for this API key") {
			t.Errorf("go-ethereum's CallContract to c2: %v", err)
		}
	})
}
