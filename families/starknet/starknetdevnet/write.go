package starknetdevnet

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/holiman/uint256"

	"github.com/porticohq/portico/families/rpcparams"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// The write API: a wallet's version 3 INVOKE and DEPLOY_ACCOUNT,
// checked as a sequencer checks them (docs/starknet-devnet.md, "Write
// API"): the version, the sender (an account), the nonce (exactly the
// account's next: the devnet has no mempool to hold a later one), the
// resource bounds against the gas the transaction uses and the block's
// prices, the balance against the most the transaction can cost, and the
// signature [r, s] over the transaction hash against the account's stored
// public key (package starknettx, which the wallet signs with). Then the
// calls run: the fee token's transfer moves balances and emits Transfer,
// and the fee goes to the sequencer as the last event, as on Starknet.

// Gas a wallet's transaction uses: fixed costs plus a share per event, in
// the block's prices (block.go); no L1 gas.
const (
	baseL2Gas    = 800_000
	eventL2Gas   = 50_000
	baseDataGas  = 128
	eventDataGas = 32
)

// gasOf returns the L2 and L1 data gas of a transaction that emits events
// events (the fee transfer not counted).
func gasOf(events int) (l2, data uint64) {
	return baseL2Gas + uint64(events)*eventL2Gas, baseDataGas + uint64(events)*eventDataGas
}

// feeOf is the fee of that gas, in FRI.
func feeOf(l2, data uint64) uint64 { return l2*l2GasFri + data*dataGasFri }

// call is one call of an account's __execute__ calldata.
type call struct {
	to, selector Felt
	args         []Felt
}

// parseCalls reads the standard account's calldata: the number of calls,
// then each as to, selector, argument count, arguments.
func parseCalls(cd []Felt) ([]call, error) {
	bad := errors.New("calldata is not the account's call array: count, then to, selector, length, arguments per call")
	if len(cd) == 0 || !cd[0].IsUint64() || cd[0].Uint64() > 64 {
		return nil, bad
	}
	n, i := int(cd[0].Uint64()), 1
	calls := make([]call, 0, n)
	for range n {
		if i+3 > len(cd) || !cd[i+2].IsUint64() || cd[i+2].Uint64() > uint64(len(cd)-i-3) {
			return nil, bad
		}
		l := int(cd[i+2].Uint64())
		calls = append(calls, call{to: cd[i], selector: cd[i+1], args: cd[i+3 : i+3+l]})
		i += 3 + l
	}
	if i != len(cd) {
		return nil, bad
	}
	return calls, nil
}

// userTx is a wallet's transaction, checked and ready to apply.
type userTx struct {
	kind   string
	hash   Felt
	sender Felt
	nonce  uint64
	common *starknettx.Common
	moves  []transferCall // INVOKE: the token transfers
	spend  uint64         // INVOKE: what the transfers take from the sender
	pub    Felt           // DEPLOY_ACCOUNT: the account's key
	invoke *starknettx.Invoke
	deploy *starknettx.DeployAccount
	l2Gas  uint64
	data   uint64
}

// transferCall is a fee-token transfer.
type transferCall struct {
	to     Felt
	amount uint64
}

// fee is the transaction's actual fee.
func (u *userTx) fee() uint64 { return feeOf(u.l2Gas, u.data) }

// overlay is what earlier transactions of one estimate changed: nonces
// and accounts deployed, by address.
type overlay struct {
	nonces map[[32]byte]uint64
	keys   map[[32]byte]Felt
}

func newOverlay() *overlay { return &overlay{nonces: map[[32]byte]uint64{}, keys: map[[32]byte]Felt{}} }

// account returns an account's public key and next nonce. deployed is
// false when there is no contract at addr; an error is NON_ACCOUNT.
func (d *Devnet) account(addr Felt, ov *overlay) (pub Felt, nonce uint64, deployed bool, err error) {
	a := addr.Bytes()
	if ov != nil {
		if k, ok := ov.keys[a]; ok {
			return k, ov.nonces[a], true, nil
		}
	}
	c := d.world.contracts[a]
	if c == nil {
		return Felt{}, 0, false, nil
	}
	if addr.Equal(&tokenAddress) {
		return Felt{}, 0, true, ErrNonAccount
	}
	nonce = c.nonce
	if ov != nil {
		if n, ok := ov.nonces[a]; ok {
			nonce = n
		}
	}
	return d.world.storageAt(addr, varPublicKey), nonce, true, nil
}

