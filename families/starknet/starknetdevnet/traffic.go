package starknetdevnet

import (
	"bytes"
	"math/rand/v2"
	"slices"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// Traffic amounts, in the token's smallest unit.
const (
	initialBalance = 1_000_000_000_000_000_000 // 10^18 per dev account
	feeAmount      = 1_000_000_000_000         // 10^12 per transaction
)

// devPublicKey is the public key recorded for dev account i. The devnet
// does not verify signatures, so it is a derived value, not a curve point.
func devPublicKey(i uint64) Felt {
	return poseidon(new(Felt).SetUint64(0xdeadbeef), new(Felt).SetUint64(i))
}

// accounts returns the accounts traffic moves (every contract but the
// token and the wallets' accounts, wallets.go), in address order.
func (w *worldState) accounts() []Felt {
	var out []Felt
	for _, a := range sortedKeys(w.contracts) {
		if f := feltFromKey(a[:]); !f.Equal(&tokenAddress) && !w.isWalletAccount(f) {
			out = append(out, f)
		}
	}
	return out
}

// GenerateTraffic adds one round of transactions to the pending block:
// token transfers and an approval (INVOKE), and every few rounds a new
// account (DEPLOY_ACCOUNT), a class declaration (DECLARE) or an upgrade of
// an account to a declared class (a class replacement).
func (d *Devnet) GenerateTraffic() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.db == nil || d.closed {
		return errNotRunning
	}
	d.trafficRound()
	return nil
}

// trafficRound adds one round of traffic to the pending block; the caller
// holds mu for writing.
func (d *Devnet) trafficRound() {
	p := d.pending
	before := len(p.txs)
	rng := roundRand(p.number, d.round)
	d.round++
	accts := d.world.accounts()
	for range 2 + rng.IntN(3) {
		from, to := accts[rng.IntN(len(accts))], accts[rng.IntN(len(accts))]
		d.transfer(from, to, uint64(1+rng.IntN(1_000_000)))
	}
	if rng.IntN(2) == 0 {
		owner, spender := accts[rng.IntN(len(accts))], accts[rng.IntN(len(accts))]
		d.approve(owner, spender, uint64(rng.IntN(1_000_000_000)))
	}
	switch rng.IntN(6) {
	case 0:
		d.deployAccount(rng)
	case 1:
		d.declareClass(accts[rng.IntN(len(accts))], rng)
	case 2:
		d.upgrade(accts[rng.IntN(len(accts))], rng)
	}
	d.subs.pendingAdded(p.number, p.txs[before:])
}

// feesFor are the resource bounds every devnet transaction declares.
func feesFor() resourceBounds {
	return resourceBounds{
		l1Amount: 0, l1Price: l1GasPriceFri * 2,
		l2Amount: 2_000_000, l2Price: l2GasFri * 2,
		dataAmount: 256, dataPrice: dataGasFri * 2,
	}
}

// balance reads an account's token balance (the low half; the devnet's
// amounts never reach the high half).
func (d *Devnet) balance(acct Felt) uint64 {
	v := d.world.storageAt(tokenAddress, mapSlot(varBalances, acct))
	return v.Uint64()
}

// move changes two balances and emits Transfer(from, to; amount as u256).
func (d *Devnet) move(from, to Felt, amount uint64) event {
	diff := d.pending.diff
	if !from.Equal(&to) {
		fb, tb := d.balance(from), d.balance(to)
		amount = min(amount, fb)
		d.world.setStorage(diff, tokenAddress, mapSlot(varBalances, from), starknettx.FeltU64(fb-amount))
		d.world.setStorage(diff, tokenAddress, mapSlot(varBalances, to), starknettx.FeltU64(tb+amount))
	}
	return event{from: tokenAddress, keys: []Felt{selTransfer, from, to}, data: []Felt{starknettx.FeltU64(amount), {}}}
}

// execute finishes a transaction: the nonce, the fee transfer to the
// sequencer (the last event, as on Starknet), and the pending block.
func (d *Devnet) execute(t *txn, bumpNonce bool) {
	if bumpNonce {
		d.world.bumpNonce(d.pending.diff, t.sender)
	}
	t.fee = feeAmount
	t.l2Gas = 800_000 + uint64(len(t.events))*50_000
	t.dataGas = 128 + uint64(len(t.events))*32
	t.events = append(t.events, d.move(t.sender, sequencerAddr, feeAmount))
	d.pending.txs = append(d.pending.txs, t)
}

