package evmverify

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/maypok86/otter/v2"

	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/network/verify"
)

// verifier checks one EVM network's answers against headers it trusts.
// Trusted headers are kept by hash; the chain view says which hash a
// number has on the served chain, the trust set whether that hash earned
// trust (a quorum of nodes, the checkpoint, a parent link).
type verifier struct {
	verify.Base
	// chainID is the configured chain id (0: ask the nodes), checkpoint
	// the configured checkpoint hash.
	cfgChainID uint64
	checkpoint string

	chainMu sync.Mutex // guards chain and exec while they are built
	chain   *Chain
	exec    *Executor

	headers  *otter.Cache[common.Hash, *Header]
	blocks   *otter.Cache[common.Hash, *Block]
	receipts *otter.Cache[common.Hash, *Receipts]

	// window is how many blocks of a verified log range are checked at
	// once (the network's node_range); nil or 0 means defaultLogWindow.
	window func() uint64

	cpDone bool // the checkpoint's header was read
}

// Bounds of what a verifier keeps across calls: headers by count (each a
// few hundred bytes), blocks and receipts by the memory they hold (a
// block's receipts may be megabytes).
const (
	keptHeaders       = 8192
	keptBlockBytes    = 64 << 20
	keptReceiptsBytes = 64 << 20
)

// NewVerifier builds an EVM network's verifier (the evm family's
// Verifier): it starts nothing and calls no node.
func NewVerifier(env verify.Env) (verify.Verifier, error) {
	return newVerifier(env), nil
}

func newVerifier(env verify.Env) *verifier {
	v := &verifier{cfgChainID: env.ChainID, checkpoint: env.Checkpoint, window: env.Window,
		headers: otter.Must(&otter.Options[common.Hash, *Header]{MaximumSize: keptHeaders}),
		blocks: otter.Must(&otter.Options[common.Hash, *Block]{MaximumWeight: keptBlockBytes,
			Weigher: func(_ common.Hash, b *Block) uint32 { return weight(b.Size()) }}),
		receipts: otter.Must(&otter.Options[common.Hash, *Receipts]{MaximumWeight: keptReceiptsBytes,
			Weigher: func(_ common.Hash, rs *Receipts) uint32 { return weight(rs.Size()) }}),
	}
	v.Init(env, func(number uint64) (string, jsontext.Value) {
		return "eth_getBlockByNumber", jsontext.Value(`["` + verify.HexNumber(number) + `",false]`)
	}, blockHashOf)
	return v
}

// weight is a cache entry's size as otter's weigher gives it.
func weight(n int64) uint32 { return uint32(min(max(n, 1), 1<<31)) }

// headerBytes is about the memory a verified header holds (go-ethereum's
// types.Header and its hash), what a call that uses a kept one holds.
const headerBytes = 1024

func (v *verifier) TrustHead(ctx context.Context, number uint64) error {
	_, err := v.headerAt(ctx, number)
	return err
}

// method is the handler of a verified EVM method.
func (v *verifier) Method(name string) (verify.Handler, bool) {
	m, ok := verifiedMethods[name]
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, params jsontext.Value) (jsontext.Value, error) { return m(v, ctx, params) }, true
}

// ready builds the chain's rules once: from the configured chain id, or
// the one a quorum of nodes reports; and reads the checkpoint's header.
func (v *verifier) Ready(ctx context.Context) error {
	v.chainMu.Lock()
	defer v.chainMu.Unlock()
	if v.chain == nil {
		id := v.cfgChainID
		if id == 0 {
			reports := v.AskAll(ctx, "eth_chainId", jsontext.Value(`[]`), func(res jsontext.Value) (common.Hash, bool) {
				var s string
				if json.Unmarshal(res, &s) != nil {
					return common.Hash{}, false
				}
				n, err := strconv.ParseUint(s, 0, 64)
				return common.BigToHash(new(big.Int).SetUint64(n)), err == nil
			})
			h, ok := verify.Agree(reports, v.Quorum)
			if !ok {
				// Asked again at the next call: the nodes may agree then.
				return &verify.UnverifiableError{What: "eth_chainId", Reason: "no quorum of nodes agrees on the chain id"}
			}
			id = h.Big().Uint64()
		}
		v.chain = NewChain(ConfigFor(id))
		v.exec = NewExecutor(v.chain, proofSource{v}, ExecutorOptions{
			Headers: func(hash common.Hash, number uint64) *Header {
				if _, ok := v.Trust.Trusted(hash); !ok {
					return nil
				}
				h, _ := v.headers.GetIfPresent(hash)
				return h
			},
		})
	}
	if v.checkpoint != "" && !v.cpDone {
		hash := common.HexToHash(v.checkpoint)
		h, err := v.fetchHeader(ctx, hash)
		if err != nil {
			v.Log.Error("verify: the checkpoint's header could not be read", "network", v.Network, "err", err)
			return nil
		}
		v.Trust.Checkpoint(hash, h.Number())
		v.TrustedNumber(h.Number(), hash)
		v.link(h)
		v.cpDone = true
	}
	return nil
}

// headerAt returns the trusted header at a height.
func (v *verifier) headerAt(ctx context.Context, number uint64) (*Header, error) {
	hash, err := v.TrustedHashAt(ctx, number)
	if err != nil {
		return nil, err
	}
	return v.fetchHeader(ctx, hash)
}

// link extends trust from a verified header to its parent, and notes the
// parent's height.
func (v *verifier) link(h *Header) {
	v.LinkParent(h.Hash(), h.Number(), h.Eth().ParentHash)
}

// blockHashOf reads the hash of a block answer.
func blockHashOf(res jsontext.Value) (common.Hash, bool) {
	var b struct {
		Hash *common.Hash `json:"hash"`
	}
	if json.Unmarshal(res, &b) != nil || b.Hash == nil {
		return common.Hash{}, false
	}
	return *b.Hash, true
}

// fetchHeader returns the verified header of a trusted hash, from the
// ones kept or from a node (its fields checked against the hash; a node
// whose fields do not hash to it is at fault). Trust extends to its
// parent.
func (v *verifier) fetchHeader(ctx context.Context, hash common.Hash) (*Header, error) {
	if h, ok := v.headers.GetIfPresent(hash); ok {
		return h, verify.Hold(ctx, headerBytes)
	}
	return verify.OneFetch(&v.Base, ctx, hash, func(ctx context.Context) (*Header, error) {
		var h *Header
		_, err := v.Do(ctx, "eth_getBlockByHash", jsontext.Value(`["`+hash.Hex()+`",false]`), func(res jsontext.Value) error {
			if res.Kind() == 'n' {
				return fmt.Errorf("no block %s: %w", hash.Hex(), upstream.ErrMissing)
			}
			got, err := VerifyHeader(res, hash)
			if err != nil {
				return err
			}
			h = got
			return nil
		})
		if err != nil {
			return nil, err
		}
		v.headers.Set(hash, h)
		v.link(h)
		return h, nil
	})
}