// checkCommon runs the checks every wallet transaction gets after its
// sender is known: nonce, resource bounds, balance, signature. validate
// false skips the signature (an estimate's SKIP_VALIDATE); balance false
// skips the bounds and the balance (estimates do not pay).
func (d *Devnet) checkCommon(u *userTx, want uint64, validate, balance bool) error {
	c := u.common
	if !c.Nonce.IsUint64() || c.Nonce.Uint64() != want {
		return ErrInvalidNonce
	}
	u.nonce = want
	if balance {
		b := &c.ResourceBounds
		if b.L2Gas.MaxAmount < u.l2Gas || b.L1DataGas.MaxAmount < u.data ||
			b.L2Gas.MaxPricePerUnit.CmpUint64(l2GasFri) < 0 || b.L1DataGas.MaxPricePerUnit.CmpUint64(dataGasFri) < 0 {
			return ErrInsufficientBounds
		}
		max := b.MaxFee()
		max.Add(max, uint256.NewInt(c.Tip))
		if max.CmpUint64(d.balance(u.sender)) > 0 {
			return ErrInsufficientFunds
		}
	}
	if validate {
		if len(c.Signature) != 2 || !starknettx.Verify(u.pub, u.hash, c.Signature[0], c.Signature[1]) {
			return specError(codeValidationFailure, "invalid signature: want [r, s] by the account's key over the transaction hash")
		}
	}
	return nil
}

// prepareInvoke checks an INVOKE against the state (and the overlay of an
// estimate).
func (d *Devnet) prepareInvoke(tx *starknettx.Invoke, ov *overlay, validate, balance bool) (*userTx, error) {
	u := &userTx{kind: kindInvoke, hash: tx.Hash(d.chain.chainID), sender: tx.SenderAddress, common: &tx.Common, invoke: tx}
	pub, nonce, deployed, err := d.account(tx.SenderAddress, ov)
	if err != nil {
		return nil, err
	}
	if !deployed {
		return nil, specError(codeValidationFailure, "sender "+starknettx.Hex(&tx.SenderAddress)+" is not deployed: send its DEPLOY_ACCOUNT first")
	}
	u.pub = pub
	calls, err := parseCalls(tx.Calldata)
	if err != nil {
		return nil, specError(codeUnexpected, err.Error())
	}
	for i, c := range calls {
		m, err := d.transferOf(c)
		if err != nil {
			return nil, specError(codeUnexpected, fmt.Sprintf("call %d: %v", i, err))
		}
		if u.spend+m.amount < u.spend {
			return nil, specError(codeUnexpected, fmt.Sprintf("call %d: the transfers add up past 2^64, the devnet's balances", i))
		}
		u.moves = append(u.moves, m)
		u.spend += m.amount
	}
	u.l2Gas, u.data = gasOf(len(calls))
	if err := d.checkCommon(u, nonce, validate, balance); err != nil {
		return nil, err
	}
	if bal := d.balance(u.sender); balance && (u.spend > bal || u.fee() > bal-u.spend) {
		return nil, specError(codeUnexpected, fmt.Sprintf("the transfers (%d) and the fee (%d) exceed the balance (%d); a node would include the transaction as REVERTED", u.spend, u.fee(), d.balance(u.sender)))
	}
	return u, nil
}

// transferOf reads a call the devnet can run: the fee token's transfer of
// an amount that fits the devnet's u64 balances.
func (d *Devnet) transferOf(c call) (transferCall, error) {
	if !c.to.Equal(&tokenAddress) || !c.selector.Equal(&selTransferFn) {
		return transferCall{}, fmt.Errorf("the devnet runs the fee token's transfer only (%s %s), not %s on %s",
			starknettx.Hex(&tokenAddress), starknettx.Hex(&selTransferFn), starknettx.Hex(&c.selector), starknettx.Hex(&c.to))
	}
	if len(c.args) != 3 || !c.args[1].IsUint64() || !c.args[2].IsZero() {
		return transferCall{}, errors.New("transfer wants (recipient, amount as u256 low and high) with an amount below 2^64")
	}
	return transferCall{to: c.args[0], amount: c.args[1].Uint64()}, nil
}

// prepareDeploy checks a DEPLOY_ACCOUNT.
func (d *Devnet) prepareDeploy(tx *starknettx.DeployAccount, ov *overlay, validate, balance bool) (*userTx, error) {
	addr := tx.Address()
	u := &userTx{kind: kindDeployAccount, hash: tx.Hash(d.chain.chainID), sender: addr, common: &tx.Common, deploy: tx}
	if _, ok := d.world.classes[tx.ClassHash.Bytes()]; !ok {
		return nil, ErrClassHashNotFound
	}
	if !tx.ClassHash.Equal(&starknettx.OZAccountClassHash) {
		return nil, specError(codeValidationFailure, "the devnet deploys accounts of the standard class "+starknettx.Hex(&starknettx.OZAccountClassHash)+" only")
	}
	if len(tx.ConstructorCalldata) != 1 {
		return nil, specError(codeValidationFailure, "the account's constructor takes one argument, the public key")
	}
	if _, _, deployed, _ := d.account(addr, ov); deployed {
		return nil, specError(codeValidationFailure, "an account is already deployed at "+starknettx.Hex(&addr))
	}
	u.pub = tx.ConstructorCalldata[0]
	u.l2Gas, u.data = gasOf(1) // OwnerAdded
	if err := d.checkCommon(u, 0, validate, balance); err != nil {
		return nil, err
	}
	return u, nil
}

