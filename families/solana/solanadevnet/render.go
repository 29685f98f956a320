package solanadevnet

import (
	"encoding/base64"

	"github.com/gagliardetto/solana-go"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/mr-tron/base58"
)

// The wire shapes below mirror agave's UiConfirmedBlock and friends. Fields
// are declared in alphabetical order because a real node's answers come out
// sorted at every level.

type uiBlock struct {
	BlockHeight         uint64      `json:"blockHeight"`
	BlockTime           int64       `json:"blockTime"`
	Blockhash           string      `json:"blockhash"`
	NumRewardPartitions *uint64     `json:"numRewardPartitions,omitzero"`
	ParentSlot          uint64      `json:"parentSlot"`
	PreviousBlockhash   string      `json:"previousBlockhash"`
	Rewards             *[]uiReward `json:"rewards,omitzero"`
	Signatures          []string    `json:"signatures,omitzero"`
	Transactions        []any       `json:"transactions,omitzero"`
}

type uiReward struct {
	Commission  *uint8 `json:"commission"`
	Lamports    int64  `json:"lamports"`
	PostBalance uint64 `json:"postBalance"`
	Pubkey      string `json:"pubkey"`
	RewardType  string `json:"rewardType"`
}

type uiTxWithMeta struct {
	Meta        any `json:"meta"`
	Transaction any `json:"transaction"`
	Version     any `json:"version,omitzero"`
}

// uiTxWithSlot is getTransaction's result.
type uiTxWithSlot struct {
	BlockTime   int64  `json:"blockTime"`
	Meta        any    `json:"meta"`
	Slot        uint64 `json:"slot"`
	Transaction any    `json:"transaction"`
	Version     any    `json:"version,omitzero"`
}

type uiMeta struct {
	ComputeUnitsConsumed uint64         `json:"computeUnitsConsumed"`
	Err                  jsontext.Value `json:"err"`
	Fee                  uint64         `json:"fee"`
	InnerInstructions    []uiInner      `json:"innerInstructions"`
	LoadedAddresses      *uiLoaded      `json:"loadedAddresses,omitzero"`
	LogMessages          []string       `json:"logMessages"`
	PostBalances         []uint64       `json:"postBalances"`
	PostTokenBalances    []struct{}     `json:"postTokenBalances"`
	PreBalances          []uint64       `json:"preBalances"`
	PreTokenBalances     []struct{}     `json:"preTokenBalances"`
	Rewards              *[]uiReward    `json:"rewards"`
	Status               jsontext.Value `json:"status"`
}

// uiSimpleMeta is the meta of transactionDetails "accounts".
type uiSimpleMeta struct {
	Err               jsontext.Value `json:"err"`
	Fee               uint64         `json:"fee"`
	PostBalances      []uint64       `json:"postBalances"`
	PostTokenBalances []struct{}     `json:"postTokenBalances"`
	PreBalances       []uint64       `json:"preBalances"`
	PreTokenBalances  []struct{}     `json:"preTokenBalances"`
	Rewards           *[]uiReward    `json:"rewards,omitzero"`
	Status            jsontext.Value `json:"status"`
}

type uiInner struct {
	Index        uint16 `json:"index"`
	Instructions []any  `json:"instructions"`
}

type uiLoaded struct {
	Readonly []string `json:"readonly"`
	Writable []string `json:"writable"`
}

type uiTx struct {
	Message    uiMessage `json:"message"`
	Signatures []string  `json:"signatures"`
}

type uiMessage struct {
	AccountKeys         any         `json:"accountKeys"`
	AddressTableLookups *[]uiLookup `json:"addressTableLookups,omitzero"`
	Header              *uiHeader   `json:"header,omitzero"`
	Instructions        []any       `json:"instructions"`
	RecentBlockhash     string      `json:"recentBlockhash"`
}

type uiHeader struct {
	NumReadonlySignedAccounts   uint8 `json:"numReadonlySignedAccounts"`
	NumReadonlyUnsignedAccounts uint8 `json:"numReadonlyUnsignedAccounts"`
	NumRequiredSignatures       uint8 `json:"numRequiredSignatures"`
}

type uiLookup struct {
	AccountKey      string   `json:"accountKey"`
	ReadonlyIndexes []uint16 `json:"readonlyIndexes"`
	WritableIndexes []uint16 `json:"writableIndexes"`
}

// uiAccountsTx is the transaction of transactionDetails "accounts".
type uiAccountsTx struct {
	AccountKeys []uiKey  `json:"accountKeys"`
	Signatures  []string `json:"signatures"`
}

type uiKey struct {
	Pubkey   string `json:"pubkey"`
	Signer   bool   `json:"signer"`
	Source   string `json:"source"`
	Writable bool   `json:"writable"`
}

