package solanadevnet

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"strconv"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/klauspost/compress/zstd"
	"github.com/mr-tron/base58"

	"github.com/porticohq/portico/families/rpcparams"
	"github.com/porticohq/portico/jsonrpc"
)

// Transaction size limits (PACKET_DATA_SIZE and its encoded forms).
const (
	maxTxBytes       = 1232
	maxTxBase58Bytes = 1683
	maxTxBase64Bytes = 1644
)

// signatureParam decodes a base58 signature of 64 bytes.
func signatureParam(v jsontext.Value, pos int, field string) (solana.Signature, error) {
	s, err := rpcparams.String(v, pos, field)
	if err != nil {
		return solana.Signature{}, err
	}
	sig, err := solana.SignatureFromBase58(s)
	if err != nil {
		return solana.Signature{}, rpcparams.Errorf(pos, field, "want a base58 signature of 64 bytes, got %s", rpcparams.Describe(v))
	}
	return sig, nil
}

// decodeTx decodes a wire transaction and checks that it is complete: no
// bytes left over, signatures as many as the header asks.
func decodeTx(raw []byte) (*solana.Transaction, error) {
	dec := bin.NewBinDecoder(raw)
	tx, err := solana.TransactionFromDecoder(dec)
	if err != nil {
		return nil, err
	}
	if dec.Remaining() != 0 {
		return nil, fmt.Errorf("%d bytes left over", dec.Remaining())
	}
	return tx, nil
}

// verifySignatures checks each signature against the exact message bytes
// that follow the signatures in raw.
func verifySignatures(raw []byte, tx *solana.Transaction) bool {
	n := len(tx.Signatures)
	if n == 0 || n != int(tx.Message.Header.NumRequiredSignatures) || n > len(tx.Message.AccountKeys) {
		return false
	}
	prefix := 1
	if n >= 0x80 {
		prefix = 2
	}
	off := prefix + 64*n
	if off > len(raw) {
		return false
	}
	msg := raw[off:]
	for i, s := range tx.Signatures {
		if !ed25519.Verify(ed25519.PublicKey(tx.Message.AccountKeys[i][:]), msg, s[:]) {
			return false
		}
	}
	return true
}

// sendTransaction checks a signed transaction (decoding, signatures,
// recent blockhash, and unless skipPreflight a simulation against the tip)
// and queues it for the next block.
func (d *Devnet) sendTransaction(params jsontext.Value) (any, error) {
	p, err := positional(params, 1, "transaction", "config")
	if err != nil {
		return nil, err
	}
	encoded, err := rpcparams.String(p[0], 1, "transaction")
	if err != nil {
		return nil, err
	}
	cfg, err := config(p, 1, "config")
	if err != nil {
		return nil, err
	}
	enc := "base58"
	if v, ok := cfg["encoding"]; ok && v.Kind() != 'n' {
		if enc, err = rpcparams.Enum(v, 2, "config.encoding", "base58", "base64"); err != nil {
			return nil, err
		}
	}
	skip := false
	if v, ok := cfg["skipPreflight"]; ok && v.Kind() != 'n' {
		if skip, err = rpcparams.Bool(v, 2, "config.skipPreflight"); err != nil {
			return nil, err
		}
	}
	if v, ok := cfg["preflightCommitment"]; ok && v.Kind() != 'n' {
		if _, err := rpcparams.Enum(v, 2, "config.preflightCommitment", "processed", "confirmed", "finalized"); err != nil {
			return nil, err
		}
	}
	if v, ok := cfg["maxRetries"]; ok && v.Kind() != 'n' {
		if _, err := rpcparams.Uint(v, 2, "config.maxRetries", rpcparams.MaxUint64); err != nil {
			return nil, err
		}
	}
	raw, err := decodeWire(encoded, enc)
	if err != nil {
		return nil, err
	}
	tx, err := decodeTx(raw)
	if err != nil {
		return nil, invalidParams("invalid transaction: failed to deserialize VersionedTransaction: %v", err)
	}
	if !verifySignatures(raw, tx) {
		return nil, &jsonrpc.Error{Code: CodeSignatureVerification, Message: "Transaction signature verification failure"}
	}
	if err := d.submit(raw, tx, !skip); err != nil {
		return nil, err
	}
	return tx.Signatures[0].String(), nil
}