// duplicate reports whether a transaction with this hash exists.
func (d *Devnet) duplicate(ctx context.Context, h Felt) (bool, error) {
	_, seen, err := d.txBlock(ctx, h)
	return seen, err
}

// apply executes a checked transaction into the pending block. The caller
// holds mu for writing.
func (d *Devnet) apply(u *userTx) *txn {
	c := u.common
	t := &txn{hash: u.hash, kind: u.kind, sender: u.sender, nonce: u.nonce,
		signature: c.Signature, bounds: &c.ResourceBounds, tip: c.Tip}
	w, diff := d.world, d.pending.diff
	switch u.kind {
	case kindInvoke:
		t.calldata = u.invoke.Calldata
		for _, m := range u.moves {
			t.events = append(t.events, d.move(u.sender, m.to, m.amount))
		}
	case kindDeployAccount:
		t.deployed, t.classHash, t.salt, t.calldata = true, u.deploy.ClassHash, u.deploy.ContractAddressSalt, u.deploy.ConstructorCalldata
		w.deploy(diff, u.sender, u.deploy.ClassHash)
		w.setStorage(diff, u.sender, varPublicKey, u.pub)
		t.events = append(t.events, event{from: u.sender, keys: []Felt{selOwnerAdded, u.pub}})
	}
	w.bumpNonce(diff, u.sender)
	t.fee, t.l2Gas, t.dataGas = u.fee(), u.l2Gas, u.data
	t.events = append(t.events, d.move(u.sender, sequencerAddr, t.fee))
	d.pending.txs = append(d.pending.txs, t)
	d.subs.pendingAdded(d.pending.number, []*txn{t})
	return t
}

// decodeTx decodes a broadcasted transaction param, naming bad fields
// under the param's name.
func decodeTx[T any](raw jsontext.Value, pos int, field string, decode func([]byte) (T, error)) (T, error) {
	t, err := decode(raw)
	var fe *starknettx.FieldError
	switch {
	case errors.As(err, &fe):
		name := field
		if fe.Field != "" {
			name += "." + fe.Field
		}
		return t, rpcparams.Errorf(pos, name, "%s", fe.Reason)
	case errors.Is(err, starknettx.ErrUnsupportedVersion):
		return t, ErrUnsupportedVersion
	}
	return t, err
}

func (d *Devnet) rpcAddInvokeTransaction(ctx context.Context, params jsontext.Value) ([]byte, error) {
	p, pos, err := splitParams(params, "invoke_transaction")
	if err != nil {
		return nil, err
	}
	tx, err := decodeTx(p["invoke_transaction"], pos(0), "invoke_transaction", starknettx.DecodeInvoke)
	if err != nil {
		return nil, err
	}
	if tx.Query {
		return nil, ErrUnsupportedVersion // a query version is for estimates only
	}
	// A transaction sent again is a duplicate before its nonce is stale.
	if dup, err := d.duplicate(ctx, tx.Hash(d.chain.chainID)); err != nil || dup {
		return nil, errors.Join(err, errIf(dup, ErrDuplicateTx))
	}
	u, err := d.prepareInvoke(tx, nil, true, true)
	if err != nil {
		return nil, err
	}
	t := d.apply(u)
	out := append([]byte(`{"transaction_hash":`), appendFeltJSON(nil, &t.hash)...)
	return append(out, '}'), nil
}

func (d *Devnet) rpcAddDeployAccountTransaction(ctx context.Context, params jsontext.Value) ([]byte, error) {
	p, pos, err := splitParams(params, "deploy_account_transaction")
	if err != nil {
		return nil, err
	}
	tx, err := decodeTx(p["deploy_account_transaction"], pos(0), "deploy_account_transaction", starknettx.DecodeDeployAccount)
	if err != nil {
		return nil, err
	}
	if tx.Query {
		return nil, ErrUnsupportedVersion
	}
	// A transaction sent again is a duplicate before its nonce is stale.
	if dup, err := d.duplicate(ctx, tx.Hash(d.chain.chainID)); err != nil || dup {
		return nil, errors.Join(err, errIf(dup, ErrDuplicateTx))
	}
	u, err := d.prepareDeploy(tx, nil, true, true)
	if err != nil {
		return nil, err
	}
	t := d.apply(u)
	out := append([]byte(`{"transaction_hash":`), appendFeltJSON(nil, &t.hash)...)
	out = append(out, `,"contract_address":`...)
	out = appendFeltJSON(out, &t.sender)
	return append(out, '}'), nil
}

// errIf returns err when cond holds.
func errIf(cond bool, err error) error {
	if cond {
		return err
	}
	return nil
}
