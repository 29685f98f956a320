package main

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/evm/evmdevnet"
	"github.com/porticohq/portico/families/evm/evmtx"
	"github.com/porticohq/portico/internal/anvil"
)

// TestSubscriptionsEVM: go-ethereum's ethclient watches heads and a
// contract's logs through the gateway, in front of the embedded geth
// devnet (go-ethereum's own subscriptions, in-process) and in front of
// anvil over WebSocket.
func TestSubscriptionsEVM(t *testing.T) {
	t.Run("embedded geth", func(t *testing.T) {
		cfg := config.DefaultConfig()
		cfg.Keys = []config.Key{{Name: "subs", Key: "subs00123456789abcdef0123456789ab", DailyCredits: 1e12}}
		traffic := false
		cfg.Networks = []config.Network{{Name: "evm", Family: "evm", Devnet: config.Devnet{BlockPeriod: time.Second, Traffic: &traffic}}}
		s := start(t, cfg)
		d := s.m.Devnets["evm"].(*evmdevnet.Devnet)
		direct, err := ethclient.Dial(d.HTTPURL())
		if err != nil {
			t.Fatal(err)
		}
		defer direct.Close()
		var keys []*ecdsa.PrivateKey
		for _, a := range d.Accounts() {
			keys = append(keys, a.Key)
		}
		watch(t, "ws://"+s.addr(t, "evm")+"/ws/v3/"+cfg.Keys[0].Key, direct, keys)
	})
	t.Run("anvil over WebSocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		n, err := anvil.Start(ctx, anvil.Options{Args: []string{"--block-time", "1"}})
		if errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
			t.Skip("anvil is not installed: run scripts/install-test-deps.sh")
		}
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		cfg := config.DefaultConfig()
		cfg.Keys = []config.Key{{Name: "subs", Key: "subs00123456789abcdef0123456789ab", DailyCredits: 1e12}}
		cfg.Networks = []config.Network{{Name: "evm", Family: "evm", Upstreams: []config.Upstream{{URL: n.WSURL()}}}}
		s := start(t, cfg)
		direct, err := ethclient.Dial(n.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer direct.Close()
		watch(t, "ws://"+s.addr(t, "evm")+"/ws/v3/"+cfg.Keys[0].Key, direct, n.DevKeys())
	})
}

// watch subscribes to new heads and to an emitter contract's logs through
// the gateway at wsURL, and sends the transactions directly.
func watch(t *testing.T, wsURL string, direct *ethclient.Client, keys []*ecdsa.PrivateKey) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	gw, err := ethclient.DialContext(ctx, wsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()

	heads := make(chan *types.Header, 16)
	hs, err := gw.SubscribeNewHead(ctx, heads)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Unsubscribe()
	var prev uint64
	for i := range 3 {
		select {
		case h := <-heads:
			if i > 0 && h.Number.Uint64() != prev+1 {
				t.Fatalf("head %d after %d", h.Number, prev)
			}
			prev = h.Number.Uint64()
		case err := <-hs.Err():
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatal("no new heads")
		}
	}

	chainID, err := direct.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sender := &evmtx.Sender{Client: direct, ChainID: chainID, Keys: keys[:6]}
	deploy, contract, err := sender.Deploy(ctx, keys[6], evmtx.EmitterInit)
	if err != nil {
		t.Fatal(err)
	}
	waitMined(t, ctx, direct, deploy)
	logs := make(chan types.Log, 16)
	ls, err := gw.SubscribeFilterLogs(ctx, ethereum.FilterQuery{Addresses: []common.Address{contract}, Topics: [][]common.Hash{{evmtx.EmitterTopic}}}, logs)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Unsubscribe()
	call, err := sender.Call(ctx, keys[6], contract)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-logs:
		if l.Address != contract || l.TxHash != call || len(l.Topics) != 1 || l.Topics[0] != evmtx.EmitterTopic || new(big.Int).SetBytes(l.Data).Int64() != 42 {
			t.Fatalf("log %+v", l)
		}
	case err := <-ls.Err():
		t.Fatal(err)
	case <-ctx.Done():
		t.Fatal("no log")
	}
}

func waitMined(t *testing.T, ctx context.Context, c *ethclient.Client, tx common.Hash) {
	t.Helper()
	for {
		r, err := c.TransactionReceipt(ctx, tx)
		if err == nil && r != nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("transaction %s not mined", tx)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