// decodeWire decodes an encoded transaction within the size limits.
func decodeWire(s, enc string) ([]byte, error) {
	var raw []byte
	var err error
	if enc == "base64" {
		if len(s) > maxTxBase64Bytes {
			return nil, invalidParams("base64 encoded VersionedTransaction too large: %d bytes (max: encoded/raw %d/%d)", len(s), maxTxBase64Bytes, maxTxBytes)
		}
		raw, err = base64.StdEncoding.DecodeString(s)
	} else {
		if len(s) > maxTxBase58Bytes {
			return nil, invalidParams("base58 encoded VersionedTransaction too large: %d bytes (max: encoded/raw %d/%d)", len(s), maxTxBase58Bytes, maxTxBytes)
		}
		raw, err = base58.Decode(s)
	}
	if err != nil {
		return nil, invalidParams("invalid %s encoding: %v", enc, err)
	}
	if len(raw) > maxTxBytes {
		return nil, invalidParams("decoded VersionedTransaction too large: %d bytes (max: %d bytes)", len(raw), maxTxBytes)
	}
	return raw, nil
}

// submit queues a transaction after the checks a real node's preflight
// makes.
func (d *Devnet) submit(raw []byte, tx *solana.Transaction, preflight bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sig := tx.Signatures[0]
	for _, p := range d.mempool {
		if p.tx.Signatures[0] == sig {
			return nil // already queued
		}
	}
	if _, ok := d.led.sigs[sig]; ok {
		return preflightError(errTxProcessed, nil)
	}
	if _, ok := d.led.blockhashValid(tx.Message.RecentBlockhash); !ok {
		return preflightError(errTxBlockhash, nil)
	}
	if preflight {
		tip := d.led.tip()
		s := &buildState{d: d, l: d.led, b: &block{Slot: d.led.slot + 1, ParentSlot: tip.Slot}, delta: map[solana.PublicKey]*account{}}
		meta, _, terr := execute(s, tx)
		if terr != nil {
			return preflightError(terr, nil)
		}
		if meta.Err != nil {
			return preflightError(meta.Err, meta)
		}
	}
	d.mempool = append(d.mempool, &pending{raw: raw, tx: tx})
	return nil
}

// preflightError is agave's -32002 with the simulation's result as data.
func preflightError(e *txError, meta *txMeta) error {
	data := struct {
		Accounts             jsontext.Value `json:"accounts"`
		Err                  jsontext.Value `json:"err"`
		InnerInstructions    jsontext.Value `json:"innerInstructions"`
		LoadedAccountsDataSz uint32         `json:"loadedAccountsDataSize"`
		Logs                 []string       `json:"logs"`
		ReplacementBlockhash jsontext.Value `json:"replacementBlockhash"`
		ReturnData           jsontext.Value `json:"returnData"`
		UnitsConsumed        uint64         `json:"unitsConsumed"`
	}{null, jsontext.Value(e.JSON), null, 0, []string{}, null, null, 0}
	if meta != nil {
		data.Logs, data.UnitsConsumed = meta.Logs, meta.CU
	}
	b, _ := json.Marshal(data)
	return &jsonrpc.Error{Code: CodeSendTransactionPreflight, Message: "Transaction simulation failed: " + e.Msg, Data: b}
}

// requestAirdrop sends lamports from the faucet in the next block, signed
// against the confirmed block's hash.
func (d *Devnet) requestAirdrop(params jsontext.Value) (any, error) {
	p, err := positional(params, 2, "pubkey", "lamports", "config")
	if err != nil {
		return nil, err
	}
	key, err := pubkeyParam(p[0], 1, "pubkey")
	if err != nil {
		return nil, err
	}
	lamports, err := rpcparams.Uint(p[1], 2, "lamports", rpcparams.MaxUint64)
	if err != nil {
		return nil, err
	}
	cfg, err := config(p, 2, "config")
	if err != nil {
		return nil, err
	}
	if _, err := commitmentOf(cfg, 3, "config", processed); err != nil {
		return nil, err
	}
	if lamports == 0 || lamports > faucetLamports/10 {
		return nil, invalidParams("param 2 (lamports): want 1 to %d lamports per airdrop, got %d", uint64(faucetLamports/10), lamports)
	}
	// Signed against the confirmed block, as agave's faucet signs against
	// the bank's confirmed blockhash: the processed tip may yet be
	// abandoned, and with it its hash, which would void the airdrop.
	d.mu.RLock()
	recent := d.led.conf.Hash
	d.mu.RUnlock()
	faucet := d.keys.faucet
	ix := solana.NewInstruction(systemProgram, solana.AccountMetaSlice{
		solana.Meta(faucet.PublicKey()).SIGNER().WRITE(), solana.Meta(key).WRITE(),
	}, append([]byte{2, 0, 0, 0}, le64(lamports)...))
	pt := mustSign([]solana.Instruction{ix}, recent, faucet.PublicKey(), nil, faucet)
	if err := d.submit(pt.raw, pt.tx, true); err != nil {
		return nil, err
	}
	return pt.tx.Signatures[0].String(), nil
}

