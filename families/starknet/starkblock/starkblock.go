// Package starkblock is a Starknet block header and its hash: the fields
// the hash commits to, read from a node's JSON header (spec 0.10 carries
// the commitments and counts the hash needs) and hashed with the layout of
// the block's protocol version. The rollup devnet hashes its blocks with
// it and the gateway's verifier recomputes a node's block hashes with it,
// so one layout serves both.
//
// Layouts (Poseidon over the listed felts):
//
//   - 0.13.2 and 0.13.3: "STARKNET_BLOCK_HASH0", number, state root,
//     sequencer, timestamp, counts, state-diff, transaction, event and
//     receipt commitments, L1 gas price in wei and fri, L1 data gas price
//     in wei and fri, version, 0, parent hash;
//   - 0.13.4 and later: "STARKNET_BLOCK_HASH1", the same up to the
//     receipt commitment, then the gas prices' hash
//     (Poseidon("STARKNET_GAS_PRICES0", L1 wei, L1 fri, L1 data wei,
//     L1 data fri, L2 wei, L2 fri)), version, 0, parent hash.
//
// Older blocks were hashed with Pedersen over fields the RPC header does
// not carry; Hash refuses them with ErrVersion.
package starkblock

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/porticohq/portico/families/starknet/starkhash"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// Felt is a Stark field element.
type Felt = starkhash.Felt

// Price is a resource's price in wei and in fri.
type Price struct {
	Wei, Fri Felt
}

// Header is what a block's hash commits to.
type Header struct {
	Number              uint64
	StateRoot           Felt // new_root
	Sequencer           Felt
	Timestamp           uint64
	TxCount             uint64
	EventCount          uint64
	StateDiffLength     uint64
	Blob                bool // l1_da_mode BLOB (else CALLDATA)
	StateDiffCommitment Felt
	TxCommitment        Felt
	EventCommitment     Felt
	ReceiptCommitment   Felt
	L1Gas, L1DataGas    Price
	L2Gas               Price
	Version             string // starknet_version, "0.13.4"
	Parent              Felt
}

// ErrVersion is returned for a block whose protocol version's hash layout
// Hash does not know (before 0.13.2, or unreadable).
var ErrVersion = errors.New("starkblock: no Poseidon block hash layout for this starknet_version")

// Hash computes the block's hash from its fields.
func (h *Header) Hash() (Felt, error) {
	v, ok := parseVersion(h.Version)
	if !ok || less(v, [4]int{0, 13, 2}) {
		return Felt{}, fmt.Errorf("%w: %q", ErrVersion, h.Version)
	}
	head := []Felt{{}, u64(h.Number), h.StateRoot, h.Sequencer, u64(h.Timestamp),
		ConcatCounts(h.TxCount, h.EventCount, h.StateDiffLength, h.Blob),
		h.StateDiffCommitment, h.TxCommitment, h.EventCommitment, h.ReceiptCommitment}
	var vals []Felt
	if less(v, [4]int{0, 13, 4}) {
		head[0] = starkhash.ShortString("STARKNET_BLOCK_HASH0")
		vals = append(head, h.L1Gas.Wei, h.L1Gas.Fri, h.L1DataGas.Wei, h.L1DataGas.Fri)
	} else {
		head[0] = starkhash.ShortString("STARKNET_BLOCK_HASH1")
		vals = append(head, GasPricesHash(h.L1Gas, h.L1DataGas, h.L2Gas))
	}
	vals = append(vals, starkhash.ShortString(h.Version), Felt{}, h.Parent)
	return starkhash.PoseidonMany(vals...), nil
}

// GasPricesHash is the gas prices' hash of the 0.13.4 layout.
func GasPricesHash(l1, l1Data, l2 Price) Felt {
	return starkhash.PoseidonMany(starkhash.ShortString("STARKNET_GAS_PRICES0"),
		l1.Wei, l1.Fri, l1Data.Wei, l1Data.Fri, l2.Wei, l2.Fri)
}

