package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/ethclient/gethclient"
	"github.com/ethereum/go-ethereum/ethdb/memorydb"
	"github.com/ethereum/go-ethereum/rlp"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/ethereum/go-ethereum/trie"
)

// evmTarget is a gateway network in front of an EVM node, and the node's
// own URL for comparison.
type evmTarget struct {
	httpURL, wsURL string // through the gateway
	directURL      string // the upstream itself
}

// checkTransactionsByBlockHashAndIndex looks up each transaction by its
// block hash and index through the gateway, over HTTP with ethclient and
// over WebSocket, under both names, and expects exactly the upstream's
// answer. types lists the transaction types that must be covered.
func checkTransactionsByBlockHashAndIndex(t *testing.T, ctx context.Context, tg evmTarget, txs []common.Hash, wantTypes []uint8) {
	t.Helper()
	ec := dialEth(t, tg.httpURL)
	ws := dialRPC(t, tg.wsURL)
	direct := dialRPC(t, tg.directURL)
	gw := dialRPC(t, tg.httpURL)
	seen := map[uint8]bool{}
	for _, h := range txs {
		rc, err := ec.TransactionReceipt(ctx, h)
		if err != nil {
			t.Fatalf("receipt %s: %v", h, err)
		}
		tx, err := ec.TransactionInBlock(ctx, rc.BlockHash, rc.TransactionIndex)
		if err != nil {
			t.Fatalf("TransactionInBlock(%s, %d): %v", rc.BlockHash, rc.TransactionIndex, err)
		}
		if tx.Hash() != h {
			t.Fatalf("tx at %s/%d is %s, want %s", rc.BlockHash, rc.TransactionIndex, tx.Hash(), h)
		}
		seen[tx.Type()] = true
		args := []any{rc.BlockHash, hexutil.Uint(rc.TransactionIndex)}
		want := rawCall(t, ctx, direct, "eth_getTransactionByBlockHashAndIndex", args...)
		for _, c := range []struct {
			name   string
			client *rpc.Client
			method string
		}{
			{"http", gw, "eth_getTransactionByBlockHashAndIndex"},
			{"http alias", gw, "evm_getTransactionByBlockHashAndIndex"},
			{"ws", ws, "eth_getTransactionByBlockHashAndIndex"},
			{"ws alias", ws, "evm_getTransactionByBlockHashAndIndex"},
		} {
			if got := rawCall(t, ctx, c.client, c.method, args...); !bytes.Equal(got, want) {
				t.Fatalf("type %d over %s:\n got %s\nwant %s", tx.Type(), c.name, got, want)
			}
		}
	}
	for _, ty := range wantTypes {
		if !seen[ty] {
			t.Errorf("no transaction of type %d was checked", ty)
		}
	}
	// Past the end of the block: null, as the node says.
	rc, _ := ec.TransactionReceipt(ctx, txs[0])
	if got := rawCall(t, ctx, gw, "eth_getTransactionByBlockHashAndIndex", rc.BlockHash, hexutil.Uint(1000)); string(got) != "null" {
		t.Fatalf("index past the end: %s", got)
	}
}

