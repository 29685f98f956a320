package network

import "github.com/porticohq/portico"

// Cost returns what a call costs before it is sent: its method's cost,
// except for a log query in the range cost mode, which costs that once
// for every CostBlocks blocks (or part of them) it spans, so that a key
// cannot have nodes scan a wide range for the price of one call. A range
// that cannot be resolved now, or that its bounds (the network's, or the
// key's in c.Logs) refuse, costs one unit: the refusal gives it back.
func (n *Network) Cost(c Call) int {
	q, base := c.Params.Logs, c.Method.Cost
	if q == nil || n.logs.Cost != portico.LogCostRange || n.logs.CostBlocks == 0 {
		return base
	}
	heads, fresh := n.up.HeadsFresh()
	r, ok := n.logRange(q, heads, fresh)
	if !ok {
		return base
	}
	if max := n.logLimits(c).MaxBlockRange; max > 0 && r.blocks() > max {
		return base
	}
	units := (r.blocks() + n.logs.CostBlocks - 1) / n.logs.CostBlocks
	return base * int(units)
}

// CostAfter returns what a log query's answer costs on top of Cost, in
// the logs cost mode: CostPerLog for each log it holds.
func (n *Network) CostAfter(o Outcome) int {
	if n.logs.Cost != portico.LogCostLogs || o.Err != nil {
		return 0
	}
	return o.Logs * n.logs.CostPerLog
}
