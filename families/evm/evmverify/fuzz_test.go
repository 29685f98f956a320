package evmverify_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/porticohq/portico/families/evm/evmverify"
	"github.com/porticohq/portico/network/verify"
)

// Every decoder of node answers is fuzzed from recorded answers: none
// may panic, every failure must be one of the package's kinds, and
// what verifies must be what the commitment says.

func checkKind(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, verify.ErrMismatch) && !errors.Is(err, verify.ErrMalformed) && !errors.Is(err, verify.ErrUnverifiable) && !errors.Is(err, verify.ErrFetch) {
		t.Fatalf("error of no kind: %v", err)
	}
}

func FuzzVerifyBlock(f *testing.F) {
	fc := loadFixture(f)
	for _, n := range goldenBlocks {
		raw, _, _ := readGolden(f, n)
		f.Add(raw, uint8(n))
	}
	f.Add([]byte(`{"hash":"0x00","transactions":[]}`), uint8(1))
	f.Fuzz(func(t *testing.T, raw []byte, n uint8) {
		want := fc.blocks[int(n)%len(fc.blocks)]
		b, err := fc.chain.VerifyBlock(raw, want.Hash())
		checkKind(t, err)
		if err == nil && (b.Header.Hash() != want.Hash() || b.Header.TransactionsRoot() != want.TxHash()) {
			t.Fatalf("verified a block that is not %d", want.NumberU64())
		}
		h, err := evmverify.VerifyHeader(raw, want.Hash())
		checkKind(t, err)
		if err == nil && h.StateRoot() != want.Root() {
			t.Fatal("verified a header with another state root")
		}
	})
}

func FuzzVerifyReceipts(f *testing.F) {
	fc := loadFixture(f)
	blocks := map[int]*evmverify.Block{}
	for _, n := range goldenBlocks {
		raw, receipts, hash := readGolden(f, n)
		b, err := fc.chain.VerifyBlock(raw, hash)
		if err != nil {
			f.Fatal(err)
		}
		blocks[n] = b
		f.Add(receipts, n == goldenBlocks[0])
	}
	f.Fuzz(func(t *testing.T, raw []byte, first bool) {
		b := blocks[goldenBlocks[1]]
		if first {
			b = blocks[goldenBlocks[0]]
		}
		rs, err := fc.chain.VerifyReceipts(raw, b)
		checkKind(t, err)
		if err == nil && len(rs.Receipts) != len(b.Transactions) {
			t.Fatal("verified a receipt list of another length")
		}
	})
}

func FuzzVerifyProof(f *testing.F) {
	fc := loadFixture(f)
	for _, c := range proofCases(f) {
		f.Add([]byte(c.result), len(c.slots) > 0)
	}
	addr := common.HexToAddress("0x7dcd17433742f4c0ca53122ab541d0ba67fc27df")
	root := fc.head().Root()
	f.Fuzz(func(t *testing.T, raw []byte, withSlot bool) {
		var slots []common.Hash
		if withSlot {
			slots = []common.Hash{{}}
		}
		acc, err := evmverify.VerifyProof(raw, root, addr, slots)
		checkKind(t, err)
		if err == nil && (acc.Balance.Uint64() != 0x76 || (withSlot && acc.Storage[common.Hash{}] != common.HexToHash("0x38"))) {
			t.Fatalf("verified a false account: %+v", acc)
		}
	})
}

func FuzzParseCallAndFilter(f *testing.F) {
	f.Add([]byte(`{"to":"0x7dcd17433742f4c0ca53122ab541d0ba67fc27df","data":"0x70a08231","gas":"0x5208"}`))
	f.Add([]byte(`{"fromBlock":"0x1","toBlock":"latest","address":["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df"],"topics":[null,["0x00000000000000000000000000000000000000000000000000000000000000aa"]]}`))
	fc := loadFixture(f)
	h := evmverify.NewHeader(fc.head().Header())
	ex := evmverify.NewExecutor(fc.chain, emptySource{}, evmverify.ExecutorOptions{MaxRounds: 1})
	f.Fuzz(func(t *testing.T, raw []byte) {
		if q, err := evmverify.ParseFilter(raw); err == nil {
			_ = evmverify.MayHaveLogs(h, q)
			_, err := evmverify.VerifyLogs([]byte("[]"), q, []*evmverify.Header{h}, nil)
			checkKind(t, err)
		}
		if _, err := evmverify.ParseCallArgs(raw); err == nil {
			_, err := ex.Call(context.Background(), h, raw)
			var ce *evmverify.CallError
			if !errors.As(err, &ce) {
				checkKind(t, err)
			}
		}
	})
}

// emptySource answers nothing, so the executor stops at its first
// fetch; enough to fuzz the call path's decoding.
type emptySource struct{}

var errNoNode = errors.New("no node")

func (emptySource) GetProof(context.Context, common.Address, []common.Hash, common.Hash) ([]byte, error) {
	return nil, errNoNode
}
func (emptySource) GetCode(context.Context, common.Address, common.Hash) ([]byte, error) {
	return nil, errNoNode
}
func (emptySource) CreateAccessList(context.Context, []byte, common.Hash) ([]byte, error) {
	return nil, errNoNode
}
