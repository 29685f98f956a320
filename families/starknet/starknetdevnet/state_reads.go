package starknetdevnet

import (
	"context"
	"database/sql"
	"errors"
	"math/big"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/families/rpcparams"
	"github.com/porticohq/portico/families/starknet/starknettx"
)

// getStorageAt and getClassHashAt read the state as getNonce does: at the
// pending block or the latest sealed one (atPending); another block is
// refused with -32602 naming block_id, an undeployed contract is
// CONTRACT_NOT_FOUND (20).

// classHashAt returns a contract's class hash in the pending or latest
// state; ok is false when it is not deployed there.
func (d *Devnet) classHashAt(ctx context.Context, addr Felt, pending bool) (class Felt, ok bool, err error) {
	if pending {
		c := d.world.contracts[addr.Bytes()]
		if c == nil {
			return Felt{}, false, nil
		}
		return c.classHash, true, nil
	}
	a := addr.Bytes()
	var h []byte
	err = d.db.QueryRowContext(ctx, `SELECT class_hash FROM contracts WHERE address = ?`, a[:]).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return Felt{}, false, nil
	}
	if err != nil {
		return Felt{}, false, err
	}
	return feltFromKey(h), true, nil
}

// keyBits is the bit length of a felt's value (fp.Element's BitLen is its
// Montgomery form's).
func keyBits(f *Felt) int {
	var n big.Int
	f.BigInt(&n)
	return n.BitLen()
}

// decodeStorageKey reads a key of the state tries (a STORAGE_KEY, an
// address or class hash to prove): a felt below 2^251.
func decodeStorageKey(v jsontext.Value, pos int, field string) (Felt, error) {
	k, err := decodeFelt(v, pos, field)
	if err != nil {
		return Felt{}, err
	}
	if keyBits(&k) > stateTrieHeight {
		return Felt{}, rpcparams.Errorf(pos, field, "must be below 2^251, the state tries' key space, got %s", starknettx.Hex(&k))
	}
	return k, nil
}

func (d *Devnet) rpcGetStorageAt(ctx context.Context, params jsontext.Value) ([]byte, error) {
	p, pos, err := splitParamsN(params, 3, "contract_address", "key", "block_id")
	if err != nil {
		return nil, err
	}
	addr, err := decodeFelt(p["contract_address"], pos(0), "contract_address")
	if err != nil {
		return nil, err
	}
	key, err := decodeStorageKey(p["key"], pos(1), "key")
	if err != nil {
		return nil, err
	}
	ref, err := decodeBlockID(p["block_id"], pos(2), "block_id")
	if err != nil {
		return nil, err
	}
	pending, err := d.atPending(ctx, ref, pos(2))
	if err != nil {
		return nil, err
	}
	if _, ok, err := d.nonceAt(ctx, addr, pending); err != nil || !ok {
		return nil, errors.Join(err, errIf(!ok, ErrContractNotFound))
	}
	v, err := d.storageIn(ctx, addr, key, pending)
	if err != nil {
		return nil, err
	}
	return appendFeltJSON(nil, &v), nil
}

func (d *Devnet) rpcGetClassHashAt(ctx context.Context, params jsontext.Value) ([]byte, error) {
	return d.rpcContractField(ctx, params, d.classHashAt)
}
