package starknettx

import "github.com/porticohq/portico/families/starknet/starkhash"

// Poseidon is poseidon_hash(x, y) (package starkhash has Starknet's hashes
// once, for the signer, the devnet and the verifier alike).
func Poseidon(x, y *Felt) Felt { return starkhash.Poseidon(x, y) }

// PoseidonSingle is poseidon_hash_single(x).
func PoseidonSingle(x *Felt) Felt { return starkhash.PoseidonSingle(x) }

// PoseidonMany is poseidon_hash_many.
func PoseidonMany(values ...Felt) Felt { return starkhash.PoseidonMany(values...) }
