package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/porticohq/portico/network/upstream"
)

// NodeSource returns the state of every network's nodes, by network name;
// it is called at each scrape.
type NodeSource func() map[string][]upstream.NodeState

// nodeCollector reads the nodes' state from head tracking at scrape time,
// so the values are those the pool routes by.
type nodeCollector struct {
	src                                            NodeSource
	up, head, lag, benched, suspect, wrong, hedges *prometheus.Desc
	latency                                        *prometheus.Desc
	answers, archive, stateBlocks, firstBlock      *prometheus.Desc
	inFlight, rateLimited                          *prometheus.Desc
}

// WatchNodes exports the state of the nodes src returns: up, head, lag,
// benched, suspect, wrong chain, hedges, latency quantiles, what each
// keeps (configured or learned), its own rate's use and its answers by
// class.
func (m *Metrics) WatchNodes(src NodeSource) error {
	labels := []string{"network", "node"}
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, labels, nil) }
	return m.reg.Register(&nodeCollector{
		src:     src,
		up:      d("portico_node_up", "1 when the node gets calls first (not benched after a failure, on the network's chain), else 0."),
		head:    d("portico_node_head_block", "The node's newest block (slot), 0 before its first read."),
		lag:     d("portico_node_lag_blocks", "How many blocks the node is behind the network's best head."),
		benched: d("portico_node_benched", "1 while the node is benched after a failure."),
		suspect: d("portico_node_suspect", "1 while the node is suspect after a hedge overtook it."),
		wrong:   d("portico_node_wrong_chain", "1 when the node is on another chain than its network's (it gets no calls)."),
		hedges:  d("portico_node_hedges_total", "Reads sent to another node because this one had not answered in time."),
		latency: prometheus.NewDesc("portico_node_latency_seconds", "Quantiles of the node's last 128 answer times, the ones hedging uses.",
			[]string{"network", "node", "quantile"}, nil),
		answers: prometheus.NewDesc("portico_node_answers_total", "The node's answers by class: result, client, missing, limited, unhealthy, too_large, failed (docs/nodes.md).",
			[]string{"network", "node", "class"}, nil),
		archive:     d("portico_node_archive", "1 when the node is configured as an archive node (it keeps every block's state)."),
		stateBlocks: d("portico_node_state_blocks", "How many of the newest blocks' state the node keeps, configured or learned from its answers; 0 when all or unknown."),
		firstBlock:  d("portico_node_first_block", "The first block the node has, configured or learned; 0 when all or unknown."),
		inFlight:    d("portico_node_in_flight", "Calls in flight at the node, where its concurrent bound counts them."),
		rateLimited: d("portico_node_rate_limited", "1 while the node's own rate limit (an HTTP 429 or a provider's words) keeps calls away from it."),
	})
}

// Describe sends the descriptions.
func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.head, c.lag, c.benched, c.suspect, c.wrong, c.hedges, c.latency,
		c.answers, c.archive, c.stateBlocks, c.firstBlock, c.inFlight, c.rateLimited} {
		ch <- d
	}
}

// Collect reads every node's state once.
func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	for network, nodes := range c.src() {
		for _, n := range nodes {
			gauge := func(d *prometheus.Desc, v float64) {
				ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, network, n.Name)
			}
			gauge(c.up, flag(!n.Benched && !n.WrongChain))
			gauge(c.head, float64(n.Heads.Latest))
			gauge(c.lag, float64(n.Lag))
			gauge(c.benched, flag(n.Benched))
			gauge(c.suspect, flag(n.Suspect))
			gauge(c.wrong, flag(n.WrongChain))
			ch <- prometheus.MustNewConstMetric(c.hedges, prometheus.CounterValue, float64(n.Hedged), network, n.Name)
			ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, n.P50.Seconds(), network, n.Name, "0.5")
			ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, n.P95.Seconds(), network, n.Name, "0.95")
			gauge(c.archive, flag(n.Keeps.State == "archive"))
			gauge(c.stateBlocks, float64(n.Keeps.StateBlocks))
			gauge(c.firstBlock, float64(n.Keeps.FirstBlock))
			gauge(c.inFlight, float64(n.Rate.InFlight))
			gauge(c.rateLimited, flag(!n.Rate.LimitedUntil.IsZero()))
			for class, count := range n.Answers {
				ch <- prometheus.MustNewConstMetric(c.answers, prometheus.CounterValue, float64(count), network, n.Name, class)
			}
		}
	}
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
