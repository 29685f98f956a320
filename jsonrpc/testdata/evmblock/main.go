// Command evmblock records the EVM block fixture of the jsonrpc
// benchmarks, evm_block_full_txs.json: what go-ethereum answers to
// eth_getBlockByHash(hash, true) for a block shaped like a busy mainnet
// one. It runs the embedded devnet, sends one transaction of every type
// (0 to 4, with a blob and an authorization list) and then a mix drawn
// from a fixed seed: plain transfers, ERC-20 transfers and approvals,
// router calls with a few hundred bytes of calldata, some with access
// lists, some legacy; seals them into one block, and writes the node's
// response body byte for byte.
//
//	go run ./jsonrpc/testdata/evmblock > jsonrpc/testdata/evm_block_full_txs.json
//
// Hashes, signatures and timestamps differ from run to run (the devnet
// seals with the current time); the shape and the size do not.
package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"net/http"
	"os"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/porticohq/portico/families/evm/evmdevnet"
)

// txs is the number of transactions after the round of every type: with
// calldata drawn as below it makes a block of about 118 KB.
const txs = 93

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "evmblock:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dev, err := evmdevnet.New(evmdevnet.Config{BlockPeriod: -1, Accounts: 48})
	if err != nil {
		return err
	}
	if err := dev.Start(ctx); err != nil {
		return err
	}
	defer dev.Close()
	// The first round deploys a contract too: seal it away first, so the
	// recorded block holds one transaction of each type and the mix.
	if _, err := dev.SendTraffic(ctx); err != nil {
		return err
	}
	if _, err := dev.Commit(); err != nil {
		return err
	}
	if _, err := dev.SendTraffic(ctx); err != nil {
		return err
	}
	client, err := ethclient.DialContext(ctx, dev.HTTPURL())
	if err != nil {
		return err
	}
	defer client.Close()
	head, err := client.HeaderByNumber(ctx, nil)
	if err != nil {
		return err
	}
	tip := big.NewInt(1_000_000_000)
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(3)), tip)
	signer := types.LatestSignerForChainID(dev.ChainID())

	rng := rand.New(rand.NewPCG(118, 2026))
	accounts := dev.Accounts()[7:]
	nonces := make([]uint64, len(accounts))
	for i, a := range accounts {
		if nonces[i], err = client.PendingNonceAt(ctx, a.Address); err != nil {
			return err
		}
	}
	tokens := make([]common.Address, 6)
	for i := range tokens {
		tokens[i] = randAddress(rng)
	}
	router := randAddress(rng)
	for n := range txs {
		from := n % len(accounts)
		var to common.Address
		var data []byte
		var access types.AccessList
		value := new(big.Int)
		switch k := rng.IntN(100); {
		case k < 30: // a plain transfer
			to = randAddress(rng)
			value.SetUint64(rng.Uint64N(5e18))
		case k < 62: // ERC-20 transfer or approve
			to = tokens[rng.IntN(len(tokens))]
			sel := []byte{0xa9, 0x05, 0x9c, 0xbb}
			if k%4 == 0 {
				sel = []byte{0x09, 0x5e, 0xa7, 0xb3}
			}
			data = append(sel, word(randAddress(rng).Bytes())...)
			data = append(data, word(new(big.Int).SetUint64(rng.Uint64N(1e12)).Bytes())...)
		default: // a router call: offsets, amounts, addresses, a path
			to = router
			data = []byte{0x35, 0x93, 0x56, 0x4c}
			for range 4 + rng.IntN(24) {
				switch rng.IntN(3) {
				case 0:
					data = append(data, word(tokens[rng.IntN(len(tokens))].Bytes())...)
				case 1:
					data = append(data, word(new(big.Int).SetUint64(rng.Uint64()).Bytes())...)
				default:
					data = append(data, word([]byte{byte(rng.IntN(8) * 32)})...)
				}
			}
			if k >= 85 {
				for range 1 + rng.IntN(3) {
					t := types.AccessTuple{Address: tokens[rng.IntN(len(tokens))]}
					for range 1 + rng.IntN(4) {
						t.StorageKeys = append(t.StorageKeys, randHash(rng))
					}
					access = append(access, t)
				}
			}
		}
		gas := uint64(21000 + 16*len(data) + 2400*len(access) + 5000)
		for _, t := range access {
			gas += uint64(1900 * len(t.StorageKeys))
		}
		var txData types.TxData
		if rng.IntN(10) == 0 && access == nil {
			txData = &types.LegacyTx{Nonce: nonces[from], GasPrice: feeCap, Gas: gas, To: &to, Value: value, Data: data}
		} else {
			txData = &types.DynamicFeeTx{ChainID: dev.ChainID(), Nonce: nonces[from], GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: &to, Value: value, Data: data, AccessList: access}
		}
		tx, err := types.SignNewTx(accounts[from].Key, signer, txData)
		if err != nil {
			return err
		}
		if err := client.SendTransaction(ctx, tx); err != nil {
			return fmt.Errorf("transaction %d: %w", n, err)
		}
		nonces[from]++
	}
	hash, err := dev.Commit()
	if err != nil {
		return err
	}
	block, err := client.BlockByHash(ctx, hash)
	if err != nil {
		return err
	}
	if got, want := len(block.Transactions()), txs+5; got != want {
		return fmt.Errorf("sealed %d transactions, want %d", got, want)
	}
	req := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByHash","params":["%s",true]}`, hash)
	resp, err := http.Post(dev.HTTPURL(), "application/json", bytes.NewReader([]byte(req)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(body)
	return err
}

func randAddress(rng *rand.Rand) (a common.Address) {
	for i := range a {
		a[i] = byte(rng.Uint32())
	}
	return a
}

func randHash(rng *rand.Rand) (h common.Hash) {
	for i := range h {
		h[i] = byte(rng.Uint32())
	}
	return h
}

// word left-pads b to an ABI word of 32 bytes.
func word(b []byte) []byte {
	w := make([]byte, 32)
	copy(w[32-len(b):], b)
	return w
}
