package starknetdevnet

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/porticohq/portico/auth/wallet"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// walletFor returns the login wallet of a test secp256k1 key.
func walletFor(t *testing.T, keyHex string) *wallet.Wallet {
	t.Helper()
	b, _ := hex.DecodeString(keyHex)
	w, err := wallet.FromKeys(keyHex, hex.EncodeToString(ed25519.NewKeyFromSeed(b)))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// generous are bounds well above what the devnet charges.
func generous() starknettx.ResourceBounds {
	var r starknettx.ResourceBounds
	r.L2Gas.MaxAmount, r.L1DataGas.MaxAmount = 2_000_000, 1_000
	r.L1Gas.MaxPricePerUnit.SetUint64(l1GasPriceFri)
	r.L2Gas.MaxPricePerUnit.SetUint64(2 * l2GasFri)
	r.L1DataGas.MaxPricePerUnit.SetUint64(2 * dataGasFri)
	return r
}

// transferTx is an unsigned INVOKE of the fee token's transfer.
func transferTx(to starknettx.Felt, amount, nonce uint64, b starknettx.ResourceBounds) *starknettx.Invoke {
	return &starknettx.Invoke{
		Common:   starknettx.Common{Nonce: starknettx.FeltU64(nonce), ResourceBounds: b},
		Calldata: []Felt{starknettx.FeltU64(1), tokenAddress, selTransferFn, starknettx.FeltU64(3), to, starknettx.FeltU64(amount), {}},
	}
}

// send posts a signed transaction and returns the result or error.
func send(c *client, tx any) (json.RawMessage, *rpcError) {
	c.t.Helper()
	raw, _ := json.Marshal(tx)
	switch tx.(type) {
	case *starknettx.Invoke:
		return c.call("starknet_addInvokeTransaction", `{"invoke_transaction":`+string(raw)+`}`)
	default:
		return c.call("starknet_addDeployAccountTransaction", `[`+string(raw)+`]`)
	}
}

func balanceOf(t *testing.T, c *client, acct Felt, block string) uint64 {
	t.Helper()
	res := decodeJSON[[]string](t, c.must("starknet_call", `{"request":{"contract_address":"`+starknettx.Hex(&tokenAddress)+
		`","entry_point_selector":"`+starknettx.Hex(&selBalanceOf)+`","calldata":["`+starknettx.Hex(&acct)+`"]},"block_id":`+block+`}`))
	f, _ := starknettx.ParseFelt(res[0])
	return f.Uint64()
}

// A wallet's account is funded by the faucet, deployed and sends a
// transfer; every step is checked as a sequencer checks it, and the
// results match the spec's schemas.
func TestWriteAPI(t *testing.T) {
	spec := loadSpec(t)
	d, c := startDevnet(t, Config{})
	chain := d.chain.chainID
	faucet, err := wallet.NewStarknetAccount(FaucetKey())
	if err != nil {
		t.Fatal(err)
	}
	user := walletFor(t, "0baddffe9bb7b9eb22a9cc6fbb5ba0b62e8c40a86a4e36edd3db0bc0bce3f6e4").Starknet
	poor := walletFor(t, "1111111111111111111111111111111111111111111111111111111111111111").Starknet
	addr, faucetAddr := user.Address(), faucet.Address()
	if faucetAddr != FaucetAddress() {
		t.Fatal("the faucet's key is not its account's")
	}
	check := func(method string, res json.RawMessage) json.RawMessage {
		t.Helper()
		spec.validate(t, method, res)
		return res
	}
	wantErr := func(what string, e *rpcError, code int, data string) {
		t.Helper()
		if e == nil || e.Code != code || !strings.Contains(string(e.Data), data) {
			t.Errorf("%s: %v %s, want code %d with %q", what, e, e.dataOr(), code, data)
		}
	}

	// The faucet funds the user: a signed transfer.
	fund := transferTx(addr, 1_000_000_000_000_000, 0, generous())
	if err := faucet.SignInvoke(fund, chain); err != nil {
		t.Fatal(err)
	}
	res, e := send(c, fund)
	if e != nil {
		t.Fatal(e)
	}
	_ = decodeJSON[struct{ Hash string }](t, res) // the write API's schemas are not in testdata
	if got := balanceOf(t, c, addr, `"pending"`); got != 1_000_000_000_000_000 {
		t.Fatalf("funded balance %d", got)
	}
	if got := balanceOf(t, c, addr, `"latest"`); got != 0 {
		t.Fatalf("latest balance before sealing %d", got)
	}
	// Sent again: a duplicate; the same nonce in another transaction: 52.
	_, e = send(c, fund)
	wantErr("replayed transaction", e, 59, "")
	again := transferTx(addr, 5, 0, generous())
	faucet.SignInvoke(again, chain)
	_, e = send(c, again)
	wantErr("replayed nonce", e, 52, "")

	// The user's account is not deployed yet: invoking fails validation.
	early := transferTx(faucetAddr, 1, 0, generous())
	user.SignInvoke(early, chain)
	_, e = send(c, early)
	wantErr("invoke before deploy", e, 55, "not deployed")
	if _, e := c.call("starknet_getNonce", `["pending","`+starknettx.Hex(&addr)+`"]`); e == nil || e.Code != 20 {
		t.Errorf("nonce of an undeployed account: %v", e)
	}

	// Estimate the deploy and the transfer after it, then deploy.
	deploy := user.DeployAccount(starknettx.ResourceBounds{})
	deploy.Query = true
	user.SignDeployAccount(deploy, chain)
	next := transferTx(faucetAddr, 0, 1, starknettx.ResourceBounds{})
	next.Query = true
	user.SignInvoke(next, chain)
	dj, _ := json.Marshal(deploy)
	nj, _ := json.Marshal(next)
	est := check("starknet_estimateFee", c.must("starknet_estimateFee", `{"request":[`+string(dj)+`,`+string(nj)+`],"simulation_flags":[],"block_id":"pending"}`))
	fees := decodeJSON[[]struct {
		Overall string `json:"overall_fee"`
	}](t, est)
	if len(fees) != 2 {
		t.Fatalf("estimates %s", est)
	}
	// A bad signature in an estimate is an execution error naming the index.
	next.Signature[0] = starknettx.FeltU64(1)
	nj, _ = json.Marshal(next)
	_, e = c.call("starknet_estimateFee", `[[`+string(dj)+`,`+string(nj)+`],[],"pending"]`)
	wantErr("estimate with a bad signature", e, 41, `"transaction_index":1`)
	// SKIP_VALIDATE skips it.
	c.must("starknet_estimateFee", `[[`+string(dj)+`,`+string(nj)+`],["SKIP_VALIDATE"],"pending"]`)

	deploy = user.DeployAccount(generous())
	deploy.Common.ResourceBounds.L2Gas.MaxAmount = 100 // below what it uses
	user.SignDeployAccount(deploy, chain)
	_, e = send(c, deploy)
	wantErr("bounds too low", e, 53, "")
	deploy = user.DeployAccount(generous())
	deploy.Common.Signature = nil
	user.SignDeployAccount(deploy, chain)
	deploy.Signature[1] = starknettx.FeltU64(12345)
	_, e = send(c, deploy)
	wantErr("bad deploy signature", e, 55, "invalid signature")
	user.SignDeployAccount(deploy, chain)
	res, e = send(c, deploy)
	if e != nil {
		t.Fatal(e)
	}
	dres := decodeJSON[struct {
		Hash    string `json:"transaction_hash"`
		Address string `json:"contract_address"`
	}](t, res)
	if dres.Address != starknettx.Hex(&addr) {
		t.Fatalf("deployed at %s, want %s", dres.Address, starknettx.Hex(&addr))
	}
	if n := decodeJSON[string](t, check("starknet_getNonce", c.must("starknet_getNonce", `{"block_id":"pending","contract_address":"`+starknettx.Hex(&addr)+`"}`))); n != "0x1" {
		t.Fatalf("nonce after deploy %s", n)
	}

	// The transfer: balances move by exactly the amount and the fee.
	before, faucetBefore := balanceOf(t, c, addr, `"pending"`), balanceOf(t, c, faucetAddr, `"pending"`)
	pay := transferTx(faucetAddr, 777, 1, generous())
	user.SignInvoke(pay, chain)
	bad := *pay
	bad.Signature = []Felt{pay.Signature[1], pay.Signature[0]}
	_, e = send(c, &bad)
	wantErr("swapped signature", e, 55, "invalid signature")
	res, e = send(c, pay)
	if e != nil {
		t.Fatal(e)
	}
	hash := decodeJSON[struct {
		Hash string `json:"transaction_hash"`
	}](t, res).Hash
	if want := pay.Hash(chain); hash != starknettx.Hex(&want) {
		t.Fatalf("hash %s, want %s", hash, starknettx.Hex(&want))
	}
	rc := decodeJSON[struct {
		Fee struct {
			Amount string `json:"amount"`
		} `json:"actual_fee"`
		Events []struct {
			Keys []string `json:"keys"`
			Data []string `json:"data"`
		} `json:"events"`
	}](t, c.must("starknet_getTransactionReceipt", `["`+hash+`"]`))
	fee, _ := starknettx.ParseFelt(rc.Fee.Amount)
	if got := balanceOf(t, c, addr, `"pending"`); got != before-777-fee.Uint64() {
		t.Errorf("sender balance %d, want %d − 777 − fee %d", got, before, fee.Uint64())
	}
	if got := balanceOf(t, c, faucetAddr, `"pending"`); got != faucetBefore+777 {
		t.Errorf("recipient balance %d, want %d + 777", got, faucetBefore)
	}
	if fee.Uint64() != decodeFeltHex(t, fees[1].Overall) {
		t.Errorf("fee %d, estimated %s", fee.Uint64(), fees[1].Overall)
	}
	if len(rc.Events) != 2 || rc.Events[0].Keys[0] != starknettx.Hex(&selTransfer) || rc.Events[0].Data[0] != "0x309" {
		t.Errorf("events %+v", rc.Events)
	}
	st := check("starknet_getTransactionStatus", c.must("starknet_getTransactionStatus", `{"transaction_hash":"`+hash+`"}`))
	if !strings.Contains(string(st), "ACCEPTED_ON_L2") {
		t.Errorf("status %s", st)
	}
	if _, err := d.SealBlock(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := balanceOf(t, c, addr, `"latest"`); got != before-777-fee.Uint64() {
		t.Errorf("latest balance after sealing %d", got)
	}
	check("starknet_getNonce", c.must("starknet_getNonce", `["latest","`+starknettx.Hex(&addr)+`"]`))
	if _, e := c.call("starknet_getTransactionStatus", `["0x123"]`); e == nil || e.Code != 29 {
		t.Errorf("unknown status: %v", e)
	}

	// An unfunded account cannot deploy.
	pd := poor.DeployAccount(generous())
	poor.SignDeployAccount(pd, chain)
	_, e = send(c, pd)
	wantErr("unfunded deploy", e, 54, "")

	// Versions other than 3, and query versions, are refused on add.
	q := transferTx(faucetAddr, 1, 2, generous())
	q.Query = true
	user.SignInvoke(q, chain)
	_, e = send(c, q)
	wantErr("query version on add", e, 61, "")
	raw, _ := json.Marshal(pay)
	_, e = c.call("starknet_addInvokeTransaction", `[`+strings.Replace(string(raw), `"version":"0x3"`, `"version":"0x1"`, 1)+`]`)
	wantErr("version 1", e, 61, "")
	_, e = c.call("starknet_addInvokeTransaction", `[`+strings.Replace(string(raw), `"nonce":"0x1"`, `"nonce":"one"`, 1)+`]`)
	if e == nil || e.Code != -32602 || !strings.Contains(e.Message, "invoke_transaction.nonce") {
		t.Errorf("bad nonce field: %v", e)
	}

	// call's errors.
	if _, e := c.call("starknet_call", `[{"contract_address":"0x999","entry_point_selector":"0x1","calldata":[]},"pending"]`); e == nil || e.Code != 20 {
		t.Errorf("call of an unknown contract: %v", e)
	}
	if _, e := c.call("starknet_call", `[{"contract_address":"`+starknettx.Hex(&tokenAddress)+`","entry_point_selector":"0x1","calldata":[]},"latest"]`); e == nil || e.Code != 21 {
		t.Errorf("call of an unknown entry point: %v", e)
	}
	if _, e := c.call("starknet_getNonce", `[{"block_number":0},"`+starknettx.Hex(&addr)+`"]`); e == nil || e.Code != -32602 || !strings.Contains(e.Message, "block_id") {
		t.Errorf("nonce at an old block: %v", e)
	}
	if pk := decodeJSON[[]string](t, c.must("starknet_call", `[{"contract_address":"`+starknettx.Hex(&addr)+`","entry_point_selector":"`+starknettx.Hex(&selGetPublicKey)+`","calldata":[]},"latest"]`)); len(pk) != 1 {
		t.Errorf("public key %v", pk)
	} else if pub := user.PublicKey(); pk[0] != starknettx.Hex(&pub) {
		t.Errorf("public key %s, want %s", pk[0], starknettx.Hex(&pub))
	}
}

func decodeFeltHex(t *testing.T, s string) uint64 {
	t.Helper()
	f, err := starknettx.ParseFelt(s)
	if err != nil {
		t.Fatal(err)
	}
	return f.Uint64()
}

func (e *rpcError) dataOr() string {
	if e == nil {
		return ""
	}
	return string(e.Data)
}

// Transfers whose amounts add up past 2^64 are refused, not wrapped
// around the balance check.
func TestWriteAPIOverflow(t *testing.T) {
	d, c := startDevnet(t, Config{})
	chain := d.chain.chainID
	faucet, _ := wallet.NewStarknetAccount(FaucetKey())
	half := starknettx.FeltU64(1 << 63)
	tx := &starknettx.Invoke{Common: starknettx.Common{Nonce: starknettx.FeltU64(0), ResourceBounds: generous()},
		Calldata: []Felt{starknettx.FeltU64(2),
			tokenAddress, selTransferFn, starknettx.FeltU64(3), starknettx.FeltU64(0xabc), half, {},
			tokenAddress, selTransferFn, starknettx.FeltU64(3), starknettx.FeltU64(0xabc), half, {}}}
	if err := faucet.SignInvoke(tx, chain); err != nil {
		t.Fatal(err)
	}
	before := balanceOf(t, c, faucet.Address(), `"pending"`)
	if _, e := send(c, tx); e == nil || e.Code != 63 {
		t.Fatalf("2 × 2^63: %v", e)
	}
	if got := balanceOf(t, c, faucet.Address(), `"pending"`); got != before {
		t.Fatalf("balance %d, was %d", got, before)
	}
}
