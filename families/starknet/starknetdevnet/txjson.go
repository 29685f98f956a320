package starknetdevnet

import (
	"strconv"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// appendTxWithHash renders a TXN_WITH_HASH: the version 3 INVOKE, DECLARE
// or DEPLOY_ACCOUNT as the devnet hashed it (v3Hash over these very
// fields), with an empty signature, no tip, no paymaster and both
// data-availability modes L1.
func appendTxWithHash(b []byte, t *txn) []byte {
	nonce := starknettx.FeltU64(t.nonce)
	b = append(b, `{"transaction_hash":`...)
	b = appendFeltJSON(b, &t.hash)
	b = append(b, `,"type":"`+t.kind+`","version":"0x3","signature":`...)
	b = appendFeltArray(b, t.signature)
	b = append(b, `,"nonce":`...)
	b = appendFeltJSON(b, &nonce)
	switch t.kind {
	case kindInvoke:
		b = append(b, `,"sender_address":`...)
		b = appendFeltJSON(b, &t.sender)
		b = append(b, `,"calldata":`...)
		b = appendFeltArray(b, t.calldata)
		b = append(b, `,"account_deployment_data":[]`...)
	case kindDeclare:
		b = append(b, `,"sender_address":`...)
		b = appendFeltJSON(b, &t.sender)
		b = append(b, `,"class_hash":`...)
		b = appendFeltJSON(b, &t.classHash)
		b = append(b, `,"compiled_class_hash":`...)
		b = appendFeltJSON(b, &t.compiled)
		b = append(b, `,"account_deployment_data":[]`...)
	case kindDeployAccount:
		b = append(b, `,"contract_address_salt":`...)
		b = appendFeltJSON(b, &t.salt)
		b = append(b, `,"constructor_calldata":`...)
		b = appendFeltArray(b, t.calldata)
		b = append(b, `,"class_hash":`...)
		b = appendFeltJSON(b, &t.classHash)
	}
	// Traffic declares feesFor()'s bounds, which its hash commits to; a
	// wallet's transaction, what it signed.
	r := feesFor()
	l1, data, l2 := boundJSON(r.l1Amount, r.l1Price), boundJSON(r.dataAmount, r.dataPrice), boundJSON(r.l2Amount, r.l2Price)
	tip := r.tip
	if rb := t.bounds; rb != nil {
		l1, data, l2 = userBoundJSON(&rb.L1Gas), userBoundJSON(&rb.L1DataGas), userBoundJSON(&rb.L2Gas)
		tip = t.tip
	}
	b = append(b, `,"resource_bounds":{"l1_gas":`...)
	b = append(b, l1...)
	b = append(b, `,"l1_data_gas":`...)
	b = append(b, data...)
	b = append(b, `,"l2_gas":`...)
	b = append(b, l2...)
	b = append(b, `},"tip":"0x`...)
	b = strconv.AppendUint(b, tip, 16)
	return append(b, `","paymaster_data":[],"nonce_data_availability_mode":"L1","fee_data_availability_mode":"L1"}`...)
}

// boundJSON renders a RESOURCE_BOUNDS: a u64 amount and a u128 price,
// as hex.
func boundJSON(amount, price uint64) []byte {
	b := append([]byte(`{"max_amount":"0x`), strconv.FormatUint(amount, 16)...)
	b = append(b, `","max_price_per_unit":"0x`...)
	b = strconv.AppendUint(b, price, 16)
	return append(b, `"}`...)
}

// userBoundJSON renders a wallet transaction's bound.
func userBoundJSON(r *starknettx.ResourceBound) []byte {
	b := append([]byte(`{"max_amount":"0x`), strconv.FormatUint(r.MaxAmount, 16)...)
	b = append(b, `","max_price_per_unit":"`...)
	b = append(b, r.MaxPricePerUnit.Hex()...)
	return append(b, `"}`...)
}
