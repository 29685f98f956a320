package starknettx

import (
	"math/big"

	"github.com/holiman/uint256"
)

// Transaction versions: 3, and 3 as a query (2^128 + 3), which a wallet
// signs for fee estimates and simulations and a node never executes.
var (
	Version3      = FeltU64(3)
	QueryVersion3 = func() Felt {
		v := new(big.Int).Lsh(big.NewInt(1), 128)
		var f Felt
		f.SetBigInt(v.Add(v, big.NewInt(3)))
		return f
	}()
)

// DAMode is a data-availability mode of the nonce or the fee.
type DAMode uint32

// The data-availability modes.
const (
	DAModeL1 DAMode = 0
	DAModeL2 DAMode = 1
)

// ResourceBound is the most a transaction may use of one resource and the
// most it pays per unit.
type ResourceBound struct {
	MaxAmount       uint64
	MaxPricePerUnit uint256.Int // a u128
}

// ResourceBounds are a version 3 transaction's fee fields.
type ResourceBounds struct {
	L1Gas, L2Gas, L1DataGas ResourceBound
}

// MaxFee is the most the transaction can cost: the sum over the resources
// of max amount × max price per unit (tip excluded), which the sender's
// balance must cover.
func (r *ResourceBounds) MaxFee() *uint256.Int {
	fee := new(uint256.Int)
	for _, b := range []*ResourceBound{&r.L1Gas, &r.L2Gas, &r.L1DataGas} {
		var t uint256.Int
		t.Mul(uint256.NewInt(b.MaxAmount), &b.MaxPricePerUnit)
		fee.Add(fee, &t)
	}
	return fee
}

// feeFieldsHash is poseidon_many(tip, L1_GAS, L2_GAS, L1_DATA), each
// bound packed as resource name (60 bits) ‖ max amount (64) ‖ max price
// per unit (128).
func (r *ResourceBounds) feeFieldsHash(tip uint64) Felt {
	pack := func(name string, b *ResourceBound) Felt {
		v := new(big.Int).SetBytes([]byte(name))
		v.Lsh(v, 192)
		v.Or(v, new(big.Int).Lsh(new(big.Int).SetUint64(b.MaxAmount), 128))
		v.Or(v, b.MaxPricePerUnit.ToBig())
		var f Felt
		f.SetBigInt(v)
		return f
	}
	return PoseidonMany(FeltU64(tip), pack("L1_GAS", &r.L1Gas), pack("L2_GAS", &r.L2Gas), pack("L1_DATA", &r.L1DataGas))
}

// Common are the fields every version 3 transaction has.
type Common struct {
	// Query marks a transaction made for an estimate: its version, and so
	// its hash, is QueryVersion3.
	Query          bool
	Signature      []Felt
	Nonce          Felt
	ResourceBounds ResourceBounds
	Tip            uint64
	PaymasterData  []Felt
	NonceDAMode    DAMode
	FeeDAMode      DAMode
}

// Version returns 3, or the query version.
func (c *Common) Version() Felt {
	if c.Query {
		return QueryVersion3
	}
	return Version3
}

// prefix hashes the fields in the order every v3 hash starts with.
func (c *Common) prefix(kind string, address, chainID Felt) []Felt {
	modes := FeltU64(uint64(c.NonceDAMode)<<32 | uint64(c.FeeDAMode))
	return []Felt{
		ShortString(kind), c.Version(), address, c.ResourceBounds.feeFieldsHash(c.Tip),
		PoseidonMany(c.PaymasterData...), chainID, c.Nonce, modes,
	}
}

// Invoke is an INVOKE version 3 transaction: an account calls its
// __execute__ with Calldata (for the standard account: the number of
// calls, then each call as to, selector, length, arguments).
type Invoke struct {
	Common
	SenderAddress         Felt
	Calldata              []Felt
	AccountDeploymentData []Felt
}

// Hash is the transaction hash on the chain chainID (a short string felt,
// as starknet_chainId returns it).
func (t *Invoke) Hash(chainID Felt) Felt {
	v := t.prefix("invoke", t.SenderAddress, chainID)
	v = append(v, PoseidonMany(t.AccountDeploymentData...), PoseidonMany(t.Calldata...))
	return PoseidonMany(v...)
}

// DeployAccount is a DEPLOY_ACCOUNT version 3 transaction: it deploys an
// account of ClassHash at the address its salt and constructor calldata
// give, which pays its own fee.
type DeployAccount struct {
	Common
	ClassHash           Felt
	ContractAddressSalt Felt
	ConstructorCalldata []Felt
}

// Address is the account the transaction deploys (no deployer).
func (t *DeployAccount) Address() Felt {
	return ContractAddress(Felt{}, t.ContractAddressSalt, t.ClassHash, t.ConstructorCalldata)
}

// Hash is the transaction hash on the chain chainID.
func (t *DeployAccount) Hash(chainID Felt) Felt {
	v := t.prefix("deploy_account", t.Address(), chainID)
	v = append(v, PoseidonMany(t.ConstructorCalldata...), t.ClassHash, t.ContractAddressSalt)
	return PoseidonMany(v...)
}

// Selector is starknet_keccak of a function or event name: Keccak-256
// with the top 6 bits cleared.
func Selector(name string) Felt { return snKeccak([]byte(name)) }
