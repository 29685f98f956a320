package evmverify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/network/verify"
)

// verifiedMethod answers one EVM method from checked node answers; params
// are the call's params after its tag was pinned.
type verifiedMethod func(v *verifier, ctx context.Context, params jsontext.Value) (jsontext.Value, error)

// verifiedMethods are the methods a verifying network checks
// (docs/verify.md lists what each check is).
var verifiedMethods = map[string]verifiedMethod{
	"eth_blockNumber":                         (*verifier).blockNumber,
	"eth_chainId":                             (*verifier).chainID,
	"eth_getProof":                            (*verifier).getProof,
	"eth_getBalance":                          accountField((*Account).BalanceJSON),
	"eth_getTransactionCount":                 accountField((*Account).NonceJSON),
	"eth_getStorageAt":                        (*verifier).getStorageAt,
	"eth_getCode":                             (*verifier).getCode,
	"eth_getBlockByNumber":                    (*verifier).getBlock,
	"eth_getBlockByHash":                      (*verifier).getBlock,
	"eth_getTransactionByBlockNumberAndIndex": (*verifier).txByBlockAndIndex,
	"eth_getTransactionByBlockHashAndIndex":   (*verifier).txByBlockAndIndex,
	"eth_getTransactionByHash":                (*verifier).txByHash,
	"eth_getTransactionReceipt":               (*verifier).receipt,
	"eth_getBlockReceipts":                    (*verifier).blockReceipts,
	"eth_getLogs":                             (*verifier).getLogs,
	"eth_call":                                (*verifier).call,
	"eth_estimateGas":                         (*verifier).estimateGas,
}

// unverifiable is an error for a call nothing can check.
func unverifiable(what, reason string) error {
	return &verify.UnverifiableError{What: what, Reason: reason}
}

