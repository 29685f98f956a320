package evmverify_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/porticohq/portico/families/evm/evmdevnet"
	"github.com/porticohq/portico/families/evm/evmverify"
)

// fixtures is the Ethereum conformance suite's test chain (execution-apis
// tests/, a copy of shared/fixtures/evm kept in the repository): 54
// blocks with transactions of every type, logs, withdrawals, and the
// recorded eth_getProof answers geth gave on it.
const fixtures = "../../../internal/testdata/fixtures/evm"

// fixtureChain is the chain file read once: the trusted side of every
// test below comes from these blocks, not from a node.
type fixtureChain struct {
	blocks []*types.Block // blocks[i] is number i+1
	chain  *evmverify.Chain
}

var readFixture = sync.OnceValues(func() (*fixtureChain, error) {
	f, err := os.Open(filepath.Join(fixtures, "chain.rlp"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fc := &fixtureChain{}
	s := rlp.NewStream(f, 0)
	for {
		var b types.Block
		if err := s.Decode(&b); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		fc.blocks = append(fc.blocks, &b)
	}
	raw, err := os.ReadFile(filepath.Join(fixtures, "genesis.json"))
	if err != nil {
		return nil, err
	}
	var g core.Genesis
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, err
	}
	fc.chain = evmverify.NewChain(g.Config)
	return fc, nil
})

func loadFixture(t testing.TB) *fixtureChain {
	t.Helper()
	fc, err := readFixture()
	if err != nil {
		t.Fatal(err)
	}
	return fc
}

// head is the fixture chain's last block.
func (fc *fixtureChain) head() *types.Block { return fc.blocks[len(fc.blocks)-1] }

// fixtureNode starts the embedded go-ethereum devnet on the fixture chain
// and returns an in-process client: a real node answering from the chain
// the tests trust by its file.
func fixtureNode(t testing.TB) *rpc.Client {
	t.Helper()
	d, err := evmdevnet.New(evmdevnet.Config{
		BlockPeriod: -1,
		GenesisFile: filepath.Join(fixtures, "genesis.json"),
		ChainRLP:    filepath.Join(fixtures, "chain.rlp"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := d.Dial()
	t.Cleanup(c.Close)
	return c
}

// call asks the node and returns its raw result.
func call(t testing.TB, c *rpc.Client, method string, params ...any) json.RawMessage {
	t.Helper()
	var raw json.RawMessage
	if err := c.CallContext(context.Background(), &raw, method, params...); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return raw
}