type uiCompiledIx struct {
	Accounts       []uint16 `json:"accounts"`
	Data           string   `json:"data"`
	ProgramIDIndex uint16   `json:"programIdIndex"`
	StackHeight    int      `json:"stackHeight"`
}

type uiParsedIx struct {
	Parsed      any    `json:"parsed"`
	Program     string `json:"program"`
	ProgramID   string `json:"programId"`
	StackHeight int    `json:"stackHeight"`
}

type uiPartialIx struct {
	Accounts    []string `json:"accounts"`
	Data        string   `json:"data"`
	ProgramID   string   `json:"programId"`
	StackHeight int      `json:"stackHeight"`
}

// encodeOpts are the options of getBlock and getTransaction that shape a
// transaction.
type encodeOpts struct {
	encoding   string // json, jsonParsed, base58, base64, binary
	details    string // full, accounts, signatures, none
	rewards    bool
	maxVersion int // -1 when absent
}

var zeroHash = solana.Hash{}.String()

// renderBlock builds getBlock's result. first is the lowest kept slot: a
// block whose parent is gone shows the zero hash as previousBlockhash.
func renderBlock(b *block, first uint64, o encodeOpts) (*uiBlock, error) {
	out := &uiBlock{
		BlockHeight:         b.Height,
		BlockTime:           b.Time,
		Blockhash:           b.Hash.String(),
		NumRewardPartitions: b.Partitions,
		ParentSlot:          b.ParentSlot,
		PreviousBlockhash:   b.PrevHash.String(),
	}
	if b.ParentSlot < first || b.Slot == 0 {
		out.PreviousBlockhash = zeroHash
	}
	if o.rewards {
		rw := renderRewards(b.Rewards)
		out.Rewards = &rw
	}
	switch o.details {
	case "signatures":
		out.Signatures = make([]string, len(b.Txs))
		for i, r := range b.Txs {
			out.Signatures[i] = r.sig().String()
		}
	case "full", "accounts":
		out.Transactions = make([]any, len(b.Txs))
		for i, r := range b.Txs {
			e, err := renderTx(r, o)
			if err != nil {
				return nil, err
			}
			out.Transactions[i] = e
		}
	}
	return out, nil
}

func renderRewards(rs []reward) []uiReward {
	out := make([]uiReward, len(rs))
	for i, r := range rs {
		out[i] = uiReward{Commission: r.Commission, Lamports: r.Lamports, PostBalance: r.PostBalance, Pubkey: r.Pubkey.String(), RewardType: r.Type}
	}
	return out
}

// txVersion returns -1 for a legacy transaction, else its version.
func txVersion(tx *solana.Transaction) int {
	if tx.Message.IsVersioned() {
		return int(tx.Message.GetVersion()) - 1 // solana-go counts legacy as 0
	}
	return -1
}

// renderTx builds one transaction entry of a block.
func renderTx(r *txRecord, o encodeOpts) (*uiTxWithMeta, error) {
	tx, version, err := renderTxBody(r, o)
	if err != nil {
		return nil, err
	}
	e := &uiTxWithMeta{Transaction: tx, Version: version}
	if o.details == "accounts" {
		e.Meta = renderSimpleMeta(r, o)
	} else {
		e.Meta = renderMeta(r, o)
	}
	return e, nil
}

// renderTxBody renders the transaction itself and its version field.
func renderTxBody(r *txRecord, o encodeOpts) (tx any, version any, err error) {
	v := txVersion(r.tx)
	if v >= 0 && (o.maxVersion < 0 || v > o.maxVersion) {
		return nil, nil, errUnsupportedVersion(v)
	}
	if o.maxVersion >= 0 {
		if v < 0 {
			version = "legacy"
		} else {
			version = v
		}
	}
	if o.details == "accounts" {
		return uiAccountsTx{AccountKeys: parsedKeys(r), Signatures: signatures(r.tx)}, version, nil
	}
	switch o.encoding {
	case "base64":
		return []string{base64.StdEncoding.EncodeToString(r.Raw), "base64"}, version, nil
	case "base58":
		return []string{base58.Encode(r.Raw), "base58"}, version, nil
	case "binary":
		return base58.Encode(r.Raw), version, nil
	}
	msg := &r.tx.Message
	m := uiMessage{RecentBlockhash: msg.RecentBlockhash.String()}
	if msg.IsVersioned() {
		lus := make([]uiLookup, len(msg.AddressTableLookups))
		for i, lu := range msg.AddressTableLookups {
			lus[i] = uiLookup{AccountKey: lu.AccountKey.String(), ReadonlyIndexes: widen(lu.ReadonlyIndexes), WritableIndexes: widen(lu.WritableIndexes)}
		}
		m.AddressTableLookups = &lus
	}
	m.Instructions = make([]any, len(msg.Instructions))
	if o.encoding == "jsonParsed" {
		keys := allKeys(r)
		m.AccountKeys = parsedKeys(r)
		for i, ix := range msg.Instructions {
			m.Instructions[i] = parsedIx(keys, ix.ProgramIDIndex, ix.Accounts, ix.Data, 1)
		}
	} else {
		ks := make([]string, len(msg.AccountKeys))
		for i, k := range msg.AccountKeys {
			ks[i] = k.String()
		}
		m.AccountKeys = ks
		m.Header = &uiHeader{msg.Header.NumReadonlySignedAccounts, msg.Header.NumReadonlyUnsignedAccounts, msg.Header.NumRequiredSignatures}
		for i, ix := range msg.Instructions {
			m.Instructions[i] = uiCompiledIx{Accounts: ix.Accounts, Data: base58.Encode(ix.Data), ProgramIDIndex: ix.ProgramIDIndex, StackHeight: 1}
		}
	}
	return uiTx{Message: m, Signatures: signatures(r.tx)}, version, nil
}

