package evmverify

import (
	"fmt"
	"slices"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/eth/filters"

	"github.com/porticohq/portico/network/verify"
)

// ParseFilter decodes an eth_getLogs filter object as go-ethereum reads
// it: address as one or a list, topics with null wildcards and lists for
// OR, blockHash apart from fromBlock/toBlock. Block tags decode to
// go-ethereum's negative numbers (rpc.LatestBlockNumber and so on); the
// caller resolves them to numbers before asking which blocks to fetch.
func ParseFilter(raw []byte) (ethereum.FilterQuery, error) {
	var c filters.FilterCriteria
	if err := c.UnmarshalJSON(raw); err != nil {
		return ethereum.FilterQuery{}, err
	}
	return ethereum.FilterQuery(c), nil
}

// MayHaveLogs reports whether a block can hold a log the filter matches,
// from the logs bloom of its trusted header. A block for which it is
// false needs no receipts: the bloom is covered by the block hash, so a
// node cannot hide a log behind it.
func MayHaveLogs(h *Header, q ethereum.FilterQuery) bool {
	bloom := h.eth.Bloom
	if bloom == (types.Bloom{}) {
		return false // every log sets its address's bits: an empty bloom means no logs
	}
	if len(q.Addresses) > 0 && !slices.ContainsFunc(q.Addresses, func(a common.Address) bool { return types.BloomLookup(bloom, a) }) {
		return false
	}
	for _, sub := range q.Topics {
		if len(sub) > 0 && !slices.ContainsFunc(sub, func(t common.Hash) bool { return types.BloomLookup(bloom, t) }) {
			return false
		}
	}
	return true
}

// MatchLogs returns the logs the filter's address and topic rules match,
// applied as a node applies them: any listed address; topic position i
// matches any hash of its list, an empty list (null) matches anything,
// and a log with fewer topics than the filter has positions never
// matches. The block range is the caller's choice of blocks.
func MatchLogs(q ethereum.FilterQuery, logs []*types.Log) []*types.Log {
	var out []*types.Log
	for _, l := range logs {
		if len(q.Addresses) > 0 && !slices.Contains(q.Addresses, l.Address) {
			continue
		}
		if len(q.Topics) > len(l.Topics) {
			continue
		}
		ok := true
		for i, sub := range q.Topics {
			if len(sub) > 0 && !slices.Contains(sub, l.Topics[i]) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// VerifyLogs checks a node's eth_getLogs answer for filter q over the
// trusted headers of its range (ascending; one header for a blockHash
// filter). receipts must hold the verified receipts of every header for
// which MayHaveLogs is true; the others need none. The answer must be
// exactly the matching logs of those receipts, in order: a log left out,
// added, or changed is caught. It returns the node's answer, verified.
func VerifyLogs(raw []byte, q ethereum.FilterQuery, headers []*Header, receipts map[common.Hash]*Receipts) ([]byte, error) {
	var want []*types.Log
	for _, h := range headers {
		if !MayHaveLogs(h, q) {
			continue
		}
		logs, err := ExpectedLogs(q, h, receipts[h.hash])
		if err != nil {
			return nil, err
		}
		want = append(want, logs...)
	}
	return CheckLogs(raw, want)
}

// ExpectedLogs returns the logs filter q matches in rs, the verified
// receipts of the trusted header h: what a node's answer must hold for
// that block. A caller that checks a range block by block keeps these,
// not the receipts. rs nil, or of another block, is verify.ErrUnverifiable.
func ExpectedLogs(q ethereum.FilterQuery, h *Header, rs *Receipts) ([]*types.Log, error) {
	if rs == nil {
		return nil, &verify.UnverifiableError{What: "logs", Reason: fmt.Sprintf("no verified receipts for block %d, whose bloom may match", h.Number())}
	}
	if rs.Block.Header.hash != h.hash {
		return nil, &verify.UnverifiableError{What: "logs", Reason: fmt.Sprintf("receipts of block %d are of another block", h.Number())}
	}
	return MatchLogs(q, rs.Logs()), nil
}

// CheckLogs checks a node's eth_getLogs answer against want, the
// expected logs of its range in block order (ExpectedLogs of each block
// whose bloom may match): exactly those, in order. It returns the node's
// answer, verified.
func CheckLogs(raw []byte, want []*types.Log) ([]byte, error) {
	if err := checkLogs("logs", raw, want); err != nil {
		return nil, err
	}
	return raw, nil
}

// LogsSize is about the memory logs hold, in bytes.
func LogsSize(logs []*types.Log) int64 {
	var n int64
	for _, l := range logs {
		n += 160 + int64(len(l.Data)) + 32*int64(len(l.Topics))
	}
	return n
}