func le64(n uint64) []byte {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte(n >> (8 * i))
	}
	return b
}

type sigStatus struct {
	ConfirmationStatus string         `json:"confirmationStatus"`
	Confirmations      *uint64        `json:"confirmations"`
	Err                jsontext.Value `json:"err"`
	Slot               uint64         `json:"slot"`
	Status             jsontext.Value `json:"status"`
}

// statusCacheSlots is how far back getSignatureStatuses looks without
// searchTransactionHistory (agave's status cache).
const statusCacheSlots = 300

func (d *Devnet) getSignatureStatuses(params jsontext.Value) (any, error) {
	p, err := positional(params, 1, "signatures", "config")
	if err != nil {
		return nil, err
	}
	list, err := rpcparams.Array(p[0], 1, "signatures")
	if err != nil {
		return nil, err
	}
	if len(list) > 256 {
		return nil, invalidParams("Too many inputs provided; max 256")
	}
	sigs := make([]solana.Signature, len(list))
	for i, v := range list {
		if sigs[i], err = signatureParam(v, 1, rpcparams.Index("signatures", i)); err != nil {
			return nil, err
		}
	}
	cfg, err := config(p, 1, "config")
	if err != nil {
		return nil, err
	}
	history := false
	if v, ok := cfg["searchTransactionHistory"]; ok && v.Kind() != 'n' {
		if history, err = rpcparams.Bool(v, 2, "config.searchTransactionHistory"); err != nil {
			return nil, err
		}
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	l := d.led
	tip := l.tip()
	out := make([]*sigStatus, len(sigs))
	for i, s := range sigs {
		loc, ok := l.sigs[s]
		if !ok || (!history && loc.Slot+statusCacheSlots < tip.Slot) {
			continue
		}
		b := l.blocks[loc.Slot]
		m := &b.Txs[loc.Index].Meta
		errV, status := errStatus(m)
		st := &sigStatus{ConfirmationStatus: l.status(b).String(), Err: errV, Slot: b.Slot, Status: status}
		if b.Slot > l.root.Slot {
			n := uint64(0)
			if b.Slot <= l.conf.Slot {
				n = l.conf.Height - b.Height + 1
			}
			st.Confirmations = &n
		}
		out[i] = st
	}
	return withContext{ctxAt(tip.Slot), out}, nil
}

type accountInfo struct {
	Data       any    `json:"data"`
	Executable bool   `json:"executable"`
	Lamports   uint64 `json:"lamports"`
	Owner      string `json:"owner"`
	RentEpoch  uint64 `json:"rentEpoch"`
	Space      uint64 `json:"space"`
}

func (d *Devnet) getAccountInfo(params jsontext.Value) (any, error) {
	p, err := positional(params, 1, "pubkey", "config")
	if err != nil {
		return nil, err
	}
	key, err := pubkeyParam(p[0], 1, "pubkey")
	if err != nil {
		return nil, err
	}
	cfg, err := config(p, 1, "config")
	if err != nil {
		return nil, err
	}
	enc := "binary"
	if v, ok := cfg["encoding"]; ok && v.Kind() != 'n' {
		if enc, err = rpcparams.Enum(v, 2, "config.encoding", "base58", "base64", "base64+zstd", "jsonParsed", "binary"); err != nil {
			return nil, err
		}
	}
	slice, err := dataSliceParam(cfg, 2)
	if err != nil {
		return nil, err
	}
	c, err := commitmentOf(cfg, 2, "config", processed)
	if err != nil {
		return nil, err
	}
	d.mu.RLock()
	slot := d.led.at(c).Slot
	a := d.led.accountAt(key, c)
	d.mu.RUnlock()
	if err := minContextSlot(cfg, 2, "config", slot); err != nil {
		return nil, err
	}
	if a == nil {
		return withContext{ctxAt(slot), nil}, nil
	}
	data := slice.apply(a.Data)
	if (enc == "binary" || enc == "base58") && len(data) > maxBase58Bytes {
		return nil, invalidParams("Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.")
	}
	var parsed any
	if enc == "jsonParsed" && slice == nil {
		if program, p, ok := parseAccount(a); ok {
			parsed = map[string]any{"parsed": p, "program": program, "space": len(a.Data)}
		}
	}
	info := accountInfo{Data: accountData(enc, data, parsed), Executable: a.Executable, Lamports: a.Lamports, Owner: a.Owner.String(), RentEpoch: 1<<64 - 1, Space: uint64(len(a.Data))}
	return withContext{ctxAt(slot), info}, nil
}

// maxBase58Bytes is the most account data agave encodes in base58
// (MAX_BASE58_BYTES).
const maxBase58Bytes = 128

// dataSlice is config.dataSlice: the part of an account's data to return.
type dataSlice struct{ offset, length uint64 }

// dataSliceParam reads config.dataSlice; nil when absent.
func dataSliceParam(cfg map[string]jsontext.Value, pos int) (*dataSlice, error) {
	v, ok := cfg["dataSlice"]
	if !ok || v.Kind() == 'n' {
		return nil, nil
	}
	ds, err := rpcparams.Object(v, pos, "config.dataSlice", "offset", "length")
	if err != nil {
		return nil, err
	}
	var out dataSlice
	for _, f := range []struct {
		name string
		dst  *uint64
	}{{"offset", &out.offset}, {"length", &out.length}} {
		fv, ok := ds[f.name]
		if !ok {
			return nil, rpcparams.Errorf(pos, "config.dataSlice."+f.name, "missing")
		}
		if *f.dst, err = rpcparams.Uint(fv, pos, "config.dataSlice."+f.name, rpcparams.MaxUint64); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// apply returns the slice of data; a nil slice returns it whole.
func (s *dataSlice) apply(data []byte) []byte {
	if s == nil {
		return data
	}
	start := min(s.offset, uint64(len(data)))
	return data[start:min(start+min(s.length, uint64(len(data))), uint64(len(data)))]
}

// accountData encodes account data as agave's UiAccount::encode does:
// binary is a bare base58 string, base58, base64 and base64+zstd are
// [data, encoding] pairs, jsonParsed is parsed when the devnet can parse
// the account (parsed is not nil) and base64 otherwise. Base58 of more
// than 128 bytes gives agave's error text in place of the data.
func accountData(enc string, data []byte, parsed any) any {
	switch enc {
	case "binary", "base58":
		s := "error: data too large for bs58 encoding"
		if len(data) <= maxBase58Bytes {
			s = base58.Encode(data)
		}
		if enc == "binary" {
			return s
		}
		return []string{s, "base58"}
	case "base64+zstd":
		zw, _ := zstd.NewWriter(nil)
		defer zw.Close()
		return []string{base64.StdEncoding.EncodeToString(zw.EncodeAll(data, nil)), "base64+zstd"}
	case "jsonParsed":
		if parsed != nil {
			return parsed
		}
	}
	return []string{base64.StdEncoding.EncodeToString(data), "base64"}
}

// parseAccount parses the accounts agave parses that the devnet holds:
// address lookup tables. Other accounts (system accounts, which agave's
// nonce parser does not match either) are not parsed, and jsonParsed
// falls back to base64, as in agave.
func parseAccount(a *account) (program string, parsed any, ok bool) {
	if a.Owner != lookupTableProgram {
		return "", nil, false
	}
	t, err := decodeTable(a.Data)
	if err != nil {
		return "", nil, false
	}
	info := map[string]any{
		"addresses":                  keyStrings(t.addresses),
		"deactivationSlot":           strconv.FormatUint(t.deactivation, 10),
		"lastExtendedSlot":           strconv.FormatUint(t.lastExtended, 10),
		"lastExtendedSlotStartIndex": t.startIndex,
	}
	if t.authority != nil {
		info["authority"] = t.authority.String()
	}
	return "address-lookup-table", map[string]any{"info": info, "type": "lookupTable"}, true
}