// splitParams decodes a positional params array (null or nothing is
// none). The elements are params' own bytes, not copies.
func splitParams(params jsontext.Value) ([]json.RawMessage, error) {
	if len(params) == 0 {
		return nil, nil
	}
	bad := unverifiable("params", "not a positional array")
	// What encoding/json let through before, each method's own reading
	// judges still.
	dec := jsontext.NewDecoder(bytes.NewBuffer(params), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	tok, err := dec.ReadToken()
	switch {
	case err != nil:
		return nil, bad
	case tok.Kind() == 'n':
	case tok.Kind() != '[':
		return nil, bad
	default:
		var ps []json.RawMessage
		for dec.PeekKind() != ']' {
			v, err := dec.ReadValue()
			if err != nil {
				return nil, bad
			}
			ps = append(ps, json.RawMessage(v))
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, bad
		}
		if _, err := dec.ReadToken(); err != io.EOF {
			return nil, bad
		}
		return ps, nil
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, bad
	}
	return nil, nil
}

// blockRef is a block as a call names it.
type blockRef struct {
	hash   common.Hash
	byHash bool
	number uint64
}

// parseBlock reads a block parameter: a number, a tag, a hash or an
// EIP-1898 object; missing means latest. Tags are resolved on the served
// chain; pending cannot be verified.
func (v *verifier) parseBlock(raw json.RawMessage) (blockRef, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return v.tag("latest")
	}
	if raw[0] == '{' {
		var o struct {
			BlockHash   *common.Hash `json:"blockHash"`
			BlockNumber *string      `json:"blockNumber"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return blockRef{}, unverifiable("block", "unreadable block object")
		}
		if o.BlockHash != nil {
			return blockRef{hash: *o.BlockHash, byHash: true}, nil
		}
		if o.BlockNumber != nil {
			raw, _ = json.Marshal(*o.BlockNumber)
		} else {
			return v.tag("latest")
		}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return blockRef{}, unverifiable("block", "unreadable block parameter")
	}
	if len(s) == 66 && strings.HasPrefix(s, "0x") {
		return blockRef{hash: common.HexToHash(s), byHash: true}, nil
	}
	if strings.HasPrefix(s, "0x") {
		n, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return blockRef{}, unverifiable("block", "unreadable block number")
		}
		return blockRef{number: n}, nil
	}
	return v.tag(s)
}

// tag resolves a block tag on the served chain.
func (v *verifier) tag(t string) (blockRef, error) {
	switch t {
	case "earliest":
		return blockRef{number: 0}, nil
	case "latest":
		if h, ok := v.Up.View().Head(); ok {
			return blockRef{number: h.Number}, nil
		}
	case "safe", "finalized":
		safe, final := v.Up.View().Marks()
		if t == "safe" && safe > 0 {
			return blockRef{number: safe}, nil
		}
		if t == "finalized" && final > 0 {
			return blockRef{number: final}, nil
		}
	case "pending":
		return blockRef{}, unverifiable("block", "pending state has no header to check it against")
	}
	return blockRef{}, unverifiable("block", "the tag "+t+" names no block on the served chain yet")
}

// resolve returns the trusted header of a block reference.
func (v *verifier) resolve(ctx context.Context, ref blockRef) (*Header, error) {
	if ref.byHash {
		return v.trustHash(ctx, ref.hash)
	}
	return v.headerAt(ctx, ref.number)
}

// trustHash returns the header of a block named by hash if that hash is
// trusted, or earns trust now: the header read by its hash, and a quorum
// of nodes naming the same hash at its height.
func (v *verifier) trustHash(ctx context.Context, hash common.Hash) (*Header, error) {
	if _, ok := v.Trust.Trusted(hash); ok {
		return v.fetchHeader(ctx, hash)
	}
	h, err := v.fetchHeader(ctx, hash)
	if err != nil {
		return nil, err
	}
	if _, ok := v.Trust.Trusted(hash); ok {
		return h, nil
	}
	at, err := v.QuorumAt(ctx, h.Number())
	if err != nil {
		return nil, err
	}
	if at != hash {
		if _, ok := v.Trust.Trusted(hash); !ok {
			return nil, unverifiable("block "+hash.Hex(), "not on the chain a quorum of nodes follows")
		}
	}
	return h, nil
}

// account proves an account (and slots) at a trusted header: from what
// was proven at that block before (by a state read or a local call's
// fetch) when it has them all, else from a node's eth_getProof, checked
// against the header's state root. raw is the node's answer, kept only
// when keepRaw (and then always asked of a node).
func (v *verifier) account(ctx context.Context, h *Header, addr common.Address, slots []common.Hash, keepRaw bool) (*Account, jsontext.Value, error) {
	if !keepRaw {
		if acc, ok := v.exec.Proven(h, addr, slots); ok {
			return acc, nil, nil
		}
	}
	b := make([]byte, 0, 64+len(slots)*69+96)
	b = append(b, `["`...)
	b = append(b, addr.Hex()...)
	b = append(b, `",[`...)
	for i, s := range slots {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, s.Hex()...)
		b = append(b, '"')
	}
	b = append(b, `],{"blockHash":"`...)
	b = append(b, h.Hash().Hex()...)
	b = append(b, `"}]`...)
	type proven struct {
		acc *Account
		raw jsontext.Value
	}
	p, _, err := verify.DoChecked(&v.Base, ctx, "eth_getProof", jsontext.Value(b), func(res jsontext.Value) (proven, error) {
		acc, err := v.exec.Prove(res, h, addr, slots)
		if err != nil || !keepRaw {
			return proven{acc: acc}, err
		}
		return proven{acc, append(jsontext.Value(nil), res...)}, nil
	})
	return p.acc, p.raw, err
}

func parseAddress(raw json.RawMessage) (common.Address, error) {
	var s string
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		s = string(raw[1 : len(raw)-1]) // no escapes: the string is its bytes
	} else if err := json.Unmarshal(raw, &s); err != nil {
		return common.Address{}, unverifiable("address", "unreadable address")
	}
	if !common.IsHexAddress(s) {
		return common.Address{}, unverifiable("address", "unreadable address")
	}
	return common.HexToAddress(s), nil
}

// stateAt reads the address and block of a state read: params
// [address, (slot,) block].
func (v *verifier) stateAt(ctx context.Context, params jsontext.Value, blockAt int) (common.Address, []json.RawMessage, *Header, error) {
	ps, err := splitParams(params)
	if err != nil || len(ps) < blockAt {
		return common.Address{}, nil, nil, unverifiable("params", "too few params")
	}
	addr, err := parseAddress(ps[0])
	if err != nil {
		return common.Address{}, nil, nil, err
	}
	var raw json.RawMessage
	if len(ps) > blockAt {
		raw = ps[blockAt]
	}
	ref, err := v.parseBlock(raw)
	if err != nil {
		return common.Address{}, nil, nil, err
	}
	h, err := v.resolve(ctx, ref)
	return addr, ps, h, err
}

// accountField answers a read of one field of an account (its balance,
// its nonce) from the account's verified proof.
func accountField(field func(*Account) []byte) verifiedMethod {
	return func(v *verifier, ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
		addr, _, h, err := v.stateAt(ctx, params, 1)
		if err != nil {
			return nil, err
		}
		acc, _, err := v.account(ctx, h, addr, nil, false)
		if err != nil {
			return nil, err
		}
		return field(acc), nil
	}
}

func (v *verifier) getStorageAt(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	addr, ps, h, err := v.stateAt(ctx, params, 2)
	if err != nil {
		return nil, err
	}
	var s string
	if json.Unmarshal(ps[1], &s) != nil {
		return nil, unverifiable("slot", "unreadable slot")
	}
	slot, err := ParseSlot(s)
	if err != nil {
		return nil, unverifiable("slot", err.Error())
	}
	acc, _, err := v.account(ctx, h, addr, []common.Hash{slot}, false)
	if err != nil {
		return nil, err
	}
	out, _ := acc.StorageJSON(slot)
	return out, nil
}

func (v *verifier) getProof(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	addr, ps, h, err := v.stateAt(ctx, params, 2)
	if err != nil {
		return nil, err
	}
	var keys []string
	if json.Unmarshal(ps[1], &keys) != nil {
		return nil, unverifiable("storageKeys", "unreadable storage keys")
	}
	slots := make([]common.Hash, len(keys))
	for i, k := range keys {
		if slots[i], err = ParseSlot(k); err != nil {
			return nil, unverifiable("storageKeys", err.Error())
		}
	}
	// The node is asked for the keys as the client wrote them, so that
	// the answer echoes them as the client expects.
	ask := jsontext.Value(`[` + string(ps[0]) + `,` + string(ps[1]) + `,{"blockHash":"` + h.Hash().Hex() + `"}]`)
	raw, _, err := verify.DoChecked(&v.Base, ctx, "eth_getProof", ask, func(res jsontext.Value) (jsontext.Value, error) {
		if _, err := v.exec.Prove(res, h, addr, slots); err != nil {
			return nil, err
		}
		return append(jsontext.Value(nil), res...), nil
	})
	return raw, err
}

// getCode fetches the proof and the code at once and checks the code
// against the proven code hash; a node whose code does not hash to it is
// at fault, and the code is asked of the next node.
func (v *verifier) getCode(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	addr, _, h, err := v.stateAt(ctx, params, 1)
	if err != nil {
		return nil, err
	}
	type codeAnswer struct {
		raw    jsontext.Value
		served string
		err    error
	}
	ask := jsontext.Value(`["` + addr.Hex() + `",{"blockHash":"` + h.Hash().Hex() + `"}]`)
	fetch := func() chan codeAnswer {
		ch := make(chan codeAnswer, 1)
		go func() {
			served := ""
			raw, err := v.Up.Do(ctx, upstream.Request{Method: "eth_getCode", Params: ask, Served: &served}, nil)
			ch <- codeAnswer{raw, served, err}
		}()
		return ch
	}
	early := fetch()
	acc, _, err := v.account(ctx, h, addr, nil, false)
	if err != nil {
		return nil, err
	}
	for range len(v.Up.Names()) {
		ans := <-early
		if ans.err != nil {
			return nil, ans.err
		}
		code, err := VerifyCode(ans.raw, acc)
		if err == nil {
			return jsontext.Value(`"0x` + common.Bytes2Hex(code) + `"`), nil
		}
		v.Fault(ans.served, "eth_getCode", err)
		v.Up.Fault(ans.served)
		early = fetch()
	}
	return nil, &verify.MismatchError{What: "eth_getCode", Got: "every node's code differs from the proven code hash"}
}

// block returns the verified block of a trusted hash (full transactions).
func (v *verifier) block(ctx context.Context, hash common.Hash) (*Block, error) {
	if b, ok := v.blocks.GetIfPresent(hash); ok {
		return b, verify.Hold(ctx, b.Size())
	}
	b, _, err := verify.DoChecked(&v.Base, ctx, "eth_getBlockByHash", jsontext.Value(`["`+hash.Hex()+`",true]`), func(res jsontext.Value) (*Block, error) {
		return v.chain.VerifyBlock(res, hash)
	})
	if err != nil {
		return nil, err
	}
	v.blocks.Set(hash, b)
	return b, nil
}

// receiptsOf returns the verified receipts of a verified block.
func (v *verifier) receiptsOf(ctx context.Context, b *Block) (*Receipts, error) {
	hash := b.Header.Hash()
	if rs, ok := v.receipts.GetIfPresent(hash); ok {
		return rs, verify.Hold(ctx, rs.Size())
	}
	rs, _, err := verify.DoChecked(&v.Base, ctx, "eth_getBlockReceipts", jsontext.Value(`["`+hash.Hex()+`"]`), func(res jsontext.Value) (*Receipts, error) {
		return v.chain.VerifyReceipts(res, b)
	})
	if err != nil {
		return nil, err
	}
	v.receipts.Set(hash, rs)
	return rs, nil
}

// blockOf resolves the block param at index i and returns its verified
// block.
func (v *verifier) blockOf(ctx context.Context, ps []json.RawMessage, i int) (*Block, error) {
	var raw json.RawMessage
	if len(ps) > i {
		raw = ps[i]
	}
	ref, err := v.parseBlock(raw)
	if err != nil {
		return nil, err
	}
	h, err := v.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return v.block(ctx, h.Hash())
}

func (v *verifier) getBlock(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	ps, err := splitParams(params)
	if err != nil || len(ps) < 1 {
		return nil, unverifiable("params", "too few params")
	}
	b, err := v.blockOf(ctx, ps, 0)
	if err != nil {
		return nil, err
	}
	full := len(ps) > 1 && string(ps[1]) == "true"
	return b.JSON(full), nil
}

func (v *verifier) txByBlockAndIndex(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	ps, err := splitParams(params)
	if err != nil || len(ps) < 2 {
		return nil, unverifiable("params", "too few params")
	}
	var s string
	if json.Unmarshal(ps[1], &s) != nil {
		return nil, unverifiable("index", "unreadable index")
	}
	i, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil {
		return nil, unverifiable("index", "unreadable index")
	}
	b, err := v.blockOf(ctx, ps, 0)
	if err != nil {
		return nil, err
	}
	return b.TransactionJSON(i), nil
}

// txBlock asks a node where a transaction is, then checks that the
// trusted block there holds it. A node that names a block without it is
// at fault; one that knows no such transaction cannot be checked.
func (v *verifier) txBlock(ctx context.Context, params jsontext.Value) (*Block, uint64, error) {
	ps, err := splitParams(params)
	if err != nil || len(ps) < 1 {
		return nil, 0, unverifiable("params", "too few params")
	}
	var s string
	if json.Unmarshal(ps[0], &s) != nil {
		return nil, 0, unverifiable("hash", "unreadable transaction hash")
	}
	txHash := common.HexToHash(s)
	type place struct {
		b *Block
		i uint64
	}
	p, _, err := verify.DoChecked(&v.Base, ctx, "eth_getTransactionByHash", jsontext.Value(`["`+txHash.Hex()+`"]`), func(res jsontext.Value) (place, error) {
		var at struct {
			BlockHash *common.Hash `json:"blockHash"`
		}
		if json.Unmarshal(res, &at) != nil {
			return place{}, &verify.MalformedError{What: "transaction"}
		}
		if at.BlockHash == nil {
			return place{}, unverifiable("transaction "+txHash.Hex(), "not in a block yet")
		}
		h, err := v.trustHash(ctx, *at.BlockHash)
		if err != nil {
			if errors.Is(err, verify.ErrUnverifiable) {
				return place{}, err
			}
			return place{}, fmt.Errorf("%w: %w", upstream.ErrMissing, err)
		}
		b, err := v.block(ctx, h.Hash())
		if err != nil {
			return place{}, fmt.Errorf("%w: %w", upstream.ErrMissing, err)
		}
		i, ok := b.Index(txHash)
		if !ok {
			return place{}, &verify.MismatchError{What: "transaction.blockHash", Got: at.BlockHash.Hex(), Want: "a block holding " + txHash.Hex()}
		}
		return place{b, i}, nil
	})
	if err != nil {
		if verify.IsMissingOnly(err) {
			// Every node said null: nobody can prove a transaction absent.
			return nil, 0, unverifiable("transaction "+txHash.Hex(), "no node knows it; absence cannot be proven")
		}
		return nil, 0, err
	}
	return p.b, p.i, nil
}

func (v *verifier) txByHash(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	b, i, err := v.txBlock(ctx, params)
	if err != nil {
		return nil, err
	}
	return b.TransactionJSON(i), nil
}

func (v *verifier) receipt(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	b, i, err := v.txBlock(ctx, params)
	if err != nil {
		return nil, err
	}
	rs, err := v.receiptsOf(ctx, b)
	if err != nil {
		return nil, err
	}
	out, _ := rs.ReceiptJSON(b.Transactions[i].Hash())
	return out, nil
}

func (v *verifier) blockReceipts(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	ps, err := splitParams(params)
	if err != nil || len(ps) < 1 {
		return nil, unverifiable("params", "too few params")
	}
	b, err := v.blockOf(ctx, ps, 0)
	if err != nil {
		return nil, err
	}
	rs, err := v.receiptsOf(ctx, b)
	if err != nil {
		return nil, err
	}
	return rs.JSON(), nil
}

func (v *verifier) blockNumber(ctx context.Context, _ jsontext.Value) (jsontext.Value, error) {
	ref, err := v.tag("latest")
	if err != nil {
		return nil, err
	}
	if _, err := v.headerAt(ctx, ref.number); err != nil {
		return nil, err
	}
	return jsontext.Value(`"` + verify.HexNumber(ref.number) + `"`), nil
}

func (v *verifier) chainID(context.Context, jsontext.Value) (jsontext.Value, error) {
	return jsontext.Value(`"0x` + v.chain.Config().ChainID.Text(16) + `"`), nil
}

// callError is a locally run call's failure as the node would send it.
func callError(err error) error {
	var ce *CallError
	if !errors.As(err, &ce) {
		return err
	}
	e := &jsonrpc.Error{Code: ce.Code, Message: ce.Message}
	if ce.Data != "" {
		e.Data = jsontext.Value(`"` + ce.Data + `"`)
	}
	return &verify.LocalAnswer{RPC: e}
}

func (v *verifier) call(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	return v.execute(ctx, params, v.exec.Call)
}

func (v *verifier) estimateGas(ctx context.Context, params jsontext.Value) (jsontext.Value, error) {
	return v.execute(ctx, params, v.exec.EstimateGas)
}

// execute runs eth_call or eth_estimateGas locally at the trusted block.
// A code mismatch found inside the run blames the nodes that served code
// for it, and the run is tried again.
func (v *verifier) execute(ctx context.Context, params jsontext.Value, run func(context.Context, *Header, []byte) ([]byte, error)) (jsontext.Value, error) {
	ps, err := splitParams(params)
	if err != nil || len(ps) < 1 {
		return nil, unverifiable("params", "too few params")
	}
	if len(ps) > 2 && string(ps[2]) != "null" && string(ps[2]) != "{}" {
		return nil, unverifiable("call", "state overrides are not chain state")
	}
	var raw json.RawMessage
	if len(ps) > 1 {
		raw = ps[1]
	}
	ref, err := v.parseBlock(raw)
	if err != nil {
		return nil, err
	}
	h, err := v.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	for range len(v.Up.Names()) {
		rec := &codeNodes{}
		out, err := run(context.WithValue(ctx, codeNodesKey{}, rec), h, ps[0])
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, verify.ErrMismatch) {
			return nil, callError(err)
		}
		for _, node := range rec.list() {
			v.Fault(node, "eth_getCode", err)
			v.Up.Fault(node)
		}
	}
	return nil, &verify.MismatchError{What: "eth_call", Got: "every node's state failed its check"}
}

