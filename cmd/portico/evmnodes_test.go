package main

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/evm/evmdevnet"
	"github.com/porticohq/portico/families/evm/evmtx"
	"github.com/porticohq/portico/internal/anvil"
)

var storageKeys = []common.Hash{common.HexToHash("0x0"), common.HexToHash("0x1"), common.HexToHash("0x2")}

var wantStorage = map[common.Hash]*big.Int{storageKeys[0]: big.NewInt(42), storageKeys[1]: big.NewInt(7), storageKeys[2]: big.NewInt(0)}

// TestEVMEmbeddedGeth runs the EVM checks against the devnet portico serve
// starts by itself.
func TestEVMEmbeddedGeth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := config.DefaultConfig()
	traffic := false
	cfg.Networks = []config.Network{{Name: "evm-devnet", Family: "evm", Devnet: config.Devnet{BlockPeriod: -1, Traffic: &traffic}}}
	s := start(t, cfg)
	d := s.m.Devnets["evm-devnet"].(*evmdevnet.Devnet)
	var txs []common.Hash
	for range 2 {
		hashes, err := d.SendTraffic(ctx)
		if err != nil {
			t.Fatal(err)
		}
		txs = append(txs, hashes...)
		if _, err := d.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	tg := evmTarget{httpURL: s.url(t, "evm-devnet"), wsURL: s.wsURL(t, "evm-devnet"), directURL: d.HTTPURL()}
	checkTransactionsByBlockHashAndIndex(t, ctx, tg, txs, []uint8{0, 1, 2, 3, 4})
	checkProof(t, ctx, tg, d.StorageContract(), storageKeys, wantStorage)
	checkProof(t, ctx, tg, d.Accounts()[0].Address, storageKeys[:1], nil)
	checkProof(t, ctx, tg, common.HexToAddress("0x00000000000000000000000000000000000000aa"), storageKeys[:1], nil)
}

// TestEVMAnvil puts anvil behind the gateway, reached over WebSocket, and
// runs the same checks.
func TestEVMAnvil(t *testing.T) {
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

	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "test", Key: "test0123456789abcdef0123456789ab"}}
	cfg.Networks = []config.Network{{Name: "anvil", Family: "evm", Upstreams: []config.Upstream{{URL: node.WSURL()}}}}
	s := start(t, cfg)

	ec, err := ethclient.DialContext(ctx, node.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	chainID, err := ec.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys := node.DevKeys()
	sender := &evmtx.Sender{Client: ec, ChainID: chainID, Keys: keys[:6]}
	txs, err := sender.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deploy, contract, err := sender.Deploy(ctx, keys[6], evmtx.StorageInit)
	if err != nil {
		t.Fatal(err)
	}
	txs = append(txs, deploy)
	// anvil may answer eth_sendRawTransaction before it has mined the
	// transaction (a blob transaction, or any under load): the checks
	// below start from receipts.
	for _, h := range txs {
		waitMined(t, ctx, ec, h)
	}
	tg := evmTarget{httpURL: s.url(t, "anvil"), wsURL: s.wsURL(t, "anvil"), directURL: node.URL()}
	checkTransactionsByBlockHashAndIndex(t, ctx, tg, txs, []uint8{0, 1, 2, 3, 4})
	checkProof(t, ctx, tg, contract, storageKeys, wantStorage)
	checkProof(t, ctx, tg, crypto.PubkeyToAddress(keys[0].PublicKey), storageKeys[:1], nil)
}
