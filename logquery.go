package portico

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// LogQuery is what a log query's params rule learned (eth_getLogs, the
// rollup's starknet_getEvents): the ends of its block range, how many
// addresses and topics (keys) it names, and, where the family can, how to
// ask the same query about part of the range. The network checks it
// against its LogLimits (and the key's) and splits a range wider than a
// node takes into chunks.
type LogQuery struct {
	// From and To are the ends as the call named them: numbers or tags
	// (the network resolves latest, safe, finalized and earliest against
	// its heads). A call about a block hash has no LogQuery.
	From, To Block
	// Addresses is how many contract addresses the filter names; Topics
	// how many topic values (keys) over all positions (a null position
	// names none).
	Addresses, Topics int
	// Range, when not nil, returns the params of the same query about
	// blocks from to to (numbers); nil means the family's query cannot be
	// split (the rollup pages with a continuation token instead).
	Range func(from, to uint64) jsontext.Value
	// Wrong, when not nil, returns the family's refusal of a range that
	// the served chain shows to be wrong once its ends are resolved: it
	// starts after it ends, or it ends past head, the served chain's
	// head; nil when the range is right. The error is worded as the
	// family's nodes word it (go-ethereum's -32602 for the EVM). A family
	// that leaves such ranges to its nodes sets none.
	Wrong func(from, to, head uint64) error
}

// LogRangeError is a log query refused before any node was asked because
// the served chain shows its range to be wrong (LogQuery.Wrong): it costs
// nothing. Err is the family's answer, which gives the code and message.
type LogRangeError struct{ Err error }

// Error is the family's message.
func (e *LogRangeError) Error() string { return e.Err.Error() }

// Unwrap returns the family's error, which carries the code.
func (e *LogRangeError) Unwrap() error { return e.Err }

// How a log query is charged (LogSettings.Cost).
const (
	// LogCostCall charges the method's cost once per call, whatever its
	// range or answer.
	LogCostCall = "call"
	// LogCostRange charges the method's cost once for every CostBlocks
	// blocks (or part of them) the range spans, before the call is sent.
	LogCostRange = "range"
	// LogCostLogs charges the method's cost, then CostPerLog credits for
	// every log in the answer once it is there.
	LogCostLogs = "logs"
)

// LogSettings are a network's settings for log queries (config `logs:`):
// its LogLimits, how many blocks one node call may span, how many node
// calls one query may have in flight, and how the query is charged.
// docs/logs.md gives the defaults and the reasons for them.
type LogSettings struct {
	LogLimits `yaml:",inline"`
	// NodeRange is the widest range (in blocks) sent to a node in one
	// call; a wider query is split into chunks of this many blocks,
	// aligned on multiples of it so that chunks of final blocks are
	// cached and shared by queries that start elsewhere.
	NodeRange uint64 `yaml:"node_range"`
	// Parallel is how many chunks of one query may be at the nodes at
	// once.
	Parallel int `yaml:"parallel"`
	// Cost is LogCostCall, LogCostRange or LogCostLogs.
	Cost string `yaml:"cost"`
	// CostBlocks is the range (in blocks) one method cost pays for, in
	// LogCostRange.
	CostBlocks uint64 `yaml:"cost_blocks"`
	// CostPerLog is what each log of an answer costs, in LogCostLogs.
	CostPerLog int `yaml:"cost_per_log"`
}

// Bounds of a log query a LogsTooLargeError can name.
const (
	LogBoundRange     = "block range"
	LogBoundAddresses = "addresses"
	LogBoundTopics    = "topics"
	LogBoundLogs      = "logs"
)

// LogsTooLargeError reports a log query refused for one of its bounds
// (the network's LogLimits or the key's). It answers CodeLogsTooLarge. For
// the block range and the number of logs it carries a range that would fit:
// the widest range from the query's first block that stays within the
// bound (for logs, the blocks whose logs stayed under the cap, as hosted
// providers suggest).
type LogsTooLargeError struct {
	// Bound is one of the LogBound* names.
	Bound string
	// Max is the bound; Got what the query asked for (for logs, at least
	// Max+1: the query stopped once the cap was passed).
	Max, Got uint64
	// Suggest says whether From and To are a range that would fit.
	Suggest  bool
	From, To uint64
}

// Error says which bound was passed and, where there is one, the range
// that would fit.
func (e *LogsTooLargeError) Error() string {
	var msg string
	switch e.Bound {
	case LogBoundRange:
		msg = fmt.Sprintf("log query too large: the block range spans %d blocks, limit is %d", e.Got, e.Max)
	case LogBoundLogs:
		msg = fmt.Sprintf("log query too large: the answer has more than %d logs", e.Max)
	default:
		msg = fmt.Sprintf("log query too large: the filter names %d %s, limit is %d", e.Got, e.Bound, e.Max)
	}
	if e.Suggest {
		msg += fmt.Sprintf("; this block range would fit: [0x%x, 0x%x]", e.From, e.To)
	} else if e.Bound == LogBoundLogs {
		msg += "; the first block alone passes the cap: narrow the filter"
	}
	return msg
}

// ErrorCode returns CodeLogsTooLarge.
func (e *LogsTooLargeError) ErrorCode() int { return CodeLogsTooLarge }

// BeforeWork reports whether the query was refused before any node was
// asked (its range, addresses or topics), so that it costs nothing; a
// query stopped at the logs cap made the nodes work and stays charged.
func (e *LogsTooLargeError) BeforeWork() bool { return e.Bound != LogBoundLogs }

// DefaultLogSettings are a network's log settings when its config says
// nothing (docs/logs.md gives the reasons): ranges up to 100,000 blocks
// split into chunks of 1,000 blocks, 4 at the nodes at once; up to 1,000
// addresses and 1,000 topic values; up to 10,000 logs in an answer; the
// method's cost once per 1,000 blocks.
func DefaultLogSettings() LogSettings {
	return LogSettings{
		LogLimits:  LogLimits{MaxBlockRange: 100_000, MaxAddresses: 1000, MaxTopics: 1000, MaxLogs: 10_000},
		NodeRange:  1000,
		Parallel:   4,
		Cost:       LogCostRange,
		CostBlocks: 1000,
		CostPerLog: 1,
	}
}
