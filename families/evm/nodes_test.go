package evm_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/evm"
)

// sendRule is the table's rule of eth_sendRawTransaction.
func sendRule(t testing.TB) portico.Method {
	for _, m := range evm.Table().Known {
		if m.Name == "eth_sendRawTransaction" {
			return m
		}
	}
	t.Fatal("no rule for eth_sendRawTransaction")
	return portico.Method{}
}

// TestSendRawHash: a signed transaction's hash is computed from its bytes
// as go-ethereum computes it, for every kind; the bytes sent on are the
// call's own; bytes that are no transaction get no hash and no error (the
// node refuses them in its own words).
func TestSendRawHash(t *testing.T) {
	key, _ := crypto.GenerateKey()
	to := common.HexToAddress("0x01")
	signer := types.LatestSignerForChainID(big.NewInt(1))
	sign := func(d types.TxData) *types.Transaction {
		tx, err := types.SignNewTx(key, signer, d)
		if err != nil {
			t.Fatal(err)
		}
		return tx
	}
	rule := sendRule(t)
	if !rule.Write {
		t.Error("eth_sendRawTransaction's rule is not a write")
	}
	for _, tx := range []*types.Transaction{
		sign(&types.LegacyTx{Nonce: 1, To: &to, Gas: 21000, GasPrice: big.NewInt(1)}),
		sign(&types.AccessListTx{ChainID: big.NewInt(1), Nonce: 2, To: &to, Gas: 21000, GasPrice: big.NewInt(1)}),
		sign(&types.DynamicFeeTx{ChainID: big.NewInt(1), Nonce: 3, To: &to, Gas: 21000, GasTipCap: big.NewInt(1), GasFeeCap: big.NewInt(2)}),
	} {
		raw, _ := tx.MarshalBinary()
		params, _ := json.Marshal([]any{hexutil.Bytes(raw)})
		p, err := rule.Params(params)
		if err != nil || p.TxHash != tx.Hash().Hex() || string(p.Send) != string(params) {
			t.Errorf("type %d: hash %q, err %v; want %s and the params unchanged", tx.Type(), p.TxHash, err, tx.Hash().Hex())
		}
	}
	for _, bad := range []string{`["0x"]`, `["0x01"]`, `[1]`, `[]`, `{}`, `["nothex"]`} {
		p, err := rule.Params(jsontext.Value(bad))
		if err != nil || p.TxHash != "" {
			t.Errorf("%s: hash %q, err %v; want neither", bad, p.TxHash, err)
		}
	}
}

// FuzzSendRawParams: any params decode without a panic, and a hash is
// only ever given with the params passed on as they came.
func FuzzSendRawParams(f *testing.F) {
	key, _ := crypto.GenerateKey()
	to := common.HexToAddress("0x02")
	tx, _ := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(1)), &types.DynamicFeeTx{ChainID: big.NewInt(1), To: &to, Gas: 21000})
	raw, _ := tx.MarshalBinary()
	seed, _ := json.Marshal([]any{hexutil.Bytes(raw)})
	f.Add(seed)
	f.Add([]byte(`["0x02f8"]`))
	f.Add([]byte(`[null]`))
	rule := sendRule(f)
	f.Fuzz(func(t *testing.T, params []byte) {
		p, err := rule.Params(jsontext.Value(params))
		if err != nil {
			return
		}
		if p.TxHash != "" && string(p.Send) != string(params) {
			t.Errorf("hashed params changed: %s to %s", params, p.Send)
		}
	})
}
