package starknetdevnet

import (
	"slices"
	"strconv"

	"github.com/porticohq/portico/families/starknet/starkblock"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// Block header constants. Gas prices are fixed: the devnet has no market.
const (
	starknetVersion = "0.13.4"
	l1GasPriceWei   = 1_000_000_000
	l1GasPriceFri   = 2_000_000_000
	dataGasWei      = 1_000
	dataGasFri      = 2_000
	l2GasWei        = 10_000
	l2GasFri        = 20_000
)

// pendingBlock is the block being built.
type pendingBlock struct {
	number    uint64
	timestamp uint64
	parent    Felt
	oldRoot   Felt
	txs       []*txn
	diff      *stateDiff
}

// commitments are a sealed block's counts and commitments: what its hash
// commits to besides the row's own fields, stored with the block and sent
// in its header (the spec 0.10 members).
type commitments struct {
	txCount, eventCount, diffLength uint64
	tx, event, receipt, stateDiff   Felt
}

// blockCommitments computes a block's commitments from its transactions
// and state diff. The transaction, event and receipt commitments are
// height-64 Poseidon tries keyed by index (see docs/starknet-devnet.md for
// what the devnet simplifies in their leaves).
func blockCommitments(txs []*txn, diff *stateDiff) commitments {
	var txLeaves, evLeaves, rcLeaves []Felt
	zero := Felt{}
	for _, t := range txs {
		txLeaves = append(txLeaves, poseidonMany(t.hash, zero)) // hash and an empty signature
		for _, e := range t.events {
			evLeaves = append(evLeaves, eventLeaf(&t.hash, &e))
		}
		rcLeaves = append(rcLeaves, receiptLeaf(t))
	}
	return commitments{
		txCount: uint64(len(txs)), eventCount: uint64(len(evLeaves)), diffLength: uint64(diff.length()),
		tx: indexedRoot(txLeaves, poseidon), event: indexedRoot(evLeaves, poseidon),
		receipt: indexedRoot(rcLeaves, poseidon), stateDiff: stateDiffCommitment(diff),
	}
}

// eventLeaf is an event's leaf in the event commitment: Poseidon over the
// emitter, the transaction hash, and the keys and data, each prefixed by
// its length.
func eventLeaf(txHash *Felt, e *event) Felt {
	vals := []Felt{e.from, *txHash, starknettx.FeltU64(uint64(len(e.keys)))}
	vals = append(vals, e.keys...)
	vals = append(vals, starknettx.FeltU64(uint64(len(e.data))))
	vals = append(vals, e.data...)
	return poseidonMany(vals...)
}

// receiptLeaf is a receipt's leaf in the receipt commitment.
func receiptLeaf(t *txn) Felt {
	return poseidonMany(t.hash, starknettx.FeltU64(t.fee), poseidonMany(), Felt{},
		starknettx.FeltU64(0), starknettx.FeltU64(t.l1Gas), starknettx.FeltU64(t.dataGas), starknettx.FeltU64(t.l2Gas))
}

// header is the block's starkblock.Header: the row, its commitments and
// the devnet's fixed sequencer, gas prices, data-availability mode and
// version.
func (r *blockRow) header() *starkblock.Header {
	price := func(wei, fri uint64) starkblock.Price {
		return starkblock.Price{Wei: starknettx.FeltU64(wei), Fri: starknettx.FeltU64(fri)}
	}
	c := &r.commit
	return &starkblock.Header{
		Number: r.number, StateRoot: r.newRoot, Sequencer: sequencerAddr, Timestamp: r.timestamp,
		TxCount: c.txCount, EventCount: c.eventCount, StateDiffLength: c.diffLength, Blob: true,
		StateDiffCommitment: c.stateDiff, TxCommitment: c.tx, EventCommitment: c.event, ReceiptCommitment: c.receipt,
		L1Gas: price(l1GasPriceWei, l1GasPriceFri), L1DataGas: price(dataGasWei, dataGasFri), L2Gas: price(l2GasWei, l2GasFri),
		Version: starknetVersion, Parent: r.parent,
	}
}

// blockHash is the block's hash with Starknet's layout for its version
// (package starkblock): for the devnet's 0.13.4, Poseidon over
// "STARKNET_BLOCK_HASH1", the number, state root, sequencer, timestamp,
// packed counts, the state-diff, transaction, event and receipt
// commitments, the gas prices' hash, the version, 0 and the parent's hash.
func blockHash(r *blockRow) (Felt, error) {
	return r.header().Hash()
}

// stateDiffCommitment hashes the diff as Starknet's state-diff commitment
// lays it out: deployed and replaced contracts, declared classes,
// deprecated classes, then per contract its storage and nonce, each group
// sorted and prefixed by its length.
func stateDiffCommitment(d *stateDiff) Felt {
	v := []Felt{starknettx.ShortString("STARKNET_STATE_DIFF0")}
	classes := map[[32]byte]Felt{}
	for _, dc := range d.deployed {
		classes[dc[0].Bytes()] = dc[1]
	}
	for _, rc := range d.replaced {
		classes[rc[0].Bytes()] = rc[1]
	}
	v = append(v, starknettx.FeltU64(uint64(len(classes))))
	for _, a := range sortedKeys(classes) {
		v = append(v, feltFromKey(a[:]), classes[a])
	}
	declared := slices.Clone(d.declared)
	slices.SortFunc(declared, func(x, y [2]Felt) int { return x[0].Cmp(&y[0]) })
	v = append(v, starknettx.FeltU64(uint64(len(declared))))
	for _, dc := range declared {
		v = append(v, dc[0], dc[1])
	}
	legacy := slices.Clone(d.legacy)
	slices.SortFunc(legacy, func(x, y Felt) int { return x.Cmp(&y) })
	v = append(v, starknettx.FeltU64(uint64(len(legacy))))
	v = append(v, legacy...)
	v = append(v, starknettx.FeltU64(1), Felt{})
	touched := map[[32]byte]bool{}
	for a := range d.storage {
		touched[a] = true
	}
	for a := range d.nonces {
		touched[a] = true
	}
	v = append(v, starknettx.FeltU64(uint64(len(touched))))
	for _, a := range sortedKeys(touched) {
		v = append(v, feltFromKey(a[:]), starknettx.FeltU64(d.nonces[a]))
		slots := d.storage[a]
		v = append(v, starknettx.FeltU64(uint64(len(slots))))
		for _, k := range sortedKeys(slots) {
			v = append(v, feltFromKey(k[:]), slots[k])
		}
	}
	return poseidonMany(v...)
}

// appendStateDiff renders a STATE_DIFF. Entries are sorted so the output
// is stable.
func appendStateDiff(b []byte, d *stateDiff) []byte {
	b = append(b, `{"storage_diffs":[`...)
	for i, a := range sortedKeys(d.storage) {
		if i > 0 {
			b = append(b, ',')
		}
		addr := feltFromKey(a[:])
		b = append(b, `{"address":`...)
		b = appendFeltJSON(b, &addr)
		b = append(b, `,"storage_entries":[`...)
		slots := d.storage[a]
		for j, k := range sortedKeys(slots) {
			if j > 0 {
				b = append(b, ',')
			}
			key, val := feltFromKey(k[:]), slots[k]
			b = append(b, `{"key":`...)
			b = appendFeltJSON(b, &key)
			b = append(b, `,"value":`...)
			b = appendFeltJSON(b, &val)
			b = append(b, '}')
		}
		b = append(b, "]}"...)
	}
	b = append(b, `],"deprecated_declared_classes":[`...)
	for i := range d.legacy {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFeltJSON(b, &d.legacy[i])
	}
	b = append(b, `],"declared_classes":[`...)
	b = appendPairs(b, d.declared, "class_hash", "compiled_class_hash")
	b = append(b, `],"deployed_contracts":[`...)
	b = appendPairs(b, d.deployed, "address", "class_hash")
	b = append(b, `],"replaced_classes":[`...)
	b = appendPairs(b, d.replaced, "contract_address", "class_hash")
	b = append(b, `],"nonces":[`...)
	for i, a := range sortedKeys(d.nonces) {
		if i > 0 {
			b = append(b, ',')
		}
		addr, n := feltFromKey(a[:]), starknettx.FeltU64(d.nonces[a])
		b = append(b, `{"contract_address":`...)
		b = appendFeltJSON(b, &addr)
		b = append(b, `,"nonce":`...)
		b = appendFeltJSON(b, &n)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func appendPairs(b []byte, pairs [][2]Felt, first, second string) []byte {
	for i := range pairs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"`...)
		b = append(b, first...)
		b = append(b, `":`...)
		b = appendFeltJSON(b, &pairs[i][0])
		b = append(b, `,"`...)
		b = append(b, second...)
		b = append(b, `":`...)
		b = appendFeltJSON(b, &pairs[i][1])
		b = append(b, '}')
	}
	return b
}

// appendFeltArray renders felts as a JSON array.
func appendFeltArray(b []byte, fs []Felt) []byte {
	b = append(b, '[')
	for i := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendFeltJSON(b, &fs[i])
	}
	return append(b, ']')
}

// appendEvent renders an EVENT's from_address, keys and data members,
// without braces.
func appendEventBody(b []byte, e *event) []byte {
	b = append(b, `"from_address":`...)
	b = appendFeltJSON(b, &e.from)
	b = append(b, `,"keys":`...)
	b = appendFeltArray(b, e.keys)
	b = append(b, `,"data":`...)
	return appendFeltArray(b, e.data)
}

// appendUint appends a decimal JSON number.
func appendUint(b []byte, v uint64) []byte { return strconv.AppendUint(b, v, 10) }

// resourcePrice renders a RESOURCE_PRICE.
func appendPrice(b []byte, wei, fri uint64) []byte {
	w, f := starknettx.FeltU64(wei), starknettx.FeltU64(fri)
	b = append(b, `{"price_in_fri":`...)
	b = appendFeltJSON(b, &f)
	b = append(b, `,"price_in_wei":`...)
	b = appendFeltJSON(b, &w)
	return append(b, '}')
}

// appendHeaderTail renders the header members shared by sealed and pending
// blocks.
func appendHeaderTail(b []byte, timestamp uint64) []byte {
	b = append(b, `,"timestamp":`...)
	b = appendUint(b, timestamp)
	b = append(b, `,"sequencer_address":`...)
	b = appendFeltJSON(b, &sequencerAddr)
	b = append(b, `,"l1_gas_price":`...)
	b = appendPrice(b, l1GasPriceWei, l1GasPriceFri)
	b = append(b, `,"l2_gas_price":`...)
	b = appendPrice(b, l2GasWei, l2GasFri)
	b = append(b, `,"l1_data_gas_price":`...)
	b = appendPrice(b, dataGasWei, dataGasFri)
	b = append(b, `,"l1_da_mode":"BLOB","starknet_version":"`+starknetVersion+`"`...)
	return b
}

// appendSealedHeader renders a sealed block's BLOCK_HEADER members,
// without braces: the spec 0.8 members and, after them, the spec 0.10
// commitments and counts its hash needs.
func appendSealedHeader(b []byte, r *blockRow) []byte {
	b = append(b, `"block_hash":`...)
	b = appendFeltJSON(b, &r.hash)
	b = append(b, `,"parent_hash":`...)
	b = appendFeltJSON(b, &r.parent)
	b = append(b, `,"block_number":`...)
	b = appendUint(b, r.number)
	b = append(b, `,"new_root":`...)
	b = appendFeltJSON(b, &r.newRoot)
	b = appendHeaderTail(b, r.timestamp)
	c := &r.commit
	b = append(b, `,"event_commitment":`...)
	b = appendFeltJSON(b, &c.event)
	b = append(b, `,"transaction_commitment":`...)
	b = appendFeltJSON(b, &c.tx)
	b = append(b, `,"receipt_commitment":`...)
	b = appendFeltJSON(b, &c.receipt)
	b = append(b, `,"state_diff_commitment":`...)
	b = appendFeltJSON(b, &c.stateDiff)
	b = append(b, `,"event_count":`...)
	b = appendUint(b, c.eventCount)
	b = append(b, `,"transaction_count":`...)
	b = appendUint(b, c.txCount)
	b = append(b, `,"state_diff_length":`...)
	return appendUint(b, c.diffLength)
}