// ConcatCounts is transaction count ‖ event count ‖ state-diff length ‖
// the DA mode bit followed by 63 zero bits, 64 bits each.
func ConcatCounts(txs, events, diffLen uint64, blob bool) Felt {
	var b [32]byte
	put := func(off int, v uint64) {
		for i := range 8 {
			b[off+7-i] = byte(v >> (8 * i))
		}
	}
	put(0, txs)
	put(8, events)
	put(16, diffLen)
	if blob {
		b[24] = 0x80
	}
	var f Felt
	f.SetBytes(b[:])
	return f
}

func u64(v uint64) Felt {
	var f Felt
	f.SetUint64(v)
	return f
}

// parseVersion reads "0.13.2" or "0.13.2.1" into four numbers.
func parseVersion(s string) ([4]int, bool) {
	var v [4]int
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func less(a, b [4]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// FieldError names a header field that is missing or unreadable.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return "block header." + e.Field + ": " + e.Reason }

// Decode reads a node's block header JSON (BLOCK_HEADER, or a block that
// carries its fields: BLOCK_WITH_TX_HASHES and the others) and returns
// the header and the hash the node claims for it. Every field the hash
// needs must be there: a header without the spec 0.10 commitments and
// counts gives a *FieldError naming the first one missing, and a field
// that does not read gives one naming it.
func Decode(raw []byte) (*Header, Felt, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, Felt{}, &FieldError{Field: "(header)", Reason: err.Error()}
	}
	var (
		h              Header
		hash           feltJSON
		l1, l2, l1Data priceJSON
		daMode         string
	)
	fields := []struct {
		name string
		into any
	}{
		{"block_hash", &hash},
		{"parent_hash", (*feltJSON)(&h.Parent)},
		{"block_number", &h.Number},
		{"new_root", (*feltJSON)(&h.StateRoot)},
		{"timestamp", &h.Timestamp},
		{"sequencer_address", (*feltJSON)(&h.Sequencer)},
		{"l1_gas_price", &l1},
		{"l2_gas_price", &l2},
		{"l1_data_gas_price", &l1Data},
		{"l1_da_mode", &daMode},
		{"starknet_version", &h.Version},
		{"event_commitment", (*feltJSON)(&h.EventCommitment)},
		{"transaction_commitment", (*feltJSON)(&h.TxCommitment)},
		{"receipt_commitment", (*feltJSON)(&h.ReceiptCommitment)},
		{"state_diff_commitment", (*feltJSON)(&h.StateDiffCommitment)},
		{"event_count", &h.EventCount},
		{"transaction_count", &h.TxCount},
		{"state_diff_length", &h.StateDiffLength},
	}
	for _, f := range fields {
		v, ok := m[f.name]
		if !ok || string(v) == "null" {
			return nil, Felt{}, &FieldError{Field: f.name, Reason: "is missing"}
		}
		if err := json.Unmarshal(v, f.into); err != nil {
			return nil, Felt{}, &FieldError{Field: f.name, Reason: err.Error()}
		}
	}
	for _, p := range []struct {
		name string
		p    *priceJSON
		into *Price
	}{{"l1_gas_price", &l1, &h.L1Gas}, {"l2_gas_price", &l2, &h.L2Gas}, {"l1_data_gas_price", &l1Data, &h.L1DataGas}} {
		if p.p.Wei == nil || p.p.Fri == nil {
			return nil, Felt{}, &FieldError{Field: p.name, Reason: "price_in_wei or price_in_fri is missing"}
		}
		*p.into = Price{Wei: Felt(*p.p.Wei), Fri: Felt(*p.p.Fri)}
	}
	switch daMode {
	case "BLOB":
		h.Blob = true
	case "CALLDATA":
	default:
		return nil, Felt{}, &FieldError{Field: "l1_da_mode", Reason: fmt.Sprintf("want BLOB or CALLDATA, got %q", daMode)}
	}
	return &h, Felt(hash), nil
}

type priceJSON struct {
	Wei *feltJSON `json:"price_in_wei"`
	Fri *feltJSON `json:"price_in_fri"`
}

// feltJSON is a FELT: 0x and at most 64 hex digits below the prime.
type feltJSON Felt

func (f *feltJSON) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := starknettx.ParseFelt(s)
	if err != nil {
		return fmt.Errorf("felt %q: %w", s, err)
	}
	*f = feltJSON(v)
	return nil
}
