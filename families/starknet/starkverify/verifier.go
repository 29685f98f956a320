// Package starkverify is the starknet family's verifier (docs/verify.md):
// a rollup network's answers checked against block headers it trusts
// (network/verify: a quorum of nodes, the checkpoint, parent links),
// each header's hash recomputed from its fields (starkblock), state
// reads answered from storage proofs checked against the header's state
// root (starkproof). The network calls it through verify.Verifier; the
// family registers New in package families.
package starkverify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/maypok86/otter/v2"

	"github.com/porticohq/portico/families/starknet/starkblock"
	"github.com/porticohq/portico/families/starknet/starknettx"
	"github.com/porticohq/portico/families/starknet/starkproof"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/network/verify"
)

// starkVerifier checks a rollup (starknet family) network's answers. A
// block hash is trusted as on EVM networks (a quorum of nodes at its
// height, the checkpoint, a parent link); its header is trusted when its
// fields hash to it (starkblock: the node's header must carry the spec
// 0.10 commitments and counts), so its new_root is the state root that
// storage proofs are checked against. State reads (getStorageAt,
// getNonce, getClassHashAt) are answered from a verified
// starknet_getStorageProof at the trusted block.
type starkVerifier struct {
	verify.Base
	checkpoint string
	cpMu       sync.Mutex
	cpDone     bool // the checkpoint's header was read; guarded by cpMu

	headers *otter.Cache[common.Hash, *starkblock.Header]
}

// starkMethod answers one rollup method from checked node answers.
type starkMethod func(v *starkVerifier, ctx context.Context, params jsontext.Value) (jsontext.Value, error)

// starkVerifiedMethods are the rollup methods a verifying network checks
// (docs/verify.md).
var starkVerifiedMethods = map[string]starkMethod{
	"starknet_blockNumber":        (*starkVerifier).blockNumber,
	"starknet_blockHashAndNumber": (*starkVerifier).blockHashAndNumber,
	"starknet_getStorageProof":    (*starkVerifier).getStorageProof,
	"starknet_getStorageAt":       (*starkVerifier).getStorageAt,
	"starknet_getNonce":           starkContractField((*starkproof.Proven).Nonce),
	"starknet_getClassHashAt":     starkContractField((*starkproof.Proven).ClassHashAt),
}

// New builds a rollup network's verifier (the starknet family's
// Verifier): it starts nothing and calls no node.
func New(env verify.Env) (verify.Verifier, error) {
	v := &starkVerifier{checkpoint: env.Checkpoint,
		headers: otter.Must(&otter.Options[common.Hash, *starkblock.Header]{MaximumSize: 8192})}
	v.Init(env, func(number uint64) (string, jsontext.Value) {
		return "starknet_getBlockWithTxHashes", jsontext.Value(`[{"block_number":` + strconv.FormatUint(number, 10) + `}]`)
	}, starkBlockHashOf)
	return v, nil
}

func (v *starkVerifier) Method(name string) (verify.Handler, bool) {
	m, ok := starkVerifiedMethods[name]
	if !ok {
		return nil, false
	}
	return func(ctx context.Context, params jsontext.Value) (jsontext.Value, error) { return m(v, ctx, params) }, true
}

func (v *starkVerifier) TrustHead(ctx context.Context, number uint64) error {
	_, _, err := v.headerAt(ctx, number)
	return err
}

// ready reads the checkpoint's header once.
func (v *starkVerifier) Ready(ctx context.Context) error {
	if v.checkpoint == "" {
		return nil
	}
	v.cpMu.Lock()
	defer v.cpMu.Unlock()
	if v.cpDone {
		return nil
	}
	hash := common.HexToHash(v.checkpoint)
	h, err := v.fetchHeader(ctx, hash)
	if err != nil {
		v.Log.Error("verify: the checkpoint's header could not be read", "network", v.Network, "err", err)
		return nil
	}
	v.Trust.Checkpoint(hash, h.Number)
	v.TrustedNumber(h.Number, hash)
	v.LinkParent(hash, h.Number, feltHash(h.Parent))
	v.cpDone = true
	return nil
}

// starkBlockHashOf reads a block's hash from a getBlockWith* answer.
func starkBlockHashOf(res jsontext.Value) (common.Hash, bool) {
	var b struct {
		Hash string `json:"block_hash"`
	}
	if json.Unmarshal(res, &b) != nil {
		return common.Hash{}, false
	}
	f, err := starknettx.ParseFelt(b.Hash)
	if err != nil {
		return common.Hash{}, false
	}
	return feltHash(f), true
}

func feltHash(f starkblock.Felt) common.Hash { return common.Hash(f.Bytes()) }