// invoke builds an INVOKE v3 from an account calling one entry point.
func (d *Devnet) invoke(sender, to, selector Felt, args ...Felt) *txn {
	calldata := append([]Felt{starknettx.FeltU64(1), to, selector, starknettx.FeltU64(uint64(len(args)))}, args...)
	nonce := d.world.contracts[sender.Bytes()].nonce
	h := v3Hash("invoke", sender, feesFor(), d.chain, nonce, poseidonMany(), poseidonMany(calldata...))
	return &txn{hash: h, kind: kindInvoke, sender: sender, nonce: nonce, calldata: calldata}
}

func (d *Devnet) transfer(from, to Felt, amount uint64) {
	t := d.invoke(from, tokenAddress, selTransferFn, to, starknettx.FeltU64(amount), Felt{})
	t.events = append(t.events, d.move(from, to, amount))
	d.execute(t, true)
}

func (d *Devnet) approve(owner, spender Felt, amount uint64) {
	t := d.invoke(owner, tokenAddress, selApproveFn, spender, starknettx.FeltU64(amount), Felt{})
	d.world.setStorage(d.pending.diff, tokenAddress, mapSlot(varAllowances, owner, spender), starknettx.FeltU64(amount))
	t.events = append(t.events, event{from: tokenAddress, keys: []Felt{selApproval, owner, spender}, data: []Felt{starknettx.FeltU64(amount), {}}})
	d.execute(t, true)
}

// deployAccount deploys a new account (DEPLOY_ACCOUNT v3). Its first
// funds come from dev account 0 in the same block, before it pays its fee.
func (d *Devnet) deployAccount(rng *rand.Rand) {
	salt := starknettx.FeltU64(rng.Uint64())
	pub := devPublicKey(rng.Uint64())
	addr := contractAddress(Felt{}, salt, accountClass, []Felt{pub})
	if _, ok := d.world.contracts[addr.Bytes()]; ok {
		return
	}
	funder := d.world.accounts()[0]
	w, diff := d.world, d.pending.diff
	h := v3Hash("deploy_account", addr, feesFor(), d.chain, 0, poseidonMany(pub), accountClass, salt)
	w.deploy(diff, addr, accountClass)
	w.setStorage(diff, addr, varPublicKey, pub)
	d.transfer(funder, addr, 10*feeAmount)
	t := &txn{hash: h, kind: kindDeployAccount, sender: addr, deployed: true,
		events:   []event{{from: addr, keys: []Felt{selOwnerAdded, pub}}},
		calldata: []Felt{pub}, classHash: accountClass, salt: salt}
	d.execute(t, true)
}

// declareClass declares a new account class variant (DECLARE v3).
func (d *Devnet) declareClass(sender Felt, rng *rand.Rand) {
	class := poseidonMany(starknettx.ShortString("portico devnet"), starknettx.ShortString("account"), starknettx.FeltU64(2+rng.Uint64()))
	if _, ok := d.world.classes[class.Bytes()]; ok {
		return
	}
	compiled := compiledHash(class)
	nonce := d.world.contracts[sender.Bytes()].nonce
	h := v3Hash("declare", sender, feesFor(), d.chain, nonce, poseidonMany(), class, compiled)
	d.world.declare(d.pending.diff, class, compiled)
	d.execute(&txn{hash: h, kind: kindDeclare, sender: sender, nonce: nonce, classHash: class, compiled: compiled}, true)
}

// upgrade replaces an account's class with another declared account class
// (an INVOKE of upgrade on itself), emitting Upgraded(class_hash).
func (d *Devnet) upgrade(acct Felt, rng *rand.Rand) {
	var choices []Felt
	cur := d.world.contracts[acct.Bytes()].classHash
	for _, h := range sortedKeys(d.world.classes) {
		f := feltFromKey(h[:])
		if !f.Equal(&tokenClass) && !f.Equal(&cur) && !f.Equal(&starknettx.OZAccountClassHash) {
			choices = append(choices, f)
		}
	}
	if len(choices) == 0 {
		return
	}
	slices.SortFunc(choices, func(a, b Felt) int { x, y := a.Bytes(), b.Bytes(); return bytes.Compare(x[:], y[:]) })
	class := choices[rng.IntN(len(choices))]
	t := d.invoke(acct, acct, selUpgradeFn, class)
	d.world.replaceClass(d.pending.diff, acct, class)
	t.events = append(t.events, event{from: acct, keys: []Felt{selUpgraded}, data: []Felt{class}})
	d.execute(t, true)
}
