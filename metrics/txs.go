package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Transaction events, the event label of portico_transactions_total.
const (
	TxSent    = "sent"    // a node took it; kept to be followed
	TxLanded  = "landed"  // found in a block of the served chain
	TxResent  = "resent"  // sent again: no node held it
	TxExpired = "expired" // let go: kept too long, or can no longer land
	TxRefused = "refused" // let go: the nodes refuse it now
	TxNotKept = "unkept"  // not kept: the key's bound or the memory budget
	// TxBroadcastEvent is one broadcast send (the client's or a resend).
	TxBroadcastEvent = "broadcast"
)

// txCollectors are the collectors of sent transactions.
type txCollectors struct {
	events    *prometheus.CounterVec
	inclusion *prometheus.HistogramVec
	broadcast *prometheus.CounterVec
}

// inclusionBuckets fit a fast chain's next block (tens of milliseconds)
// to a slow one's long wait (minutes).
var inclusionBuckets = []float64{.05, .1, .25, .5, 1, 2, 4, 8, 15, 30, 60, 120, 300}

// newTxCollectors makes and registers the transaction collectors.
func newTxCollectors(reg *prometheus.Registry) txCollectors {
	c := txCollectors{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_transactions_total",
			Help: "Signed transactions sent for clients, by network and event: sent, landed, resent, expired, refused, unkept, broadcast."},
			[]string{"network", "event"}),
		inclusion: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "portico_transaction_inclusion_seconds",
			Help: "Time from a transaction's first send to Portico finding it in a block of the served chain, by network.", Buckets: inclusionBuckets},
			[]string{"network"}),
		broadcast: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_transaction_broadcast_nodes_total",
			Help: "Nodes the broadcast sends of signed transactions went to, summed, by network: over portico_transactions_total{event=\"broadcast\"}, the nodes per send."},
			[]string{"network"}),
	}
	reg.MustRegister(c.events, c.inclusion, c.broadcast)
	return c
}

// TxEvent records one event of a sent transaction (TxSent...).
func (m *Metrics) TxEvent(network, event string) {
	if m == nil {
		return
	}
	m.txs.events.WithLabelValues(network, event).Inc()
}

// TxLanded records a transaction found in a block of the served chain,
// took after it was first sent.
func (m *Metrics) TxLanded(network string, took time.Duration) {
	if m == nil {
		return
	}
	m.txs.events.WithLabelValues(network, TxLanded).Inc()
	m.txs.inclusion.WithLabelValues(network).Observe(took.Seconds())
}

// TxBroadcast records a broadcast send that went to nodes nodes.
func (m *Metrics) TxBroadcast(network string, nodes int) {
	if m == nil {
		return
	}
	m.txs.events.WithLabelValues(network, TxBroadcastEvent).Inc()
	m.txs.broadcast.WithLabelValues(network).Add(float64(nodes))
}
