package starknetdevnet

import "strconv"

// appendTxWithHash renders a TXN_WITH_HASH: the version 3 INVOKE, DECLARE
// or DEPLOY_ACCOUNT as the devnet hashed it (v3Hash over these very
// fields), with an empty signature, no tip, no paymaster and both
// data-availability modes L1.
func appendTxWithHash(b []byte, t *txn) []byte {
	nonce := feltU64(t.nonce)
	b = append(b, `{"transaction_hash":`...)
	b = appendFeltJSON(b, &t.hash)
	b = append(b, `,"type":"`+t.kind+`","version":"0x3","signature":[],"nonce":`...)
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
	// Every devnet transaction declares feesFor()'s bounds, which its hash
	// commits to.
	r := feesFor()
	b = append(b, `,"resource_bounds":{"l1_gas":`...)
	b = appendBound(b, r.l1Amount, r.l1Price)
	b = append(b, `,"l1_data_gas":`...)
	b = appendBound(b, r.dataAmount, r.dataPrice)
	b = append(b, `,"l2_gas":`...)
	b = appendBound(b, r.l2Amount, r.l2Price)
	b = append(b, `},"tip":"0x`...)
	b = strconv.AppendUint(b, r.tip, 16)
	return append(b, `","paymaster_data":[],"nonce_data_availability_mode":"L1","fee_data_availability_mode":"L1"}`...)
}

// appendBound renders a RESOURCE_BOUNDS: a u64 amount and a u128 price,
// as hex.
func appendBound(b []byte, amount, price uint64) []byte {
	b = append(b, `{"max_amount":"0x`...)
	b = strconv.AppendUint(b, amount, 16)
	b = append(b, `","max_price_per_unit":"0x`...)
	b = strconv.AppendUint(b, price, 16)
	return append(b, `"}`...)
}
