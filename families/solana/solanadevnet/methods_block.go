package solanadevnet

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/rpcparams"
)

// maxGetBlocksRange is agave's MAX_GET_CONFIRMED_BLOCKS_RANGE.
const maxGetBlocksRange = 500_000

// encodingParam reads an encoding; binary is allowed only where agave
// allows the legacy bare form.
func encodingParam(v jsontext.Value, pos int, field string, allowed ...string) (string, error) {
	return rpcparams.Enum(v, pos, field, allowed...)
}

// txOptions reads the options getBlock and getTransaction share.
// encodeConfig reads the second param of getBlock and getTransaction: the
// deprecated bare encoding (cfg is then nil) or a config object whose
// transaction options it applies (cfg holds the object for the rest).
func encodeConfig(p []jsontext.Value) (o encodeOpts, cfg map[string]jsontext.Value, err error) {
	o = encodeOpts{encoding: "json", details: "full", rewards: true, maxVersion: -1}
	if len(p) > 1 && p[1].Kind() == '"' {
		o.encoding, err = encodingParam(p[1], 2, "config", "json", "jsonParsed", "base58", "base64", "binary")
		return o, nil, err
	}
	if cfg, err = config(p, 1, "config"); err != nil {
		return o, nil, err
	}
	return o, cfg, txOptions(cfg, 2, &o)
}

func txOptions(cfg map[string]jsontext.Value, pos int, o *encodeOpts) error {
	if v, ok := cfg["encoding"]; ok && v.Kind() != 'n' {
		enc, err := encodingParam(v, pos, "config.encoding", "json", "jsonParsed", "base58", "base64")
		if err != nil {
			return err
		}
		o.encoding = enc
	}
	if v, ok := cfg["maxSupportedTransactionVersion"]; ok && v.Kind() != 'n' {
		n, err := rpcparams.Uint(v, pos, "config.maxSupportedTransactionVersion", 255)
		if err != nil {
			return err
		}
		o.maxVersion = int(n)
	}
	return nil
}

// getBlock answers as agave does, except that commitment "processed" is
// served (agave refuses it).
func (d *Devnet) getBlock(params jsontext.Value) (any, error) {
	p, err := positional(params, 1, "slot", "config")
	if err != nil {
		return nil, err
	}
	slot, err := rpcparams.Uint(p[0], 1, "slot", rpcparams.MaxUint64)
	if err != nil {
		return nil, err
	}
	o, cfg, err := encodeConfig(p)
	if err != nil {
		return nil, err
	}
	c := finalized
	if cfg != nil {
		if v, ok := cfg["transactionDetails"]; ok && v.Kind() != 'n' {
			if o.details, err = rpcparams.Enum(v, 2, "config.transactionDetails", "full", "accounts", "signatures", "none"); err != nil {
				return nil, err
			}
		}
		if v, ok := cfg["rewards"]; ok && v.Kind() != 'n' {
			if o.rewards, err = rpcparams.Bool(v, 2, "config.rewards"); err != nil {
				return nil, err
			}
		}
		if c, err = commitmentOf(cfg, 2, "config", processed); err != nil {
			return nil, err
		}
	}
	d.mu.RLock()
	if err := d.led.blockError(slot, c); err != nil {
		d.mu.RUnlock()
		return nil, err
	}
	b := d.led.blockAt(slot, c)
	first := d.led.first
	d.mu.RUnlock()
	if b == nil {
		return nil, nil
	}
	return renderBlock(b, first, o)
}

