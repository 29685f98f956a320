// Package metrics holds Portico's Prometheus metrics: what the gateway,
// the node pools and metering record, and a collector that reads each
// node's state from head tracking at scrape time. Names follow Prometheus
// conventions (portico_…_total counters, _seconds histograms); labels are
// bounded: methods are the family table's names (an unknown method is
// "unknown"), keys are key names (never keys), at most MaxKeyLabels of
// them before "other".
//
// A nil *Metrics records nothing, so every recording method may be called
// unconditionally.
package metrics

import (
	"errors"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MaxKeyLabels bounds the key names used as label values; calls of other
// keys are counted under "other".
const MaxKeyLabels = 1000

// Outcomes of a call, the outcome label.
const (
	// OutcomeOK is a result.
	OutcomeOK = "ok"
	// OutcomeNodeError is a node's JSON-RPC error, passed on.
	OutcomeNodeError = "node_error"
	// OutcomeRefused is a call Portico refused: bad params, unknown
	// method, key limits, forbidden.
	OutcomeRefused = "refused"
	// OutcomeFailed is a call no node answered (unavailable, timeout) or
	// an internal error.
	OutcomeFailed = "failed"
	// OutcomeCancelled is a call whose client went away before its answer.
	OutcomeCancelled = "cancelled"
)

// Metrics are the registry and Portico's collectors.
type Metrics struct {
	reg *prometheus.Registry

	calls           *prometheus.CounterVec
	callSeconds     *prometheus.HistogramVec
	upstreamSeconds *prometheus.HistogramVec
	upstreamErrors  *prometheus.CounterVec
	cache           *prometheus.CounterVec
	coalesced       *prometheus.CounterVec
	credits         *prometheus.CounterVec
	refused         *prometheus.CounterVec
	wsConns         prometheus.Gauge
	subs            *prometheus.GaugeVec
	notifications   *prometheus.CounterVec
	meteringErrors  prometheus.Counter
	verified        *prometheus.CounterVec
	verifyFaults    *prometheus.CounterVec
	txs             txCollectors

	mu   sync.Mutex
	keys map[string]bool // key names given a label of their own
}

// secondsBuckets fit calls from a cached answer (tens of microseconds) to
// a slow node (seconds).
var secondsBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns the metrics on a registry of their own, with the Go runtime
// and process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), keys: map[string]bool{}}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_calls_total",
		Help: "JSON-RPC calls by network, method (the table's name), name (as the client sent it), outcome and JSON-RPC code (0 for a result)."},
		[]string{"network", "method", "name", "outcome", "code"})
	m.callSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "portico_call_duration_seconds",
		Help: "Time to answer a call, from its checks to its answer, by network and method.", Buckets: secondsBuckets},
		[]string{"network", "method"})
	m.upstreamSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "portico_upstream_request_duration_seconds",
		Help: "Time a node took to answer one attempt of a call, by network and node.", Buckets: secondsBuckets},
		[]string{"network", "node"})
	m.upstreamErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_upstream_errors_total",
		Help: "Attempts a node failed (refused, reset, timeout, 5xx, unusable answer), by network and node."}, []string{"network", "node"})
	m.cache = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_cache_requests_total",
		Help: "Calls that could be answered from cache, by network, method and result (hit or miss)."}, []string{"network", "method", "result"})
	m.coalesced = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_coalesced_calls_total",
		Help: "Reads answered by an identical read already in flight to a node, by network and method."}, []string{"network", "method"})
	m.credits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_credits_charged_total",
		Help: "Credits charged, after refunds, by key name."}, []string{"key"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_calls_refused_total",
		Help: "Calls refused for their key's limits, by key name and limit (daily, rate)."}, []string{"key", "limit"})
	m.wsConns = prometheus.NewGauge(prometheus.GaugeOpts{Name: "portico_websocket_connections", Help: "Open client WebSocket connections."})
	m.subs = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "portico_subscriptions",
		Help: "Client subscriptions, by network and kind."}, []string{"network", "kind"})
	m.notifications = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_notifications_total",
		Help: "Notifications sent to clients, by network and kind."}, []string{"network", "kind"})
	m.meteringErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "portico_metering_failures_total",
		Help: "Charges that failed because the counter or the journal did (the calls were refused)."})
	m.verified = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_verified_calls_total",
		Help: "Calls on networks with verify on or strict, by network, method and result: verified, unverified (passed on unchecked) or refused (-32058)."},
		[]string{"network", "method", "result"})
	m.verifyFaults = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "portico_verify_faults_total",
		Help: "Answers of a node that failed their check against a trusted header (never sent, never cached), by network, node and method."},
		[]string{"network", "node", "method"})
	m.reg.MustRegister(m.calls, m.callSeconds, m.upstreamSeconds, m.upstreamErrors, m.cache, m.coalesced, m.credits, m.refused,
		m.wsConns, m.subs, m.notifications, m.meteringErrors, m.verified, m.verifyFaults,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.txs = newTxCollectors(m.reg)
	return m
}

