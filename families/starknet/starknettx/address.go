package starknettx

import (
	"math/big"

	pedersenhash "github.com/consensys/gnark-crypto/ecc/stark-curve/pedersen-hash"
)

// OZAccountClassHash is the class hash of OpenZeppelin's account contract
// (Cairo 1, v0.8.1): the standard account class wallets and starknet.js
// deploy for a Stark key. Its constructor takes the public key, and it
// checks a signature [r, s] over the transaction hash against it.
var OZAccountClassHash = mustFelt("0x061dac032f228abef9c6626f995015233097ae253a7f72d68552db02f2971b8f")

// addressBound is 2^251 − 256: contract addresses are reduced below it.
var addressBound = mustFelt("0x7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff00")

// ContractAddress is Starknet's calculate_contract_address: Pedersen over
// ("STARKNET_CONTRACT_ADDRESS", deployer, salt, class hash, hash of the
// constructor calldata), reduced below 2^251 − 256.
func ContractAddress(deployer, salt, classHash Felt, calldata []Felt) Felt {
	callHash := pedersenArray(calldata...)
	a := pedersenArray(ShortString("STARKNET_CONTRACT_ADDRESS"), deployer, salt, classHash, callHash)
	if a.Cmp(&addressBound) >= 0 {
		a.Sub(&a, &addressBound)
	}
	return a
}

// AccountAddress is the address of the standard account (OZAccountClassHash)
// for a public key, deployed as wallets and starknet.js deploy it: the
// public key is both the salt and the constructor's one argument, and no
// deployer (0).
func AccountAddress(publicKey Felt) Felt {
	return ContractAddress(Felt{}, publicKey, OZAccountClassHash, []Felt{publicKey})
}

// Pedersen is Starknet's pedersen_hash(a, b) (gnark-crypto's).
func Pedersen(a, b *Felt) Felt { return pedersenhash.Pedersen(a, b) }

// pedersenArray is compute_hash_on_elements: a Pedersen chain from 0 over
// the values, then over their count.
func pedersenArray(values ...Felt) Felt {
	ptrs := make([]*Felt, len(values))
	for i := range values {
		ptrs[i] = &values[i]
	}
	return pedersenhash.PedersenArray(ptrs...)
}

// mustFelt parses a constant of this package.
func mustFelt(s string) Felt {
	f, err := ParseFelt(s)
	if err != nil {
		panic("starknettx: bad felt constant " + s)
	}
	return f
}

// two251 is 2^251: Cairo's ECDSA wants the message hash, r, s and s⁻¹
// below it.
var two251 = new(big.Int).Lsh(big.NewInt(1), 251)
