package evmverify_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/porticohq/portico/families/evm/evmverify"
)

// gethSource is a ProofSource over the in-process fixture node.
type gethSource struct{ c *rpc.Client }

func (s gethSource) GetProof(ctx context.Context, a common.Address, slots []common.Hash, h common.Hash) ([]byte, error) {
	return rpcSource(s).GetProof(ctx, a, slots, h)
}
func (s gethSource) GetCode(ctx context.Context, a common.Address, h common.Hash) ([]byte, error) {
	return rpcSource(s).GetCode(ctx, a, h)
}
func (s gethSource) CreateAccessList(ctx context.Context, call []byte, h common.Hash) ([]byte, error) {
	return rpcSource(s).CreateAccessList(ctx, call, h)
}

// TestExecutorAgainstGeth runs calls on the conformance chain locally and
// on the go-ethereum node that serves it, at blocks before the merge,
// after Cancun and at the head: the conformance suite's contracts (one
// returns the block environment, one reverts), an EIP-7702 delegated
// account, and the withdrawal-request system contract. Results, errors
// and gas estimates must equal the node's (estimates with geth's own
// error ratio, 1.5%).
func TestExecutorAgainstGeth(t *testing.T) {
	fc := loadFixture(t)
	node := fixtureNode(t)
	ex := evmverify.NewExecutor(fc.chain, gethSource{node}, evmverify.ExecutorOptions{ErrorRatio: 0.015})
	sender := "0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f"
	calls := map[string]map[string]any{
		"callenv":             {"to": "0x9344b07175800259691961298ca11c824e65032d", "from": sender},
		"callme":              {"to": "0x17e7eedce4ac02ef114a7ed9fe6e2f33feba1667", "from": sender, "data": "0x00000000000000000000000000000000000000000000000000000000000000ff"},
		"callrevert":          {"to": "0x0ee3ab1371c93e7c0c281cc0c2107cdebc8b1930", "from": sender},
		"delegated account":   {"to": "0xeda8645ba6948855e3b3cd596bbb07596d59c603", "from": sender, "data": "0x01"},
		"withdrawal requests": {"to": "0x00000961Ef480Eb55e80D19ad83579A64c007002", "from": sender},
		"transfer with value": {"to": "0x00000000000000000000000000000000000aaaa1", "from": sender, "value": "0x10"},
		"create":              {"from": sender, "data": "0x600160005260206000f3"},
	}
	matched := 0
	for _, n := range []int{30, 45, len(fc.blocks)} {
		b := fc.blocks[n-1]
		h := evmverify.NewHeader(b.Header())
		for name, call := range calls {
			for _, method := range []string{"eth_call", "eth_estimateGas"} {
				want := askGeth(t, node, method, call, b.Hash())
				got := local(t, ex, method, call, h)
				if string(got.result) != string(want.result) || got.code != want.code || got.data != want.data || got.message != want.message {
					t.Errorf("block %d %s %s: local %+v (%s), node %+v (%s)", n, name, method, got, got.result, want, want.result)
					continue
				}
				matched++
			}
		}
	}
	if matched < 30 {
		t.Fatalf("%d answers matched", matched)
	}
}

func askGeth(t *testing.T, c *rpc.Client, method string, call map[string]any, h common.Hash) nodeAnswer {
	t.Helper()
	var raw json.RawMessage
	err := c.Call(&raw, method, call, at(h))
	if err == nil {
		return nodeAnswer{result: raw}
	}
	var ec rpc.Error
	if !errors.As(err, &ec) {
		t.Fatal(err)
	}
	ans := nodeAnswer{code: ec.ErrorCode(), message: err.Error()}
	var de rpc.DataError
	if errors.As(err, &de) {
		ans.data, _ = de.ErrorData().(string)
	}
	return ans
}