// getBlocks lists the slots that hold a block between start and end
// (inclusive) at confirmed or finalized commitment.
func (d *Devnet) getBlocks(params jsontext.Value) (any, error) {
	p, err := positional(params, 1, "startSlot", "endSlot", "config")
	if err != nil {
		return nil, err
	}
	start, err := rpcparams.Uint(p[0], 1, "startSlot", rpcparams.MaxUint64)
	if err != nil {
		return nil, err
	}
	var end *uint64
	cfgAt := 2
	if len(p) > 1 {
		switch p[1].Kind() {
		case '{':
			cfgAt = 1 // [start, config]
			if len(p) > 2 {
				return nil, rpcparams.Errorf(3, "", "too many params: the config came second")
			}
		case 'n':
		default:
			e, err := rpcparams.Uint(p[1], 2, "endSlot", rpcparams.MaxUint64)
			if err != nil {
				return nil, err
			}
			end = &e
		}
	}
	cfg, err := config(p, cfgAt, "config")
	if err != nil {
		return nil, err
	}
	c, err := commitmentOf(cfg, cfgAt+1, "config", confirmed)
	if err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	top := d.led.at(c).Slot
	last := top
	if end != nil {
		last = min(*end, top)
	}
	if end != nil && *end >= start && *end-start > maxGetBlocksRange {
		return nil, invalidParams("Slot range too large; max %d", maxGetBlocksRange)
	}
	out := []uint64{}
	for s := max(start, d.led.first); s <= last; s++ {
		if d.led.blocks[s] != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// getTransaction finds a transaction by signature at confirmed or
// finalized commitment.
func (d *Devnet) getTransaction(params jsontext.Value) (any, error) {
	p, err := positional(params, 1, "signature", "config")
	if err != nil {
		return nil, err
	}
	sig, err := signatureParam(p[0], 1, "signature")
	if err != nil {
		return nil, err
	}
	o, cfg, err := encodeConfig(p)
	if err != nil {
		return nil, err
	}
	c := finalized
	if cfg != nil {
		if c, err = commitmentOf(cfg, 2, "config", confirmed); err != nil {
			return nil, err
		}
	}
	d.mu.RLock()
	loc, ok := d.led.sigs[sig]
	var b *block
	if ok {
		b = d.led.blockAt(loc.Slot, c)
	}
	d.mu.RUnlock()
	if b == nil {
		return nil, nil
	}
	r := b.Txs[loc.Index]
	tx, version, err := renderTxBody(r, o)
	if err != nil {
		return nil, err
	}
	return uiTxWithSlot{BlockTime: b.Time, Meta: renderMeta(r, o), Slot: b.Slot, Transaction: tx, Version: version}, nil
}

type sigInfo struct {
	BlockTime          int64          `json:"blockTime"`
	ConfirmationStatus string         `json:"confirmationStatus"`
	Err                jsontext.Value `json:"err"`
	Memo               *string        `json:"memo"`
	Signature          string         `json:"signature"`
	Slot               uint64         `json:"slot"`
}

// getSignaturesForAddress lists an address's transactions, newest first.
func (d *Devnet) getSignaturesForAddress(params jsontext.Value) (any, error) {
	p, err := positional(params, 1, "address", "config")
	if err != nil {
		return nil, err
	}
	key, err := pubkeyParam(p[0], 1, "address")
	if err != nil {
		return nil, err
	}
	cfg, err := config(p, 1, "config")
	if err != nil {
		return nil, err
	}
	limit := uint64(1000)
	if v, ok := cfg["limit"]; ok && v.Kind() != 'n' {
		if limit, err = rpcparams.Uint(v, 2, "config.limit", rpcparams.MaxUint64); err != nil {
			return nil, err
		}
		if limit == 0 || limit > 1000 {
			return nil, invalidParams("Invalid limit; max 1000")
		}
	}
	var before, until *sigLoc
	c, err := commitmentOf(cfg, 2, "config", confirmed)
	if err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	l := d.led
	for _, f := range []struct {
		name string
		dst  **sigLoc
	}{{"before", &before}, {"until", &until}} {
		if v, ok := cfg[f.name]; ok && v.Kind() != 'n' {
			s, err := signatureParam(v, 2, "config."+f.name)
			if err != nil {
				return nil, err
			}
			if loc, ok := l.sigs[s]; ok {
				*f.dst = &loc
			} else if f.name == "before" {
				return []sigInfo{}, nil // agave starts from an unknown "before" with nothing
			}
		}
	}
	top := l.at(c).Slot
	locs := l.byAddr[key]
	out := []sigInfo{}
	for i := len(locs) - 1; i >= 0 && uint64(len(out)) < limit; i-- {
		loc := locs[i]
		if loc.Slot > top || (i > 0 && locs[i-1] == loc) {
			continue
		}
		if before != nil && !older(loc, *before) {
			continue
		}
		if until != nil && !older(*until, loc) {
			break
		}
		b := l.blocks[loc.Slot]
		if b == nil {
			continue
		}
		r := b.Txs[loc.Index]
		errV, _ := errStatus(&r.Meta)
		out = append(out, sigInfo{
			BlockTime: b.Time, ConfirmationStatus: l.status(b).String(), Err: errV,
			Memo: memoOf(r), Signature: r.sig().String(), Slot: b.Slot,
		})
	}
	return out, nil
}

// older reports whether a comes before b in the ledger.
func older(a, b sigLoc) bool {
	return a.Slot < b.Slot || (a.Slot == b.Slot && a.Index < b.Index)
}

// status returns the commitment level a block on the chain has reached.
func (l *ledger) status(b *block) commitment {
	switch {
	case b.Slot <= l.root.Slot:
		return finalized
	case b.Slot <= l.conf.Slot:
		return confirmed
	}
	return processed
}

// memoOf returns the memos of a transaction as agave lists them:
// "[len] text" for each, joined by "; "; nil without one.
func memoOf(r *txRecord) *string {
	keys := txKeys(r)
	var memos []string
	for _, ix := range r.tx.Message.Instructions {
		if int(ix.ProgramIDIndex) < len(keys) && keys[ix.ProgramIDIndex] == memoProgram {
			memos = append(memos, "["+itoa(uint64(len(ix.Data)))+"] "+string(ix.Data))
		}
	}
	if len(memos) == 0 {
		return nil
	}
	s := memos[0]
	for _, m := range memos[1:] {
		s += "; " + m
	}
	return &s
}

// positional is rpcparams.Positional that also takes null for no params.
func positional(raw jsontext.Value, required int, names ...string) ([]jsontext.Value, error) {
	if raw.Kind() == 'n' {
		raw = nil
	}
	return rpcparams.Positional(raw, required, names...)
}