func widen(b []uint8) []uint16 {
	out := make([]uint16, len(b))
	for i, x := range b {
		out[i] = uint16(x)
	}
	return out
}

func signatures(tx *solana.Transaction) []string {
	out := make([]string, len(tx.Signatures))
	for i, s := range tx.Signatures {
		out[i] = s.String()
	}
	return out
}

// allKeys returns the transaction's full account list: static keys, then
// loaded writable, then loaded read-only.
func allKeys(r *txRecord) []solana.PublicKey { return txKeys(r) }

// parsedKeys is the annotated account list of jsonParsed and "accounts".
func parsedKeys(r *txRecord) []uiKey {
	keys := allKeys(r)
	msg := &r.tx.Message
	nStatic := len(msg.AccountKeys)
	w := writableFlags(msg, nStatic, len(r.Meta.LoadedW), len(r.Meta.LoadedR), keys)
	out := make([]uiKey, len(keys))
	for i, k := range keys {
		src := "transaction"
		if i >= nStatic {
			src = "lookupTable"
		}
		out[i] = uiKey{Pubkey: k.String(), Signer: i < int(msg.Header.NumRequiredSignatures), Source: src, Writable: w[i]}
	}
	return out
}

var (
	statusOK = jsontext.Value(`{"Ok":null}`)
	null     = jsontext.Value(`null`)
)

func errStatus(m *txMeta) (errV, status jsontext.Value) {
	if m.Err == nil {
		return null, statusOK
	}
	return jsontext.Value(m.Err.JSON), jsontext.Value(`{"Err":` + m.Err.JSON + `}`)
}

func renderMeta(r *txRecord, o encodeOpts) *uiMeta {
	m := &r.Meta
	errV, status := errStatus(m)
	out := &uiMeta{
		ComputeUnitsConsumed: m.CU,
		Err:                  errV,
		Fee:                  m.Fee,
		InnerInstructions:    make([]uiInner, len(m.Inner)),
		LogMessages:          m.Logs,
		PostBalances:         m.Post,
		PostTokenBalances:    []struct{}{},
		PreBalances:          m.Pre,
		PreTokenBalances:     []struct{}{},
		Status:               status,
	}
	if out.LogMessages == nil {
		out.LogMessages = []string{}
	}
	if o.rewards {
		out.Rewards = &[]uiReward{}
	}
	parsed := o.encoding == "jsonParsed"
	if !parsed {
		out.LoadedAddresses = &uiLoaded{Readonly: keyStrings(m.LoadedR), Writable: keyStrings(m.LoadedW)}
	}
	var keys []solana.PublicKey
	if parsed {
		keys = allKeys(r)
	}
	for i, set := range m.Inner {
		ixs := make([]any, len(set.Ixs))
		for j, ix := range set.Ixs {
			if parsed {
				ixs[j] = parsedIx(keys, ix.ProgramIDIndex, ix.Accounts, ix.Data, ix.StackHeight)
			} else {
				ixs[j] = uiCompiledIx{Accounts: ix.Accounts, Data: base58.Encode(ix.Data), ProgramIDIndex: ix.ProgramIDIndex, StackHeight: ix.StackHeight}
			}
		}
		out.InnerInstructions[i] = uiInner{Index: set.Index, Instructions: ixs}
	}
	return out
}

func renderSimpleMeta(r *txRecord, o encodeOpts) *uiSimpleMeta {
	m := &r.Meta
	errV, status := errStatus(m)
	out := &uiSimpleMeta{
		Err: errV, Fee: m.Fee, PostBalances: m.Post, PostTokenBalances: []struct{}{},
		PreBalances: m.Pre, PreTokenBalances: []struct{}{}, Status: status,
	}
	if o.rewards {
		out.Rewards = &[]uiReward{}
	}
	return out
}

func keyStrings(keys []solana.PublicKey) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.String()
	}
	return out
}