// checkProof fetches an account proof with storage keys through the
// gateway with gethclient and verifies it against the block's state root
// with go-ethereum's trie package.
func checkProof(t *testing.T, ctx context.Context, tg evmTarget, account common.Address, keys []common.Hash, wantStorage map[common.Hash]*big.Int) {
	t.Helper()
	ec := dialEth(t, tg.httpURL)
	gc := gethclient.New(dialRPC(t, tg.httpURL))
	head, err := ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	hexKeys := make([]string, len(keys))
	for i, k := range keys {
		hexKeys[i] = k.Hex()
	}
	res, err := gc.GetProof(ctx, account, hexKeys, head.Number)
	if err != nil {
		t.Fatalf("GetProof: %v", err)
	}
	// The account proof leads from the state root to the account, or
	// proves that it is absent.
	val, err := trie.VerifyProof(head.Root, crypto.Keccak256(account.Bytes()), proofDB(t, res.AccountProof))
	if err != nil {
		t.Fatalf("account proof of %s against root %s: %v", account, head.Root, err)
	}
	if val == nil {
		if res.Balance.Sign() != 0 || res.Nonce != 0 {
			t.Fatalf("absent account %s has balance %s nonce %d", account, res.Balance, res.Nonce)
		}
		return
	}
	var acc types.StateAccount
	if err := rlp.DecodeBytes(val, &acc); err != nil {
		t.Fatal(err)
	}
	if acc.Nonce != res.Nonce || acc.Balance.ToBig().Cmp(res.Balance) != 0 || acc.Root != res.StorageHash || common.BytesToHash(acc.CodeHash) != res.CodeHash {
		t.Fatalf("proof says %+v, result says nonce %d balance %s storage %s code %s", acc, res.Nonce, res.Balance, res.StorageHash, res.CodeHash)
	}
	bal, err := ec.BalanceAt(ctx, account, head.Number)
	if err != nil || bal.Cmp(res.Balance) != 0 {
		t.Fatalf("balance %s vs proof %s (%v)", bal, res.Balance, err)
	}
	// Each storage proof leads from the account's storage root to the slot.
	if len(res.StorageProof) != len(keys) {
		t.Fatalf("%d storage proofs for %d keys", len(res.StorageProof), len(keys))
	}
	for i, sp := range res.StorageProof {
		if res.StorageHash == types.EmptyRootHash || res.StorageHash == (common.Hash{}) {
			// An empty storage trie has nothing to walk: geth sends no
			// proof nodes, anvil the empty node 0x80; every value is 0.
			if sp.Value.Sign() != 0 || len(sp.Proof) > 1 || len(sp.Proof) == 1 && sp.Proof[0] != "0x80" {
				t.Fatalf("empty storage: slot %s = %s, proof %v", keys[i], sp.Value, sp.Proof)
			}
			continue
		}
		v, err := trie.VerifyProof(res.StorageHash, crypto.Keccak256(keys[i].Bytes()), proofDB(t, sp.Proof))
		if err != nil {
			t.Fatalf("storage proof %s: %v", keys[i], err)
		}
		got := new(big.Int)
		if len(v) > 0 {
			var content []byte
			if err := rlp.DecodeBytes(v, &content); err != nil {
				t.Fatal(err)
			}
			got.SetBytes(content)
		}
		if got.Cmp(sp.Value) != 0 {
			t.Fatalf("slot %s: proof value %s, result %s", keys[i], got, sp.Value)
		}
		if want, ok := wantStorage[keys[i]]; ok && want.Cmp(got) != 0 {
			t.Fatalf("slot %s = %s, want %s", keys[i], got, want)
		}
	}
	// The same proof by block hash (EIP-1898) and by the seed's name, over
	// WebSocket, is the node's answer byte for byte.
	direct := dialRPC(t, tg.directURL)
	ws := dialRPC(t, tg.wsURL)
	byHash := map[string]any{"blockHash": head.Hash()}
	want := rawCall(t, ctx, direct, "eth_getProof", account, hexKeys, byHash)
	if got := rawCall(t, ctx, ws, "evm_getProof", account, hexKeys, byHash); !bytes.Equal(got, want) {
		t.Fatalf("getProof by hash over ws differs:\n got %s\nwant %s", got, want)
	}
}

func proofDB(t *testing.T, nodes []string) *memorydb.Database {
	t.Helper()
	db := memorydb.New()
	for _, n := range nodes {
		b, err := hexutil.Decode(n)
		if err != nil {
			t.Fatal(err)
		}
		db.Put(crypto.Keccak256(b), b)
	}
	return db
}

func rawCall(t *testing.T, ctx context.Context, c *rpc.Client, method string, args ...any) json.RawMessage {
	t.Helper()
	var out json.RawMessage
	if err := c.CallContext(ctx, &out, method, args...); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out
}

func dialRPC(t *testing.T, url string) *rpc.Client {
	t.Helper()
	c, err := rpc.DialContext(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func dialEth(t *testing.T, url string) *ethclient.Client {
	return ethclient.NewClient(dialRPC(t, url))
}
