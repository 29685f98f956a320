package network

import "github.com/porticohq/portico"

// Price returns what a call costs before it is sent, or why it is refused
// before any node is asked, so that the refusal costs nothing: a log
// query past its bounds (the network's, or the key's in c.Logs), or whose
// range the served chain shows to be wrong; a read of a log filter the
// key did not make. A call costs its method's cost, except a log query
// in the range cost mode, which costs that once for every CostBlocks
// blocks (or part of them) it spans, so that a key cannot have nodes scan
// a wide range for the price of one call; the reads of a log filter are
// priced as the log queries they are (docs/logs.md). A range that cannot
// be resolved now (the network knows no head yet) costs one unit.
func (n *Network) Price(c Call) (int, error) {
	if c.Params.Filter != nil {
		return n.priceFilter(c)
	}
	if c.Params.Logs == nil {
		return c.Method.Cost, nil
	}
	_, r, known, err := n.boundLogs(c)
	if err != nil {
		return 0, err
	}
	return n.rangeCost(c.Method.Cost, r, known), nil
}

// rangeCost is the price of a log query over r at base credits a unit.
func (n *Network) rangeCost(base int, r blockRange, known bool) int {
	if n.logs.Cost != portico.LogCostRange || n.logs.CostBlocks == 0 || !known || r.from > r.to {
		return base
	}
	return base * int(n.units(r.blocks()))
}

// units is how many cost units a range of blocks is.
func (n *Network) units(blocks uint64) uint64 {
	return max((blocks+n.logs.CostBlocks-1)/n.logs.CostBlocks, 1)
}

// unanswered is what a log query that failed gives back of its charge
// (c.Charged): in the range cost mode it pays for the blocks of the
// chunks the nodes answered (answered), and at least the method's cost
// once, as any call a node answered with an error does; the chunks a node
// refused and those never sent are not paid for.
func (n *Network) unanswered(c Call, answered uint64) int {
	if n.logs.Cost != portico.LogCostRange || n.logs.CostBlocks == 0 || c.Charged <= c.Method.Cost {
		return 0
	}
	paid := c.Method.Cost
	if answered > 0 {
		paid = c.Method.Cost * int(n.units(answered))
	}
	return max(c.Charged-paid, 0)
}

// CostAfter returns what a log query's answer costs on top of Price, in
// the logs cost mode: CostPerLog for each log it holds.
func (n *Network) CostAfter(o Outcome) int {
	if n.logs.Cost != portico.LogCostLogs || o.Err != nil {
		return 0
	}
	return o.Logs * n.logs.CostPerLog
}