// WatchMemory exports the process's memory budget: what clients and nodes
// make it hold now (used) and its bound (limit), read when Prometheus
// scrapes.
func (m *Metrics) WatchMemory(used, limit func() int64) error {
	return errors.Join(
		m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "portico_memory_budget_used_bytes",
			Help: "Bytes that clients and nodes make the process hold: answers and notifications waiting to be written, batches being assembled, node answers being read."},
			func() float64 { return float64(used()) })),
		m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "portico_memory_budget_limit_bytes",
			Help: "The process's memory budget (limits.memory_bytes)."},
			func() float64 { return float64(limit()) })))
}

// Register adds a collector to the registry.
func (m *Metrics) Register(c prometheus.Collector) error { return m.reg.Register(c) }

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry returns the registry, for tests that read values.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// keyLabel bounds the key names used as labels.
func (m *Metrics) keyLabel(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.keys[name] {
		return name
	}
	if len(m.keys) >= MaxKeyLabels {
		return "other"
	}
	m.keys[name] = true
	return name
}

// Call records one call's outcome and its time in seconds.
func (m *Metrics) Call(network, method, name, outcome string, code int, seconds float64) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(network, method, name, outcome, strconv.Itoa(code)).Inc()
	m.callSeconds.WithLabelValues(network, method).Observe(seconds)
}

// Upstream records one attempt at a node.
func (m *Metrics) Upstream(network, node string, seconds float64, failed bool) {
	if m == nil {
		return
	}
	m.upstreamSeconds.WithLabelValues(network, node).Observe(seconds)
	if failed {
		m.upstreamErrors.WithLabelValues(network, node).Inc()
	}
}

// Cache records a call that could be answered from cache.
func (m *Metrics) Cache(network, method string, hit bool) {
	if m == nil {
		return
	}
	result := "miss"
	if hit {
		result = "hit"
	}
	m.cache.WithLabelValues(network, method, result).Inc()
}

// Coalesced records a read that waited for an identical read in flight.
func (m *Metrics) Coalesced(network, method string) {
	if m == nil {
		return
	}
	m.coalesced.WithLabelValues(network, method).Inc()
}

// Verification results, the result label of portico_verified_calls_total.
const (
	VerifyVerified   = "verified"
	VerifyUnverified = "unverified"
	VerifyRefused    = "refused"
)

// Verified records a call on a network that verifies answers, with its
// result (VerifyVerified, VerifyUnverified or VerifyRefused).
func (m *Metrics) Verified(network, method, result string) {
	if m == nil {
		return
	}
	m.verified.WithLabelValues(network, method, result).Inc()
}

// VerifyFault records a node's answer that failed its check. method is
// the node call that was checked (eth_getProof for a balance).
func (m *Metrics) VerifyFault(network, node, method string) {
	if m == nil {
		return
	}
	m.verifyFaults.WithLabelValues(network, node, method).Inc()
}

// Credits records credits charged to a key (negative for a refund).
func (m *Metrics) Credits(key string, n int64) {
	if m == nil || n == 0 {
		return
	}
	if n < 0 {
		return // a counter only goes up: refunds show in charged-minus-refunded below
	}
	m.credits.WithLabelValues(m.keyLabel(key)).Add(float64(n))
}

// Refused records calls refused for a key's limit.
func (m *Metrics) Refused(key, limit string, calls int) {
	if m == nil || calls == 0 {
		return
	}
	m.refused.WithLabelValues(m.keyLabel(key), limit).Add(float64(calls))
}

// WebSocket records a client WebSocket opening (+1) or closing (-1).
func (m *Metrics) WebSocket(delta int) {
	if m == nil {
		return
	}
	m.wsConns.Add(float64(delta))
}

// Subscription records a client subscription starting (+1) or ending
// (-1).
func (m *Metrics) Subscription(network, kind string, delta int) {
	if m == nil {
		return
	}
	m.subs.WithLabelValues(network, kind).Add(float64(delta))
}

// Notifications records n notifications sent.
func (m *Metrics) Notifications(network, kind string, n int) {
	if m == nil || n == 0 {
		return
	}
	m.notifications.WithLabelValues(network, kind).Add(float64(n))
}

// MeteringFailure records a charge that failed for metering's own fault.
func (m *Metrics) MeteringFailure() {
	if m == nil {
		return
	}
	m.meteringErrors.Inc()
}
