package network

import "github.com/porticohq/portico/metering"

// Price returns what a call costs before it is sent, or why it is refused
// before any node is asked, so that the refusal costs nothing: a log
// query past its bounds (the network's, or the key's in c.Logs), or whose
// range the served chain shows to be wrong; a read of a log filter the
// key did not make. A call costs its method's cost, except a log query,
// which metering prices by the range it spans (metering.LogPrice.Range);
// the reads of a log filter are priced as the log queries they are
// (docs/logs.md). A range that cannot be resolved now (the network knows
// no head yet) costs one unit.
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

// logPrice prices the network's log queries.
func (n *Network) logPrice() metering.LogPrice { return metering.LogPriceOf(n.logs) }

// rangeCost is the price of a log query over r at base credits a unit.
func (n *Network) rangeCost(base int, r blockRange, known bool) int {
	return n.logPrice().Range(base, r.blocks(), known && r.from <= r.to)
}

// unanswered is what a log query that failed gives back of its charge
// (c.Charged) once the nodes answered answered blocks of it
// (metering.LogPrice.Unanswered).
func (n *Network) unanswered(c Call, answered uint64) int {
	return n.logPrice().Unanswered(c.Method.Cost, c.Charged, answered)
}

// CostAfter returns what a log query's answer costs on top of Price
// (metering.LogPrice.After).
func (n *Network) CostAfter(o Outcome) int {
	if o.Err != nil {
		return 0
	}
	return n.logPrice().After(o.Logs)
}
