package metering

import "github.com/porticohq/portico"

// LogPrice prices log queries (eth_getLogs, starknet_getEvents, the reads
// of a log filter) by a network's log settings (docs/logs.md): in the
// range cost mode by the blocks a query spans, in the logs cost mode by
// the logs its answer holds. The network resolves a query's range against
// its chain; the prices are made here.
type LogPrice struct {
	// Mode is portico.LogCostCall, LogCostRange or LogCostLogs.
	Mode string
	// Blocks is the range one method cost pays for, in the range mode.
	Blocks uint64
	// PerLog is what each log of an answer costs, in the logs mode.
	PerLog int
}

// LogPriceOf is the pricing of a network's log settings.
func LogPriceOf(s portico.LogSettings) LogPrice {
	return LogPrice{Mode: s.Cost, Blocks: s.CostBlocks, PerLog: s.CostPerLog}
}

// byRange reports whether queries cost by their range.
func (p LogPrice) byRange() bool { return p.Mode == portico.LogCostRange && p.Blocks != 0 }

// Range is the price of a query over blocks blocks at base credits a
// unit: base once for every Blocks blocks (or part of them) in the range
// mode, so that a key cannot have nodes scan a wide range for the price
// of one call; base in the other modes, and when the range is not known
// (resolved is false).
func (p LogPrice) Range(base int, blocks uint64, resolved bool) int {
	if !p.byRange() || !resolved {
		return base
	}
	return base * int(p.units(blocks))
}

// units is how many cost units a range of blocks is.
func (p LogPrice) units(blocks uint64) uint64 {
	return max((blocks+p.Blocks-1)/p.Blocks, 1)
}

// Unanswered is what a query charged charged credits (its Range at base
// credits a unit) gives back when it failed after the nodes answered
// answered blocks of it: in the range mode it pays for those blocks, and
// at least base once, as any call a node answered with an error does;
// the chunks a node refused and those never sent are not paid for.
func (p LogPrice) Unanswered(base, charged int, answered uint64) int {
	if !p.byRange() || charged <= base {
		return 0
	}
	paid := base
	if answered > 0 {
		paid = base * int(p.units(answered))
	}
	return max(charged-paid, 0)
}

// After is what an answer of logs logs costs on top of the query's price:
// PerLog each in the logs mode, nothing in the others.
func (p LogPrice) After(logs int) int {
	if p.Mode != portico.LogCostLogs {
		return 0
	}
	return logs * p.PerLog
}
