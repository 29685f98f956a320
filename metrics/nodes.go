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
}

// WatchNodes exports the state of the nodes src returns: up, head, lag,
// benched, suspect, wrong chain, hedges and latency quantiles.
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
	})
}

// Describe sends the descriptions.
func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.head, c.lag, c.benched, c.suspect, c.wrong, c.hedges, c.latency} {
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
		}
	}
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
