package evmverify_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/porticohq/portico/families/evm/evmverify"
)

// edit decodes a JSON object, lets f change it and encodes it again.
func edit(t testing.TB, raw string, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tx returns the i-th transaction object of a decoded block.
func tx(m map[string]any, i int) map[string]any {
	return m["transactions"].([]any)[i].(map[string]any)
}

// flipHex changes the last hex digit of a 0x string.
func flipHex(s string) string {
	b := []byte(s)
	last := len(b) - 1
	if b[last] == '0' {
		b[last] = '1'
	} else {
		b[last] = '0'
	}
	return string(b)
}

func strconvU(n uint64) string { return strconv.FormatUint(n, 10) }

// countingSource counts the node calls an executor makes.
type countingSource struct {
	evmverify.ProofSource
	calls atomic.Int64
}

func (s *countingSource) GetProof(ctx context.Context, a common.Address, slots []common.Hash, h common.Hash) ([]byte, error) {
	s.calls.Add(1)
	return s.ProofSource.GetProof(ctx, a, slots, h)
}

func (s *countingSource) GetCode(ctx context.Context, a common.Address, h common.Hash) ([]byte, error) {
	s.calls.Add(1)
	return s.ProofSource.GetCode(ctx, a, h)
}

func (s *countingSource) CreateAccessList(ctx context.Context, call []byte, h common.Hash) ([]byte, error) {
	s.calls.Add(1)
	return s.ProofSource.CreateAccessList(ctx, call, h)
}
