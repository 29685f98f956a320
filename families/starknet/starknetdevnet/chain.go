package starknetdevnet

import (
	"math/big"
	"math/rand/v2"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// Transaction kinds, as receipts name them.
const (
	kindInvoke        = "INVOKE"
	kindDeclare       = "DECLARE"
	kindDeployAccount = "DEPLOY_ACCOUNT"
)

// event is an emitted event.
type event struct {
	from Felt
	keys []Felt
	data []Felt
}

// txn is an executed transaction with what its receipt needs.
type txn struct {
	hash     Felt
	kind     string
	sender   Felt // the account; for DEPLOY_ACCOUNT the new contract
	fee      uint64
	l2Gas    uint64
	l1Gas    uint64
	dataGas  uint64
	events   []event
	deployed bool // DEPLOY_ACCOUNT: sender is the receipt's contract_address

	// What the transaction itself carries, for TXN_WITH_HASH (pending
	// transaction subscriptions with transaction_details); kept in memory
	// only, not stored.
	nonce     uint64
	calldata  []Felt // INVOKE: __execute__'s calldata; DEPLOY_ACCOUNT: the constructor's
	classHash Felt   // DECLARE: the declared class; DEPLOY_ACCOUNT: the account's
	compiled  Felt   // DECLARE: the compiled class hash
	salt      Felt   // DEPLOY_ACCOUNT: the address salt

	// A wallet's transaction (write.go) also keeps what it signed; traffic
	// leaves these empty and declares feesFor()'s bounds.
	signature []Felt
	bounds    *starknettx.ResourceBounds
	tip       uint64
}

// Well-known names of the devnet's contracts. The fee token sits at the
// STRK address of Starknet's public networks, as on other devnets.
var (
	selTransfer     = starknettx.Selector("Transfer")
	selApproval     = starknettx.Selector("Approval")
	selOwnerAdded   = starknettx.Selector("OwnerAdded")
	selUpgraded     = starknettx.Selector("Upgraded")
	selTransferFn   = starknettx.Selector("transfer")
	selApproveFn    = starknettx.Selector("approve")
	selUpgradeFn    = starknettx.Selector("upgrade")
	varBalances     = starknettx.Selector("ERC20_balances")
	varAllowances   = starknettx.Selector("ERC20_allowances")
	varTotalSupply  = starknettx.Selector("ERC20_total_supply")
	varPublicKey    = starknettx.Selector("Account_public_key")
	tokenAddress    = mustFelt("0x4718f5a0fc34cc1af16a1cdee98ffb20c31f5cd61d6ab07201858f4287c938d")
	sequencerAddr   = mustFelt("0x1176a1bd84444c89232ec27754698e5d2e7e1a7f1539f12027f28b23ec9f3d8")
	accountClass    = poseidonMany(starknettx.ShortString("portico devnet"), starknettx.ShortString("account"), starknettx.FeltU64(1))
	tokenClass      = poseidonMany(starknettx.ShortString("portico devnet"), starknettx.ShortString("erc20"), starknettx.FeltU64(1))
	legacyClass     = pedersenArray(starknettx.ShortString("portico devnet"), starknettx.ShortString("cairo0 proxy"))
	storageAddrMask = mustFelt("0x7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff00")
)

// compiledHash is the compiled (CASM) class hash the devnet assigns to a
// Sierra class: it has no compiler, so it derives one.
func compiledHash(classHash Felt) Felt {
	return poseidon(&classHash, new(Felt).SetUint64(0xca5))
}

// mapSlot is the storage address of a Cairo 1 storage map entry,
// h(sn_keccak(name), key...), reduced below 2^251 − 256.
func mapSlot(base Felt, keys ...Felt) Felt {
	h := base
	for i := range keys {
		h = pedersen(&h, &keys[i])
	}
	if h.Cmp(&storageAddrMask) >= 0 {
		h.Sub(&h, &storageAddrMask)
	}
	return h
}

// next returns the slot after s: a u256's high half.
func next(s Felt) Felt {
	one := starknettx.FeltU64(1)
	return *s.Add(&s, &one)
}

// chainParams are the fixed parameters a transaction hash commits to.
type chainParams struct {
	chainID Felt
}

// resourceBounds are a v3 transaction's fee fields.
type resourceBounds struct {
	tip                   uint64
	l1Amount, l1Price     uint64
	l2Amount, l2Price     uint64
	dataAmount, dataPrice uint64
}

// feeFieldsHash is poseidon_many(tip, L1_GAS bound, L2_GAS bound, L1_DATA
// bound), each bound packing name (60 bits) ‖ max amount (64) ‖ max price
// per unit (128).
func (r resourceBounds) hash() Felt {
	pack := func(name string, amount, price uint64) Felt {
		v := new(big.Int).SetBytes([]byte(name))
		v.Lsh(v, 192)
		v.Or(v, new(big.Int).Lsh(new(big.Int).SetUint64(amount), 128))
		v.Or(v, new(big.Int).SetUint64(price))
		var f Felt
		f.SetBigInt(v)
		return f
	}
	return poseidonMany(starknettx.FeltU64(r.tip),
		pack("L1_GAS", r.l1Amount, r.l1Price),
		pack("L2_GAS", r.l2Amount, r.l2Price),
		pack("L1_DATA", r.dataAmount, r.dataPrice))
}

// v3Hash is the hash of a version 3 transaction: poseidon_many over the
// prefix, version, sender, fee fields hash, paymaster data hash, chain id,
// nonce and data-availability modes, followed by the kind's own fields.
func v3Hash(prefix string, sender Felt, fees resourceBounds, chain chainParams, nonce uint64, tail ...Felt) Felt {
	values := []Felt{
		starknettx.ShortString(prefix), starknettx.FeltU64(3), sender, fees.hash(),
		poseidonMany(), // paymaster_data: empty
		chain.chainID, starknettx.FeltU64(nonce),
		{}, // nonce and fee data-availability modes: both L1 (0)
	}
	return poseidonMany(append(values, tail...)...)
}

// rng is the traffic generator's source for one round: seeded by the block
// number and round, so a restarted devnet continues with fresh but
// reproducible values.
func roundRand(block uint64, round int) *rand.Rand {
	return rand.New(rand.NewPCG(block, uint64(round)+0x9e3779b97f4a7c15))
}
