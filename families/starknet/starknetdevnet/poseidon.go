package starknetdevnet

import "github.com/porticohq/portico/families/starknet/starknettx"

// The devnet hashes with package starknettx's Poseidon, the one the
// wallet's transaction hashes use too; these names keep its call sites
// short.

func poseidon(x, y *Felt) Felt    { return starknettx.Poseidon(x, y) }
func poseidonSingle(x *Felt) Felt { return starknettx.PoseidonSingle(x) }
func poseidonMany(v ...Felt) Felt { return starknettx.PoseidonMany(v...) }