func hashFelt(h common.Hash) starkblock.Felt {
	var f starkblock.Felt
	f.SetBytes(h[:])
	return f
}

// feltText is a FELT as the spec writes it: 0x and no leading zeros.
func feltText(h common.Hash) string {
	f := hashFelt(h)
	return starknettx.Hex(&f)
}

// fetchHeader returns the verified header of a trusted hash: read by hash
// from a node, its fields hashed (starkblock) and compared with the hash.
// A node whose fields do not hash to it is at fault; a node whose headers
// lack the fields the hash needs (spec before 0.10) is passed over. Trust
// extends to the parent.
func (v *starkVerifier) fetchHeader(ctx context.Context, hash common.Hash) (*starkblock.Header, error) {
	if h, ok := v.headers.GetIfPresent(hash); ok {
		return h, nil
	}
	return verify.OneFetch(&v.Base, ctx, hash, func(ctx context.Context) (*starkblock.Header, error) {
		params := jsontext.Value(`[{"block_hash":"` + feltText(hash) + `"}]`)
		h, _, err := verify.DoChecked(&v.Base, ctx, "starknet_getBlockWithTxHashes", params, func(res jsontext.Value) (*starkblock.Header, error) {
			return checkStarkHeader(res, hash)
		})
		if err != nil {
			return nil, err
		}
		v.headers.Set(hash, h)
		v.LinkParent(hash, h.Number, feltHash(h.Parent))
		return h, nil
	})
}

// checkStarkHeader decodes a node's block header and checks that its
// fields hash to the hash asked for.
func checkStarkHeader(res jsontext.Value, hash common.Hash) (*starkblock.Header, error) {
	h, claimed, err := starkblock.Decode(res)
	var fe *starkblock.FieldError
	switch {
	case errors.As(err, &fe) && strings.HasSuffix(fe.Reason, "is missing"):
		return nil, &verify.UnverifiableError{What: "block header", Reason: "the node's header has no " + fe.Field + ": a block hash is recomputed from the commitments and counts that spec 0.10 headers carry"}
	case err != nil:
		return nil, &verify.MalformedError{What: "block header", Err: err}
	}
	if got := feltHash(claimed); got != hash {
		return nil, &verify.MismatchError{What: "block_hash", Want: feltText(hash), Got: feltText(got)}
	}
	computed, err := h.Hash()
	if errors.Is(err, starkblock.ErrVersion) {
		return nil, &verify.UnverifiableError{What: "block header", Reason: err.Error()}
	}
	if feltHash(computed) != hash {
		return nil, &verify.MismatchError{What: "block header", Want: "fields that hash to " + feltText(hash), Got: "fields that hash to " + starknettx.Hex(&computed)}
	}
	return h, nil
}

// headerAt returns the trusted header at a height.
func (v *starkVerifier) headerAt(ctx context.Context, number uint64) (common.Hash, *starkblock.Header, error) {
	hash, err := v.TrustedHashAt(ctx, number)
	if err != nil {
		return common.Hash{}, nil, err
	}
	h, err := v.fetchHeader(ctx, hash)
	return hash, h, err
}

// trustHash returns the header of a block named by hash if the hash is
// trusted or earns trust now (a quorum names it at its height).
func (v *starkVerifier) trustHash(ctx context.Context, hash common.Hash) (*starkblock.Header, error) {
	h, err := v.fetchHeader(ctx, hash)
	if err != nil {
		return nil, err
	}
	if _, ok := v.Trust.Trusted(hash); ok {
		return h, nil
	}
	at, err := v.QuorumAt(ctx, h.Number)
	if err != nil {
		return nil, err
	}
	if _, ok := v.Trust.Trusted(hash); !ok && at != hash {
		return nil, unverifiable("block "+feltText(hash), "not on the chain a quorum of nodes follows")
	}
	return h, nil
}

// starkParams reads a call's params, by name or by position, into the
// named members.
func starkParams(params jsontext.Value, names ...string) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if len(params) == 0 {
		return out, nil
	}
	if params.Kind() == '{' {
		if err := json.Unmarshal(params, &out); err != nil {
			return nil, unverifiable("params", "unreadable")
		}
		return out, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(params, &list); err != nil {
		return nil, unverifiable("params", "neither an object nor an array")
	}
	for i, raw := range list {
		if i < len(names) {
			out[names[i]] = raw
		}
	}
	return out, nil
}