// codeNodes records which nodes served code during one local run.
type codeNodes struct {
	mu    sync.Mutex
	nodes []string
}

type codeNodesKey struct{}

func (c *codeNodes) add(n string) {
	c.mu.Lock()
	c.nodes = append(c.nodes, n)
	c.mu.Unlock()
}

func (c *codeNodes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.nodes...)
}

// proofSource is the executor's way to the nodes: proofs are checked
// against the trusted header as they arrive (a wrong one is the node's
// fault and the next node is asked); code is checked by the executor
// against the proven code hash.
type proofSource struct{ v *verifier }

func (p proofSource) GetProof(ctx context.Context, addr common.Address, slots []common.Hash, block common.Hash) ([]byte, error) {
	h, ok := p.v.headers.GetIfPresent(block)
	if !ok {
		return nil, fmt.Errorf("no trusted header %s", block.Hex())
	}
	_, raw, err := p.v.account(ctx, h, addr, slots, true)
	return raw, err
}

func (p proofSource) GetCode(ctx context.Context, addr common.Address, block common.Hash) ([]byte, error) {
	served := ""
	res, err := p.v.Up.Do(ctx, upstream.Request{Method: "eth_getCode", Params: jsontext.Value(`["` + addr.Hex() + `",{"blockHash":"` + block.Hex() + `"}]`), Served: &served}, nil)
	if rec, ok := ctx.Value(codeNodesKey{}).(*codeNodes); ok && err == nil {
		rec.add(served)
	}
	return res, err
}

func (p proofSource) CreateAccessList(ctx context.Context, call []byte, block common.Hash) ([]byte, error) {
	return p.v.Up.Do(ctx, upstream.Request{Method: "eth_createAccessList", Params: jsontext.Value(`[` + string(call) + `,{"blockHash":"` + block.Hex() + `"}]`)}, nil)
}
