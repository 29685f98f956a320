// Package evm is the method table of the EVM family: eth_getProof and
// eth_getTransactionByBlockHashAndIndex with full params validation (also
// under the seed's names evm_getProof and
// evm_getTransactionByBlockHashAndIndex), rules for the methods whose
// answers name a block (what is cached, how a tag is pinned), and the
// method list of the Ethereum execution API spec (methods.go): every eth_
// and net_ method served by default, the debug, trace and txpool groups
// off until a network enables them. Every eth_ method also answers as
// evm_. Params of methods without full validation pass as they came.
//
// Rules follow go-ethereum where the seed is silent: storage keys may be
// shorter than 32 bytes ("0x0" is slot 0), block numbers are at most int64,
// and a block may be named by number, tag, hash or an EIP-1898 object. The
// seed lists the block as position 3 of eth_getProof but real nodes require
// it; when a call leaves it out, the node is sent "latest".
package evm

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/rpcparams"
)

// Family is the EVM family's name.
const Family portico.Family = "evm"

// Credit costs of the family's methods.
const (
	CostGetProof                          = 150
	CostGetTransactionByBlockHashAndIndex = 150
	DefaultCost                           = 80
)

// MaxStorageKeys bounds the storage keys of one eth_getProof call; each key
// costs the node a trie walk.
const MaxStorageKeys = 1024

// Table returns the EVM family's method table.
func Table() portico.Table {
	return withNodes(portico.Table{
		Family: Family,
		Methods: []portico.Method{
			{
				Name:    "eth_getProof",
				Aliases: []string{"evm_getProof"},
				Params:  GetProofParams,
				Cost:    CostGetProof,
			},
			{
				Name:    "eth_getTransactionByBlockHashAndIndex",
				Aliases: []string{"evm_getTransactionByBlockHashAndIndex"},
				Params:  GetTransactionByBlockHashAndIndexParams,
				Cost:    CostGetTransactionByBlockHashAndIndex,
			},
		},
		DefaultCost:   DefaultCost,
		Costs:         Costs(),
		Chain:         Chain(),
		Subscriptions: Subscriptions(),
		Known:         knownRules(),
		Writes:        append([]string{"eth_sendRawTransaction", "eth_sendTransaction"}, filterMethods...),
		Contracts:     Contracts(),
		AliasPrefixes: map[string]string{"evm_": "eth_"},
		// Any namespace, so that a network can name engine_, testing_ or
		// admin_ methods; none of them passes unless named.
		NamePattern:  `^[a-z][a-z0-9]*_[A-Za-z0-9]+$`,
		DefaultAllow: defaultAllow(),
		Optional:     optional(),
		KeyForm:      portico.KeyHexFold,
	})
}

var blockTags = []string{"latest", "earliest", "pending", "safe", "finalized"}

// GetProofParams checks [address, storageKeys, block?] and returns the
// params with the block filled in when it was left out. A proof at a block
// named by hash never changes.
func GetProofParams(raw jsontext.Value) (portico.Params, error) {
	p, err := rpcparams.Positional(raw, 2, "address", "storageKeys", "block")
	if err != nil {
		return portico.Params{}, err
	}
	if err := address(p[0], 1, "address"); err != nil {
		return portico.Params{}, err
	}
	keys, err := rpcparams.Array(p[1], 2, "storageKeys")
	if err != nil {
		return portico.Params{}, err
	}
	if len(keys) > MaxStorageKeys {
		return portico.Params{}, rpcparams.Errorf(2, "storageKeys", "too many keys: at most %d, got %d", MaxStorageKeys, len(keys))
	}
	for i, k := range keys {
		if err := storageKey(k, 2, rpcparams.Index("storageKeys", i)); err != nil {
			return portico.Params{}, err
		}
	}
	if len(p) == 2 {
		out := bytes.TrimRight(raw, " \t\r\n")
		raw = append(append(out[:len(out)-1:len(out)-1], `,"latest"`...), ']')
		return blockParams(raw, append(p, jsontext.Value(`"latest"`)), 2, portico.Block{Kind: portico.BlockTag, Tag: "latest"}), nil
	}
	b, err := block(p[2], 3, "block")
	if err != nil {
		return portico.Params{}, err
	}
	return blockParams(raw, p, 2, b), nil
}

// GetTransactionByBlockHashAndIndexParams checks [blockHash, index]. The
// block is named by hash, so a transaction found there never changes.
func GetTransactionByBlockHashAndIndexParams(raw jsontext.Value) (portico.Params, error) {
	p, err := rpcparams.Positional(raw, 2, "blockHash", "index")
	if err != nil {
		return portico.Params{}, err
	}
	if err := hash(p[0], 1, "blockHash"); err != nil {
		return portico.Params{}, err
	}
	if _, err := quantity(p[1], 2, "index", 64); err != nil {
		return portico.Params{}, err
	}
	return portico.Params{Send: raw, Cache: portico.Immutable, Block: portico.Block{Kind: portico.BlockHash}}, nil
}

