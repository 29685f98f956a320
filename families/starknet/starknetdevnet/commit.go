package starknetdevnet

import "github.com/porticohq/portico/families/starknet/starknettx"

// contractAddress is Starknet's calculate_contract_address: Pedersen over
// ("STARKNET_CONTRACT_ADDRESS", deployer, salt, class hash, hash of the
// constructor calldata), reduced below 2^251 - 256.
func contractAddress(deployer, salt, classHash Felt, calldata []Felt) Felt {
	callHash := pedersenArray(calldata...)
	a := pedersenArray(starknettx.ShortString("STARKNET_CONTRACT_ADDRESS"), deployer, salt, classHash, callHash)
	bound := mustFelt("0x7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff00")
	if a.Cmp(&bound) >= 0 {
		a.Sub(&a, &bound)
	}
	return a
}