// block resolves a block_id to a trusted block: a tag on the served
// chain, a number, or a hash. Pending state has no header to check.
func (v *starkVerifier) block(ctx context.Context, raw json.RawMessage) (common.Hash, *starkblock.Header, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return common.Hash{}, nil, unverifiable("block_id", "missing")
	}
	if raw[0] == '"' {
		var tag string
		json.Unmarshal(raw, &tag)
		if tag != "latest" {
			return common.Hash{}, nil, unverifiable("block_id", "the tag "+tag+" names no sealed block whose header can be checked")
		}
		head, ok := v.Up.View().Head()
		if !ok {
			return common.Hash{}, nil, unverifiable("block_id", "the served chain has no head yet")
		}
		return v.headerAt(ctx, head.Number)
	}
	var id struct {
		Number *uint64 `json:"block_number"`
		Hash   *string `json:"block_hash"`
	}
	if err := json.Unmarshal(raw, &id); err != nil {
		return common.Hash{}, nil, unverifiable("block_id", "unreadable")
	}
	switch {
	case id.Hash != nil:
		f, err := starknettx.ParseFelt(*id.Hash)
		if err != nil {
			return common.Hash{}, nil, unverifiable("block_id.block_hash", "not a felt")
		}
		h, err := v.trustHash(ctx, feltHash(f))
		return feltHash(f), h, err
	case id.Number != nil:
		return v.headerAt(ctx, *id.Number)
	}
	return common.Hash{}, nil, unverifiable("block_id", "names neither block_number nor block_hash")
}

func (v *starkVerifier) blockNumber(ctx context.Context, _ jsontext.Value) (jsontext.Value, error) {
	head, ok := v.Up.View().Head()
	if !ok {
		return nil, unverifiable("block", "the served chain has no head yet")
	}
	if _, _, err := v.headerAt(ctx, head.Number); err != nil {
		return nil, err
	}
	return jsontext.Value(strconv.FormatUint(head.Number, 10)), nil
}

func (v *starkVerifier) blockHashAndNumber(ctx context.Context, _ jsontext.Value) (jsontext.Value, error) {
	head, ok := v.Up.View().Head()
	if !ok {
		return nil, unverifiable("block", "the served chain has no head yet")
	}
	hash, _, err := v.headerAt(ctx, head.Number)
	if err != nil {
		return nil, err
	}
	return jsontext.Value(`{"block_hash":"` + feltText(hash) + `","block_number":` + strconv.FormatUint(head.Number, 10) + `}`), nil
}

