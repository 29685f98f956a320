package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/internal/fixturenode"
)

const fixtures = "../../internal/testdata/fixtures"

// startWithFixtures serves the slot-chain and rollup networks from a node
// that answers with recorded real responses.
func startWithFixtures(t *testing.T) (*started, *fixturenode.Node) {
	t.Helper()
	fx, err := fixturenode.New(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	node := httptest.NewServer(fx)
	t.Cleanup(node.Close)
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "test", Key: "test0123456789abcdef0123456789ab"}}
	cfg.Networks = []config.Network{
		{Name: "solana", Family: "solana", Upstreams: []config.Upstream{{URL: node.URL + "/secret-sol"}}},
		{Name: "starknet", Family: "starknet", Upstreams: []config.Upstream{{URL: node.URL + "/secret-sn"}}},
	}
	return start(t, cfg), fx
}

// TestSolanaGetBlockWithSolanaGo calls getBlock through the gateway with
// solana-go's client for every recorded encoding and checks typed results.
func TestSolanaGetBlockWithSolanaGo(t *testing.T) {
	s, fx := startWithFixtures(t)
	client := rpc.New(s.url(t, "solana"))
	ctx := context.Background()
	no, v0 := false, uint64(0)

	for _, enc := range []solana.EncodingType{solana.EncodingJSON, solana.EncodingBase64, solana.EncodingJSONParsed} {
		t.Run(string(enc), func(t *testing.T) {
			opts := &rpc.GetBlockOpts{
				Encoding:                       enc,
				TransactionDetails:             rpc.TransactionDetailsFull,
				Rewards:                        &no,
				Commitment:                     rpc.CommitmentFinalized,
				MaxSupportedTransactionVersion: &v0,
			}
			if enc == solana.EncodingJSONParsed {
				// solana-go's block type has no parsed-instruction form, so
				// the parsed shape is read into a typed struct here.
				var out struct {
					Blockhash    string `json:"blockhash"`
					Transactions []struct {
						Transaction struct {
							Message struct {
								AccountKeys []struct {
									Pubkey   string `json:"pubkey"`
									Signer   bool   `json:"signer"`
									Writable bool   `json:"writable"`
								} `json:"accountKeys"`
							} `json:"message"`
						} `json:"transaction"`
					} `json:"transactions"`
				}
				err := client.RPCCallForInto(ctx, &out, "getBlock", []any{uint64(fixturenode.SlotSolders), map[string]any{
					"encoding": "jsonParsed", "rewards": false, "maxSupportedTransactionVersion": 0}})
				if err != nil {
					t.Fatal(err)
				}
				keys := out.Transactions[0].Transaction.Message.AccountKeys
				if out.Blockhash != "5idCC85iPqQMHWB9bCwcjbSfHakFgq6YXWFxL6w8xs9t" || len(out.Transactions) != 25 || len(keys) == 0 || !keys[0].Signer {
					t.Fatalf("parsed block %+v", out.Blockhash)
				}
				return
			}
			var b *rpc.GetBlockResult
			var err error
			if enc == solana.EncodingJSON {
				// GetBlockWithOpts asks for binary encodings only; the json
				// form decodes into the same result type.
				err = client.RPCCallForInto(ctx, &b, "getBlock", []any{uint64(fixturenode.SlotSolders), map[string]any{
					"encoding": "json", "rewards": false, "maxSupportedTransactionVersion": 0}})
			} else {
				b, err = client.GetBlockWithOpts(ctx, fixturenode.SlotSolders, opts)
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Blockhash.String() != "5idCC85iPqQMHWB9bCwcjbSfHakFgq6YXWFxL6w8xs9t" || b.ParentSlot != 147078734 ||
				b.BlockHeight == nil || *b.BlockHeight != 139015678 || len(b.Transactions) != 25 {
				t.Fatalf("block %s parent %d txs %d", b.Blockhash, b.ParentSlot, len(b.Transactions))
			}
			if enc == solana.EncodingBase64 {
				// The encoded bytes decode to the signed transaction.
				for i, twm := range b.Transactions {
					tx, err := twm.GetTransaction()
					if err != nil {
						t.Fatalf("tx %d: %v", i, err)
					}
					if err := tx.VerifySignatures(); err != nil {
						t.Fatalf("tx %d signature: %v", i, err)
					}
				}
			}
			if b.Transactions[0].Meta == nil || len(b.Transactions[0].Meta.PreBalances) == 0 {
				t.Fatal("meta missing")
			}
		})
	}

	t.Run("seed defaults reach the node", func(t *testing.T) {
		cases := []struct {
			name, params, forwarded string
		}{
			{"rewards default false", `[147078735]`, `"rewards":false`},
			{"processed served as confirmed", `[147078735,{"commitment":"processed"}]`, `"commitment":"confirmed"`},
		}
		for _, tc := range cases {
			status, got := post(t, s.url(t, "solana"), `{"jsonrpc":"2.0","id":1,"method":"getBlock","params":`+tc.params+`}`)
			if status != 200 || !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":1,"result":{`) {
				t.Fatalf("%s: %d %.200s", tc.name, status, got)
			}
			if p := fx.LastParams("getBlock"); !strings.Contains(p, tc.forwarded) {
				t.Fatalf("%s: node got %s", tc.name, p)
			}
		}
	})

	t.Run("result bytes untouched", func(t *testing.T) {
		_, got := post(t, s.url(t, "solana"), `{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[147078735,{"encoding":"base64","maxSupportedTransactionVersion":0}]}`)
		want := `{"jsonrpc":"2.0","id":1,"result":` + string(fx.Block(fixturenode.SlotSolders, "base64")) + `}`
		if got != want {
			t.Fatalf("response differs from the node's bytes")
		}
	})

	t.Run("versioned transaction without max version", func(t *testing.T) {
		_, err := client.GetBlockWithOpts(ctx, fixturenode.SlotVersioned, &rpc.GetBlockOpts{Rewards: &no})
		var rpcErr *jsonrpc.RPCError
		if !errors.As(err, &rpcErr) || rpcErr.Code != -32015 || !strings.HasPrefix(rpcErr.Message, "Transaction version (0) is not supported") {
			t.Fatalf("err = %v", err)
		}
	})

}