func address(v jsontext.Value, pos int, field string) error {
	s, err := rpcparams.String(v, pos, field)
	if err != nil {
		return err
	}
	if !hasHexPrefix(s) || len(s) != 42 || !rpcparams.IsHex(s[2:]) {
		return rpcparams.Errorf(pos, field, "want a 20-byte address, 0x and 40 hex digits, got %s", rpcparams.Describe(v))
	}
	return nil
}

func hash(v jsontext.Value, pos int, field string) error {
	s, err := rpcparams.String(v, pos, field)
	if err != nil {
		return err
	}
	if !isHash(s) {
		return rpcparams.Errorf(pos, field, "want a 32-byte hash, 0x and 64 hex digits, got %s", rpcparams.Describe(v))
	}
	return nil
}

func isHash(s string) bool { return hasHexPrefix(s) && len(s) == 66 && rpcparams.IsHex(s[2:]) }

// storageKey accepts 0x and 1 to 64 hex digits, as go-ethereum does.
func storageKey(v jsontext.Value, pos int, field string) error {
	s, err := rpcparams.String(v, pos, field)
	if err != nil {
		return err
	}
	if !hasHexPrefix(s) || len(s) < 3 || len(s) > 66 || !rpcparams.IsHex(s[2:]) {
		return rpcparams.Errorf(pos, field, "want a storage key of at most 32 bytes, 0x and 1 to 64 hex digits, got %s", rpcparams.Describe(v))
	}
	return nil
}

// quantity checks a hex QUANTITY: 0x, no leading zeros, at most bits wide.
func quantity(v jsontext.Value, pos int, field string, bits int) (uint64, error) {
	s, err := rpcparams.String(v, pos, field)
	if err != nil {
		return 0, rpcparams.Errorf(pos, field, "want a hex quantity such as \"0x1f\", got %s", rpcparams.Describe(v))
	}
	if !hasHexPrefix(s) || len(s) == 2 || !rpcparams.IsHex(s[2:]) {
		return 0, rpcparams.Errorf(pos, field, "want a hex quantity such as \"0x1f\", got %s", rpcparams.Describe(v))
	}
	if len(s) > 3 && s[2] == '0' {
		return 0, rpcparams.Errorf(pos, field, "hex quantity has leading zero digits: %s", rpcparams.Describe(v))
	}
	n, err := strconv.ParseUint(s[2:], 16, bits)
	if err != nil {
		return 0, rpcparams.Errorf(pos, field, "hex quantity larger than %d bits: %s", bits, rpcparams.Describe(v))
	}
	return n, nil
}

// block checks a block parameter: a hex number, a tag, a block hash, or an
// EIP-1898 object with exactly one of blockNumber and blockHash, and says
// which block it names.
func block(v jsontext.Value, pos int, field string) (portico.Block, error) {
	const want = `want a hex block number, one of latest, earliest, pending, safe, finalized, a 32-byte block hash, or an object with blockNumber or blockHash`
	switch v.Kind() {
	case '"':
		s, err := rpcparams.String(v, pos, field)
		if err != nil {
			return portico.Block{}, err
		}
		for _, tag := range blockTags {
			if s == tag {
				if tag == "earliest" {
					return portico.Block{Kind: portico.BlockNumber, Number: 0}, nil
				}
				return portico.Block{Kind: portico.BlockTag, Tag: tag}, nil
			}
		}
		if isHash(s) {
			return portico.Block{Kind: portico.BlockHash}, nil
		}
		if !hasHexPrefix(s) {
			return portico.Block{}, rpcparams.Errorf(pos, field, "%s, got %s", want, rpcparams.Describe(v))
		}
		n, err := quantity(v, pos, field, 63)
		return portico.Block{Kind: portico.BlockNumber, Number: n}, err
	case '{':
		obj, err := rpcparams.Object(v, pos, field, "blockNumber", "blockHash", "requireCanonical")
		if err != nil {
			return portico.Block{}, err
		}
		num, hasNum := obj["blockNumber"]
		h, hasHash := obj["blockHash"]
		switch {
		case hasNum == hasHash:
			return portico.Block{}, rpcparams.Errorf(pos, field, "set exactly one of blockNumber and blockHash")
		case hasNum:
			if _, ok := obj["requireCanonical"]; ok {
				return portico.Block{}, rpcparams.Errorf(pos, field+".requireCanonical", "only allowed with blockHash")
			}
			b, err := block(num, pos, field+".blockNumber")
			if err == nil && b.Kind == portico.BlockHash {
				err = rpcparams.Errorf(pos, field+".blockNumber", "want a hex block number or a tag, got a hash")
			}
			return b, err
		}
		if err := hash(h, pos, field+".blockHash"); err != nil {
			return portico.Block{}, err
		}
		if rc, ok := obj["requireCanonical"]; ok {
			if _, err := rpcparams.Bool(rc, pos, field+".requireCanonical"); err != nil {
				return portico.Block{}, err
			}
		}
		return portico.Block{Kind: portico.BlockHash}, nil
	}
	return portico.Block{}, rpcparams.Errorf(pos, field, "%s, got %s", want, rpcparams.Describe(v))
}

func hasHexPrefix(s string) bool { return strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") }
