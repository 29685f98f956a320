package logsplit

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/porticohq/portico/jsonrpc"
)

// Refusal is a node's answer that a log query was too large for it: its
// range too wide, or its answer too long. Portico splits the query and asks
// again instead of failing the call.
type Refusal struct {
	// results: the node refused for the number (or size) of logs, not
	// for the width of the range.
	results bool
	// max is the widest range, in blocks, the node says it takes (0 when
	// it does not say).
	max uint64
	// from and to, when suggest, are a range the node says would work.
	suggest  bool
	from, to uint64
}

// refusalTexts are the node messages that mean "too large", matched in
// lower case, each with where its range bound follows (after; empty when
// the message gives none). Each has a test with a real message
// (refusal_test.go). Rate limits ("limit exceeded", "Too Many Requests")
// are not among them: splitting would make those worse.
var refusalTexts = []struct {
	part, after string
	results     bool
}{
	// Alchemy: "Log response size exceeded. You can make eth_getLogs
	// requests with up to a 2K block range … this block range should
	// work: [0x…, 0x…]" (before its range message, which it contains).
	{"log response size exceeded", "", true},
	// geth --rpc.rangelimit: "exceed maximum block range 5000"; BSC and
	// publicnode: "exceed maximum block range: 5000".
	{"exceed maximum block range", "exceed maximum block range", false},
	// reth: "query exceeds max block range 100000".
	{"query exceeds max block range", "query exceeds max block range", false},
	// erigon --rpc.blockrange.limit: "query block range exceeds server
	// limit, narrow your filter: 1000".
	{"query block range exceeds server limit", "narrow your filter:", false},
	// nethermind Receipt.MaxBlockDepth: "Block range 20001 exceeds the
	// maximum of 10000 blocks per logs request. …".
	{"blocks per logs request", "exceeds the maximum of", false},
	// Alchemy: "You can make eth_getLogs requests with up to a 500 block
	// range. Based on your parameters, this block range should work:
	// [0x123c9b2, 0x123cba5]".
	{"eth_getlogs requests with up to a", "up to a", false},
	// QuickNode: "eth_getLogs and eth_newFilter are limited to a 10,000
	// blocks range", "eth_getLogs is limited to a 10,000 range".
	{"limited to a", "limited to a", false},
	// Infura: "range 1000000 exceeds limit of 10000".
	{"range ", "exceeds limit of", false},
	// Frontier-based chains: "block range is too wide (maximum 1024)".
	{"block range is too wide", "(maximum", false},
	// cdk-erigon: "block range too large, max range: 1000".
	{"block range too large", "max range:", false},
	// Infura and many hosted nodes: "query returned more than 10000
	// results".
	{"query returned more than", "", true},
	// reth --rpc.max-logs-per-response: "query exceeds max results 20000,
	// retry with the range 24383075-24383096".
	{"query exceeds max results", "", true},
	// erigon --rpc.logs.maxresults: "query returns too many logs, narrow
	// your filter: 20000".
	{"query returns too many logs", "", true},
}

var (
	// retryRange is reth's suggestion, in decimal.
	retryRange = regexp.MustCompile(`retry with the range (\d+)-(\d+)`)
	// shouldWork is Alchemy's, in hex.
	shouldWork = regexp.MustCompile(`\[(0x[0-9a-f]+),\s*(0x[0-9a-f]+)\]`)
	// number is a count as nodes write it, with thousands separators.
	number = regexp.MustCompile(`^\s*(\d[\d,]*)`)
)

// NodeRefusal reads a node's error: whether it says the log query was too
// large, and what it says would fit.
func NodeRefusal(err error) (Refusal, bool) {
	var e *jsonrpc.Error
	if !errors.As(err, &e) {
		return Refusal{}, false
	}
	return parseRefusal(e.Message)
}

// parseRefusal reads a node's error message (see NodeRefusal).
func parseRefusal(msg string) (Refusal, bool) {
	low := strings.ToLower(msg)
	for _, t := range refusalTexts {
		i := strings.Index(low, t.part)
		if i < 0 {
			continue
		}
		if t.part == "range " && (i != 0 || !strings.Contains(low, t.after)) {
			continue // Infura's message starts with it
		}
		r := Refusal{results: t.results}
		if t.after != "" {
			if j := strings.Index(low, t.after); j >= 0 {
				r.max = leadingNumber(low[j+len(t.after):])
			}
		}
		if m := retryRange.FindStringSubmatch(low); m != nil {
			r.from, _ = strconv.ParseUint(m[1], 10, 64)
			r.to, _ = strconv.ParseUint(m[2], 10, 64)
			r.suggest = r.from <= r.to
		} else if m := shouldWork.FindStringSubmatch(low); m != nil {
			r.from, _ = strconv.ParseUint(m[1][2:], 16, 64)
			r.to, _ = strconv.ParseUint(m[2][2:], 16, 64)
			r.suggest = r.from <= r.to
		}
		return r, true
	}
	return Refusal{}, false
}

// leadingNumber reads the count at the start of s ("10,000 blocks",
// " 5000"), or 0.
func leadingNumber(s string) uint64 {
	m := number.FindStringSubmatch(strings.TrimLeft(s, ": "))
	if m == nil {
		return 0
	}
	n, err := strconv.ParseUint(strings.ReplaceAll(m[1], ",", ""), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