// TestStarknetThroughGateway checks the rollup methods under both names and
// both params forms against recorded responses, and that bad params never
// reach the node.
func TestStarknetThroughGateway(t *testing.T) {
	s, fx := startWithFixtures(t)
	url := s.url(t, "starknet")
	filter := `{"from_block":{"block_number":8437},"to_block":"latest","address":"0x4718f5a0fc34cc1af16a1cdee98ffb20c31f5cd61d6ab07201858f4287c938d","keys":[["0x99cd8bde557814842a3121e8ddfd433a539b8c9f14bf31ebf108d12e6196e9"],[]],"chunk_size":10}`
	cases := []struct {
		name, method, params, fixture string
	}{
		{"getEvents named", "starknet_getEvents", `{"filter":` + filter + `}`, "starknet/starknetgo_events_sepoliaEvents.json"},
		{"getEvents positional, seed name", "rollup_getEvents", `[` + filter + `]`, "starknet/starknetgo_events_sepoliaEvents.json"},
		{"getStateUpdate by number", "rollup_getStateUpdate", `{"block_id":{"block_number":3100000}}`, "starknet/starknetgo_stateUpdate_sepolia3100000.json"},
		{"getStateUpdate pending", "starknet_getStateUpdate", `{"block_id":"pending"}`, "starknet/starknetgo_stateUpdate_sepoliaPreConfirmed.json"},
		{"getStateUpdate positional", "starknet_getStateUpdate", `["pre_confirmed"]`, "starknet/starknetgo_stateUpdate_sepoliaPreConfirmed.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, got := post(t, url, `{"jsonrpc":"2.0","id":5,"method":"`+tc.method+`","params":`+tc.params+`}`)
			want := loadResult(t, tc.fixture)
			if status != 200 || got != `{"jsonrpc":"2.0","id":5,"result":`+want+`}` {
				t.Fatalf("got %d %.300s", status, got)
			}
			if p := fx.LastParams(strings.Replace(tc.method, "rollup_", "starknet_", 1)); p != tc.params {
				t.Fatalf("node got params %s, want %s", p, tc.params)
			}
		})
	}
	t.Run("bad params are not forwarded", func(t *testing.T) {
		before := fx.LastParams("starknet_getStateUpdate")
		status, got := post(t, url, `{"jsonrpc":"2.0","id":6,"method":"rollup_getStateUpdate","params":{"block_id":{"block_hash":"0x1","block_number":1}}}`)
		if status != 200 || !strings.Contains(got, `"code":-32602`) || !strings.Contains(got, "block_id") {
			t.Fatalf("got %d %s", status, got)
		}
		if fx.LastParams("starknet_getStateUpdate") != before {
			t.Fatal("forwarded")
		}
	})
}

// loadResult returns a fixture's result compacted, as the node serves it.
func loadResult(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtures, path))
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Result jsontext.Value `json:"result"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	if err := env.Result.Compact(); err != nil {
		t.Fatal(err)
	}
	return string(env.Result)
}
