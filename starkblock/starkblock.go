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

	"github.com/porticohq/portico/starkhash"
	"github.com/porticohq/portico/starknettx"
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
// counts gives a *FieldError naming the first one missing.
func Decode(raw []byte) (*Header, Felt, error) {
	var j struct {
		BlockHash           *feltJSON  `json:"block_hash"`
		ParentHash          *feltJSON  `json:"parent_hash"`
		BlockNumber         *uint64    `json:"block_number"`
		NewRoot             *feltJSON  `json:"new_root"`
		Timestamp           *uint64    `json:"timestamp"`
		Sequencer           *feltJSON  `json:"sequencer_address"`
		L1Gas               *priceJSON `json:"l1_gas_price"`
		L2Gas               *priceJSON `json:"l2_gas_price"`
		L1DataGas           *priceJSON `json:"l1_data_gas_price"`
		DAMode              *string    `json:"l1_da_mode"`
		Version             *string    `json:"starknet_version"`
		EventCommitment     *feltJSON  `json:"event_commitment"`
		TxCommitment        *feltJSON  `json:"transaction_commitment"`
		ReceiptCommitment   *feltJSON  `json:"receipt_commitment"`
		StateDiffCommitment *feltJSON  `json:"state_diff_commitment"`
		EventCount          *uint64    `json:"event_count"`
		TxCount             *uint64    `json:"transaction_count"`
		StateDiffLength     *uint64    `json:"state_diff_length"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, Felt{}, &FieldError{Field: "(header)", Reason: err.Error()}
	}
	missing := func(name string) (*Header, Felt, error) {
		return nil, Felt{}, &FieldError{Field: name, Reason: "is missing"}
	}
	switch {
	case j.BlockHash == nil:
		return missing("block_hash")
	case j.ParentHash == nil:
		return missing("parent_hash")
	case j.BlockNumber == nil:
		return missing("block_number")
	case j.NewRoot == nil:
		return missing("new_root")
	case j.Timestamp == nil:
		return missing("timestamp")
	case j.Sequencer == nil:
		return missing("sequencer_address")
	case j.L1Gas == nil:
		return missing("l1_gas_price")
	case j.L2Gas == nil:
		return missing("l2_gas_price")
	case j.L1DataGas == nil:
		return missing("l1_data_gas_price")
	case j.DAMode == nil:
		return missing("l1_da_mode")
	case j.Version == nil:
		return missing("starknet_version")
	case j.EventCommitment == nil:
		return missing("event_commitment")
	case j.TxCommitment == nil:
		return missing("transaction_commitment")
	case j.ReceiptCommitment == nil:
		return missing("receipt_commitment")
	case j.StateDiffCommitment == nil:
		return missing("state_diff_commitment")
	case j.EventCount == nil:
		return missing("event_count")
	case j.TxCount == nil:
		return missing("transaction_count")
	case j.StateDiffLength == nil:
		return missing("state_diff_length")
	}
	var blob bool
	switch *j.DAMode {
	case "BLOB":
		blob = true
	case "CALLDATA":
	default:
		return nil, Felt{}, &FieldError{Field: "l1_da_mode", Reason: fmt.Sprintf("want BLOB or CALLDATA, got %q", *j.DAMode)}
	}
	h := &Header{
		Number: *j.BlockNumber, StateRoot: Felt(*j.NewRoot), Sequencer: Felt(*j.Sequencer), Timestamp: *j.Timestamp,
		TxCount: *j.TxCount, EventCount: *j.EventCount, StateDiffLength: *j.StateDiffLength, Blob: blob,
		StateDiffCommitment: Felt(*j.StateDiffCommitment), TxCommitment: Felt(*j.TxCommitment),
		EventCommitment: Felt(*j.EventCommitment), ReceiptCommitment: Felt(*j.ReceiptCommitment),
		L1Gas: j.L1Gas.price(), L1DataGas: j.L1DataGas.price(), L2Gas: j.L2Gas.price(),
		Version: *j.Version, Parent: Felt(*j.ParentHash),
	}
	return h, Felt(*j.BlockHash), nil
}

type priceJSON struct {
	Wei *feltJSON `json:"price_in_wei"`
	Fri *feltJSON `json:"price_in_fri"`
}

func (p *priceJSON) price() Price {
	var out Price
	if p.Wei != nil {
		out.Wei = Felt(*p.Wei)
	}
	if p.Fri != nil {
		out.Fri = Felt(*p.Fri)
	}
	return out
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
