package starknetdevnet

import (
	"crypto/sha256"
	"math/big"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// What the devnet offers wallets: the standard account class
// (OpenZeppelin's, as starknet.js and the rollup's wallets deploy it),
// whose accounts check a Stark signature over each transaction's hash, and
// a faucet account of that class with a published test key, funded at
// genesis, whose signed transfers fund other accounts (dev only: anyone
// can sign with its key).
//
// Accounts of the standard class belong to their keys: the traffic
// generator never moves their funds, sends them tokens or upgrades them,
// so a wallet sees exactly its own transactions.

// faucetBalance is what the faucet account holds at genesis (the devnet's
// balances are u64).
const faucetBalance = 10_000_000_000_000_000_000 // 10^19 FRI, 10 STRK-like units of 10^18

// FaucetKey returns the faucet account's private key: a public test key,
// the same on every devnet. Never use it anywhere else.
func FaucetKey() *big.Int {
	sum := sha256.Sum256([]byte("portico starknet devnet faucet (a public test key)"))
	return new(big.Int).Mod(new(big.Int).SetBytes(sum[:]), starknettx.CurveOrder())
}

// FaucetAddress returns the faucet account's address: the standard
// account of FaucetKey's public key.
func FaucetAddress() Felt {
	pub, _ := starknettx.PublicKey(FaucetKey())
	return starknettx.AccountAddress(pub)
}

// FeeToken returns the fee token's address (Starknet's STRK address).
func FeeToken() Felt { return tokenAddress }

// ensureWallets declares the standard account class and deploys and funds
// the faucet account when the state lacks them: in the genesis block, or
// in the pending block of a chain made before the devnet had them.
func (w *worldState) ensureWallets(d *stateDiff) {
	oz := starknettx.OZAccountClassHash
	if _, ok := w.classes[oz.Bytes()]; !ok {
		w.declare(d, oz, compiledHash(oz))
	}
	addr := FaucetAddress()
	if _, ok := w.contracts[addr.Bytes()]; ok {
		return
	}
	pub, _ := starknettx.PublicKey(FaucetKey())
	w.deploy(d, addr, oz)
	w.setStorage(d, addr, varPublicKey, pub)
	slot := mapSlot(varBalances, addr)
	w.setStorage(d, tokenAddress, slot, starknettx.FeltU64(faucetBalance))
	supply := w.storageAt(tokenAddress, varTotalSupply)
	total := starknettx.FeltU64(faucetBalance)
	total.Add(&total, &supply)
	w.setStorage(d, tokenAddress, varTotalSupply, total)
}

// isWalletAccount reports whether a contract is an account of the
// standard class, which only its key moves.
func (w *worldState) isWalletAccount(addr Felt) bool {
	c := w.contracts[addr.Bytes()]
	return c != nil && c.classHash.Equal(&starknettx.OZAccountClassHash)
}