// proofParams renders a storage proof request at a trusted block.
func proofParams(hash common.Hash, req starkproof.Request) jsontext.Value {
	var b strings.Builder
	list := func(fs []starkblock.Felt) {
		b.WriteByte('[')
		for i := range fs {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + starknettx.Hex(&fs[i]) + `"`)
		}
		b.WriteByte(']')
	}
	b.WriteString(`[{"block_hash":"` + feltText(hash) + `"},`)
	list(req.Classes)
	b.WriteByte(',')
	list(req.Contracts)
	b.WriteString(`,[`)
	for i, ck := range req.Storage {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"contract_address":"` + starknettx.Hex(&ck.Contract) + `","storage_keys":`)
		list(ck.Keys)
		b.WriteByte('}')
	}
	b.WriteString(`]]`)
	return jsontext.Value(b.String())
}

// proven asks for a storage proof at a trusted block and checks it
// against the block's hash and state root.
func (v *starkVerifier) proven(ctx context.Context, hash common.Hash, h *starkblock.Header, req starkproof.Request) (*starkproof.Proven, jsontext.Value, error) {
	type answer struct {
		p   *starkproof.Proven
		raw jsontext.Value
	}
	a, _, err := verify.DoChecked(&v.Base, ctx, "starknet_getStorageProof", proofParams(hash, req), func(res jsontext.Value) (answer, error) {
		p, err := starkproof.Verify(res, hashFelt(hash), h.StateRoot, req)
		return answer{p, append(jsontext.Value(nil), res...)}, err
	})
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) && rpcErr.Code == errProofNotSupported {
		// Nodes keep proofs for recent blocks only (a node right after a
		// new block may keep them for that block alone).
		return nil, nil, unverifiable("block "+feltText(hash), "the node keeps no storage proofs for it (error 42)")
	}
	return a.p, a.raw, err
}

func (v *starkVerifier) getStorageProof(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	ps, err := starkParams(params, "block_id", "class_hashes", "contract_addresses", "contracts_storage_keys")
	if err != nil {
		return nil, err
	}
	var req starkproof.Request
	felts := func(name string) ([]starkblock.Felt, error) {
		var ss []string
		if raw := ps[name]; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &ss); err != nil {
				return nil, unverifiable(name, "not a list of felts")
			}
		}
		out := make([]starkblock.Felt, len(ss))
		for i, s := range ss {
			if out[i], err = starknettx.ParseFelt(s); err != nil {
				return nil, unverifiable(fmt.Sprintf("%s[%d]", name, i), "not a felt")
			}
		}
		return out, nil
	}
	if req.Classes, err = felts("class_hashes"); err != nil {
		return nil, err
	}
	if req.Contracts, err = felts("contract_addresses"); err != nil {
		return nil, err
	}
	var keys []struct {
		Contract string   `json:"contract_address"`
		Keys     []string `json:"storage_keys"`
	}
	if raw := ps["contracts_storage_keys"]; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &keys); err != nil {
			return nil, unverifiable("contracts_storage_keys", "unreadable")
		}
	}
	for i, k := range keys {
		ck := starkproof.ContractKeys{}
		if ck.Contract, err = starknettx.ParseFelt(k.Contract); err != nil {
			return nil, unverifiable(fmt.Sprintf("contracts_storage_keys[%d].contract_address", i), "not a felt")
		}
		for j, s := range k.Keys {
			f, err := starknettx.ParseFelt(s)
			if err != nil {
				return nil, unverifiable(fmt.Sprintf("contracts_storage_keys[%d].storage_keys[%d]", i, j), "not a felt")
			}
			ck.Keys = append(ck.Keys, f)
		}
		req.Storage = append(req.Storage, ck)
	}
	hash, h, err := v.block(ctx, ps["block_id"])
	if err != nil {
		return nil, err
	}
	_, raw, err := v.proven(ctx, hash, h, req)
	return raw, err
}

// contractAt reads a state read's contract address and block.
func (v *starkVerifier) contractAt(ctx context.Context, params jsontext.Value, names ...string) (map[string]json.RawMessage, starkblock.Felt, common.Hash, *starkblock.Header, error) {
	ps, err := starkParams(params, names...)
	if err != nil {
		return nil, starkblock.Felt{}, common.Hash{}, nil, err
	}
	var s string
	if json.Unmarshal(ps["contract_address"], &s) != nil {
		return nil, starkblock.Felt{}, common.Hash{}, nil, unverifiable("contract_address", "missing or not a string")
	}
	addr, err := starknettx.ParseFelt(s)
	if err != nil {
		return nil, starkblock.Felt{}, common.Hash{}, nil, unverifiable("contract_address", "not a felt")
	}
	hash, h, err := v.block(ctx, ps["block_id"])
	if err != nil {
		return nil, starkblock.Felt{}, common.Hash{}, nil, err
	}
	return ps, addr, hash, h, nil
}

// errProofNotSupported is the spec's STORAGE_PROOF_NOT_SUPPORTED: the
// block is older than the node keeps proofs for.
const errProofNotSupported = 42

// errContractNotFound is the spec's answer for a contract that is not
// deployed at the block; proven, it is a verified answer.
func errContractNotFound() error {
	return &verify.LocalAnswer{RPC: &jsonrpc.Error{Code: 20, Message: "Contract not found"}}
}

// starkContractField answers getNonce or getClassHashAt from the
// contract's proven leaf.
func starkContractField(field func(*starkproof.Proven, starkproof.Felt) ([]byte, bool)) starkMethod {
	return func(v *starkVerifier, ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
		_, addr, hash, h, err := v.contractAt(ctx, params, "block_id", "contract_address")
		if err != nil {
			return nil, err
		}
		p, _, err := v.proven(ctx, hash, h, starkproof.Request{Contracts: []starkblock.Felt{addr}})
		if err != nil {
			return nil, err
		}
		if ans, ok := field(p, addr); ok {
			return ans, nil
		}
		return nil, errContractNotFound()
	}
}

func (v *starkVerifier) getStorageAt(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	ps, addr, hash, h, err := v.contractAt(ctx, params, "contract_address", "key", "block_id")
	if err != nil {
		return nil, err
	}
	var s string
	if json.Unmarshal(ps["key"], &s) != nil {
		return nil, unverifiable("key", "missing or not a string")
	}
	key, err := starknettx.ParseFelt(s)
	if err != nil {
		return nil, unverifiable("key", "not a felt")
	}
	p, _, err := v.proven(ctx, hash, h, starkproof.Request{Contracts: []starkblock.Felt{addr},
		Storage: []starkproof.ContractKeys{{Contract: addr, Keys: []starkblock.Felt{key}}}})
	if err != nil {
		return nil, err
	}
	if !p.Contracts[addr].Deployed {
		return nil, errContractNotFound()
	}
	ans, ok := p.StorageAt(addr, key)
	if !ok {
		return nil, fmt.Errorf("storage proof: key %s not proven: %w", s, upstream.ErrMissing)
	}
	return ans, nil
}

// unverifiable is an error for a call nothing can check.
func unverifiable(what, reason string) error {
	return &verify.UnverifiableError{What: what, Reason: reason}
}
