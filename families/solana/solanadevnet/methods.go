package solanadevnet

import (
	"github.com/gagliardetto/solana-go"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/rpcparams"
	"github.com/porticohq/portico/jsonrpc"
)

// Version reported by getVersion and in every context: the agave release
// whose wire format the devnet follows.
const (
	coreVersion = "2.3.6"
	featureSet  = 3640012085
)

type rpcContext struct {
	APIVersion string `json:"apiVersion"`
	Slot       uint64 `json:"slot"`
}

type withContext struct {
	Context rpcContext `json:"context"`
	Value   any        `json:"value"`
}

func ctxAt(slot uint64) rpcContext { return rpcContext{APIVersion: coreVersion, Slot: slot} }

// minContextSlot enforces config.minContextSlot against the context slot.
func minContextSlot(cfg map[string]jsontext.Value, pos int, field string, slot uint64) error {
	v, ok := cfg["minContextSlot"]
	if !ok || v.Kind() == 'n' {
		return nil
	}
	n, err := rpcparams.Uint(v, pos, field+".minContextSlot", rpcparams.MaxUint64)
	if err != nil {
		return err
	}
	if n > slot {
		return &jsonrpc.Error{Code: -32016, Message: "Minimum context slot has not been reached", Data: jsontext.Value(`{"contextSlot":` + itoa(slot) + `}`)}
	}
	return nil
}

// simpleConfig decodes [config?] with commitment and minContextSlot, and
// returns the block at that commitment.
func (d *Devnet) simpleConfig(params jsontext.Value) (*block, error) {
	p, err := positional(params, 0, "config")
	if err != nil {
		return nil, err
	}
	cfg, err := config(p, 0, "config")
	if err != nil {
		return nil, err
	}
	c, err := commitmentOf(cfg, 1, "config", processed)
	if err != nil {
		return nil, err
	}
	d.mu.RLock()
	b := d.led.at(c)
	d.mu.RUnlock()
	if err := minContextSlot(cfg, 1, "config", b.Slot); err != nil {
		return nil, err
	}
	return b, nil
}

func (d *Devnet) getSlot(params jsontext.Value) (any, error) {
	b, err := d.simpleConfig(params)
	if err != nil {
		return nil, err
	}
	return b.Slot, nil
}

func (d *Devnet) getBlockHeight(params jsontext.Value) (any, error) {
	b, err := d.simpleConfig(params)
	if err != nil {
		return nil, err
	}
	return b.Height, nil
}

func (d *Devnet) getLatestBlockhash(params jsontext.Value) (any, error) {
	b, err := d.simpleConfig(params)
	if err != nil {
		return nil, err
	}
	return withContext{ctxAt(b.Slot), struct {
		Blockhash            string `json:"blockhash"`
		LastValidBlockHeight uint64 `json:"lastValidBlockHeight"`
	}{b.Hash.String(), b.Height + maxProcessingAge}}, nil
}

func (d *Devnet) getEpochInfo(params jsontext.Value) (any, error) {
	b, err := d.simpleConfig(params)
	if err != nil {
		return nil, err
	}
	return struct {
		AbsoluteSlot     uint64 `json:"absoluteSlot"`
		BlockHeight      uint64 `json:"blockHeight"`
		Epoch            uint64 `json:"epoch"`
		SlotIndex        uint64 `json:"slotIndex"`
		SlotsInEpoch     uint64 `json:"slotsInEpoch"`
		TransactionCount uint64 `json:"transactionCount"`
	}{b.Slot, b.Height, d.epochOf(b.Slot), b.Slot % d.cfg.SlotsPerEpoch, d.cfg.SlotsPerEpoch, b.TxCount}, nil
}

func noParams(params jsontext.Value) error {
	_, err := positional(params, 0)
	return err
}

func (d *Devnet) getVersion(params jsontext.Value) (any, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	return struct {
		FeatureSet uint32 `json:"feature-set"`
		Core       string `json:"solana-core"`
	}{featureSet, coreVersion}, nil
}

func (d *Devnet) getGenesisHash(params jsontext.Value) (any, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.led.genesisHash.String(), nil
}

func (d *Devnet) getHealth(params jsontext.Value) (any, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	return "ok", nil
}

func (d *Devnet) getFirstAvailableBlock(params jsontext.Value) (any, error) {
	if err := noParams(params); err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.led.first, nil
}

// pubkeyParam decodes a base58 public key of 32 bytes.
func pubkeyParam(v jsontext.Value, pos int, field string) (solana.PublicKey, error) {
	s, err := rpcparams.String(v, pos, field)
	if err != nil {
		return solana.PublicKey{}, err
	}
	k, err := solana.PublicKeyFromBase58(s)
	if err != nil {
		return solana.PublicKey{}, rpcparams.Errorf(pos, field, "want a base58 public key of 32 bytes, got %s", rpcparams.Describe(v))
	}
	return k, nil
}

func (d *Devnet) getBalance(params jsontext.Value) (any, error) {
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
	c, err := commitmentOf(cfg, 2, "config", processed)
	if err != nil {
		return nil, err
	}
	d.mu.RLock()
	slot := d.led.at(c).Slot
	var lamports uint64
	if a := d.led.accountAt(key, c); a != nil {
		lamports = a.Lamports
	}
	d.mu.RUnlock()
	if err := minContextSlot(cfg, 2, "config", slot); err != nil {
		return nil, err
	}
	return withContext{ctxAt(slot), lamports}, nil
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// isBlockhashValid says whether a transaction signed against blockhash
// can still land: agave's isBlockhashValid, [blockhash, config?], whose
// value is a boolean at the context of the commitment asked (finalized
// by default).
func (d *Devnet) isBlockhashValid(params jsontext.Value) (any, error) {
	p, err := positional(params, 1, "blockhash", "config")
	if err != nil {
		return nil, err
	}
	s, err := rpcparams.String(p[0], 1, "blockhash")
	if err != nil {
		return nil, err
	}
	h, err := solana.HashFromBase58(s)
	if err != nil {
		return nil, invalidParams("Invalid param: %v", err)
	}
	rest := jsontext.Value("[]")
	if len(p) > 1 {
		rest = append(append(jsontext.Value("["), p[1]...), ']')
	}
	b, err := d.simpleConfig(rest)
	if err != nil {
		return nil, err
	}
	d.mu.RLock()
	_, ok := d.led.blockhashValid(h)
	d.mu.RUnlock()
	return withContext{ctxAt(b.Slot), ok}, nil
}
