package solanadevnet

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// TestGetBlockOptions round-trips every getBlock option through
// solana-go's client against a finalized block holding a v0 transaction,
// and checks the decoded values against the ledger.
func TestGetBlockOptions(t *testing.T) {
	d, c := start(t, testConfig())
	slot := finalizedBlockWith(t, d, isV0)
	d.mu.RLock()
	b := d.led.blocks[slot]
	d.mu.RUnlock()
	ctx := context.Background()
	v0 := uint64(0)
	yes, no := true, false

	t.Run("v0 without maxSupportedTransactionVersion", func(t *testing.T) {
		for _, details := range []string{"full", "accounts"} {
			_, err := c.GetBlockWithOpts(ctx, slot, &rpc.GetBlockOpts{TransactionDetails: rpc.TransactionDetailsType(details)})
			code, msg := rpcCode(err)
			want := `Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0`
			if code != -32015 || msg != want {
				t.Fatalf("%s: got %d %q", details, code, msg)
			}
		}
		// Signatures and none carry no transaction, so no version check.
		res, err := c.GetBlockWithOpts(ctx, slot, &rpc.GetBlockOpts{TransactionDetails: rpc.TransactionDetailsSignatures})
		if err != nil || len(res.Signatures) != len(b.Txs) || res.Transactions != nil {
			t.Fatalf("signatures: %v %+v", err, res)
		}
	})

	for _, enc := range []solana.EncodingType{solana.EncodingBase64, solana.EncodingBase58} {
		t.Run("encoding "+string(enc), func(t *testing.T) {
			res, err := c.GetBlockWithOpts(ctx, slot, &rpc.GetBlockOpts{Encoding: enc, MaxSupportedTransactionVersion: &v0, Rewards: &yes})
			if err != nil {
				t.Fatal(err)
			}
			checkHeader(t, b, res)
			if len(res.Rewards) == 0 || res.Rewards[0].RewardType != rpc.RewardTypeFee {
				t.Fatalf("rewards: %+v", res.Rewards)
			}
			if len(res.Transactions) != len(b.Txs) {
				t.Fatalf("%d transactions, want %d", len(res.Transactions), len(b.Txs))
			}
			for i, tw := range res.Transactions {
				raw := tw.Transaction.GetBinary()
				if !bytes.Equal(raw, b.Txs[i].Raw) {
					t.Fatalf("tx %d: bytes differ from the signed transaction", i)
				}
				tx, err := solana.TransactionFromDecoder(bin.NewBinDecoder(raw))
				if err != nil {
					t.Fatal(err)
				}
				if err := tx.VerifySignatures(); err != nil {
					t.Fatalf("tx %d: %v", i, err)
				}
				wantVersion := rpc.LegacyTransactionVersion
				if tx.Message.IsVersioned() {
					wantVersion = 0
				}
				if tw.Version != wantVersion {
					t.Fatalf("tx %d: version %v, want %v", i, tw.Version, wantVersion)
				}
				checkConserved(t, tw.Meta)
			}
		})
	}

	t.Run("encoding json", func(t *testing.T) {
		var res rpc.GetBlockResult
		if err := c.RPCCallForInto(ctx, &res, "getBlock", []any{slot, map[string]any{"encoding": "json", "maxSupportedTransactionVersion": 0}}); err != nil {
			t.Fatal(err)
		}
		checkHeader(t, b, &res)
		if res.Rewards == nil {
			t.Fatal("rewards default to true when the devnet is called directly")
		}
		sawV0 := false
		for i, tw := range res.Transactions {
			var tx solana.Transaction
			if err := json.Unmarshal(tw.Transaction.GetRawJSON(), &tx); err != nil {
				t.Fatalf("tx %d: %v", i, err)
			}
			if len(tx.Message.AddressTableLookups) > 0 {
				tx.Message.SetVersion(solana.MessageVersionV0)
			}
			if !tx.Message.AccountKeys.Equals(b.Txs[i].tx.Message.AccountKeys) || tx.Message.RecentBlockhash != b.Txs[i].tx.Message.RecentBlockhash {
				t.Fatalf("tx %d: message differs from the ledger's", i)
			}
			if tx.Signatures[0] != b.Txs[i].sig() {
				t.Fatalf("tx %d: signature differs", i)
			}
			m := tw.Meta
			checkConserved(t, m)
			if m.Fee < 5000 || m.ComputeUnitsConsumed == nil || len(m.LogMessages) == 0 {
				t.Fatalf("tx %d: meta %+v", i, m)
			}
			if tx.Message.IsVersioned() {
				sawV0 = true
				if len(m.LoadedAddresses.Writable)+len(m.LoadedAddresses.ReadOnly) == 0 {
					t.Fatalf("v0 tx %d loads nothing", i)
				}
				if len(tx.Message.AddressTableLookups) == 0 {
					t.Fatalf("v0 tx %d has no lookups", i)
				}
			}
		}
		if !sawV0 {
			t.Fatal("no v0 transaction decoded")
		}
	})

	t.Run("encoding jsonParsed", func(t *testing.T) {
		res, err := c.GetParsedBlockWithOpts(ctx, slot, &rpc.GetBlockOpts{MaxSupportedTransactionVersion: &v0, Rewards: &no})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Transactions) != len(b.Txs) || res.Rewards != nil {
			t.Fatalf("%d txs, rewards %v", len(res.Transactions), res.Rewards)
		}
		for i, tw := range res.Transactions {
			keys := tw.Transaction.Message.AccountKeys
			if len(keys) == 0 || !keys[0].Signer || !keys[0].Writable {
				t.Fatalf("tx %d: fee payer key %+v", i, keys)
			}
		}
	})

	t.Run("transactionDetails", func(t *testing.T) {
		for _, details := range []string{"full", "accounts", "signatures", "none"} {
			for _, rewards := range []bool{true, false} {
				raw, rerr := rawCall(t, c, "getBlock", slot, map[string]any{"transactionDetails": details, "rewards": rewards, "maxSupportedTransactionVersion": 0})
				if rerr != nil {
					t.Fatal(rerr)
				}
				var m map[string]json.RawMessage
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatal(err)
				}
				_, hasTxs := m["transactions"]
				_, hasSigs := m["signatures"]
				_, hasRewards := m["rewards"]
				if hasTxs != (details == "full" || details == "accounts") || hasSigs != (details == "signatures") || hasRewards != rewards {
					t.Fatalf("%s rewards=%v: keys %v", details, rewards, keysOf(m))
				}
				var res rpc.GetBlockResult
				if err := json.Unmarshal(raw, &res); err != nil && details != "accounts" {
					t.Fatalf("%s: %v", details, err)
				}
			}
		}
	})
}

func keysOf(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func checkHeader(t *testing.T, b *block, res *rpc.GetBlockResult) {
	t.Helper()
	if res.Blockhash != b.Hash || res.ParentSlot != b.ParentSlot || res.BlockHeight == nil || *res.BlockHeight != b.Height ||
		res.BlockTime == nil || int64(*res.BlockTime) != b.Time {
		t.Fatalf("header %+v does not match block %d", res, b.Slot)
	}
	if res.PreviousBlockhash != b.PrevHash {
		t.Fatalf("previousBlockhash %s, want %s", res.PreviousBlockhash, b.PrevHash)
	}
}

// checkConserved checks sum(pre) - fee == sum(post).
func checkConserved(t *testing.T, m *rpc.TransactionMeta) {
	t.Helper()
	var pre, post uint64
	for _, x := range m.PreBalances {
		pre += x
	}
	for _, x := range m.PostBalances {
		post += x
	}
	if pre-m.Fee != post {
		t.Fatalf("balances not conserved: pre %d - fee %d != post %d", pre, m.Fee, post)
	}
}
