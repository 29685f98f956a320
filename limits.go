package portico

import "time"

// Limits bound what clients can make Portico do: request and batch sizes,
// connections, subscriptions, the memory their answers and notifications
// hold, and timeouts. It is the one model of them: the config file's
// `limits:` block decodes into it (hence the YAML names) and the gateway
// runs with it as decoded, so a limit is declared once and never copied
// field by field on its way. Every limit has a clear error when exceeded
// (docs/errors.md). DefaultLimits holds the defaults.
type Limits struct {
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	MaxBatch     int   `yaml:"max_batch"`
	// MaxBatchResponseBytes bounds the results of one batch together; the
	// calls whose results do not fit get an error of their own.
	MaxBatchResponseBytes int64 `yaml:"max_batch_response_bytes"`
	// MaxResultBytes bounds one node answer's result; a larger one is
	// refused while it is read (-32056). The default, 64 MiB, is several
	// times the largest answers of ordinary calls (a full block with its
	// transactions, a provider-capped eth_getLogs, a Solana getBlock: a
	// few MB to ~20 MB), and above the batch bound (25 MiB) since a
	// single call may rightly be larger than a batch's share; yet a
	// quarter of a key's memory budget (key_memory_bytes, 256 MiB), so
	// one key can have four such answers read at once, and no more.
	// Whole-block traces (debug_trace*) can pass it: networks that serve
	// them need more. The nodes enforce it (upstream.Options).
	MaxResultBytes    int64 `yaml:"max_result_bytes"`
	MaxWSMessageBytes int64 `yaml:"max_ws_message_bytes"`
	MaxConnections    int   `yaml:"max_connections"`
	// MaxConnectionsPerIP bounds the connections of one client address, so
	// that one client cannot take every slot; 0 means no such bound (behind
	// a load balancer that hides client addresses).
	MaxConnectionsPerIP int `yaml:"max_connections_per_ip"`
	MaxWSConnections    int `yaml:"max_ws_connections"`
	// MaxWSConnectionsPerKey bounds the WebSocket connections of one API
	// key; 0 means no such bound.
	MaxWSConnectionsPerKey int `yaml:"max_ws_connections_per_key"`
	// MaxSubscriptionsPerConnection and MaxSubscriptionsPerKey bound the
	// subscriptions of one WebSocket and of one key over all of them.
	MaxSubscriptionsPerConnection int `yaml:"max_subscriptions_per_connection"`
	MaxSubscriptionsPerKey        int `yaml:"max_subscriptions_per_key"`
	// MaxNotificationQueue bounds the notifications waiting for a client
	// that does not read them; beyond it the client is disconnected.
	MaxNotificationQueue int `yaml:"max_notification_queue"`
	// MaxResumeBlocks bounds how many blocks back a resumed subscription
	// (resumeFrom, the rollup's block_id, a slot to start from) may start;
	// 0 means DefaultMaxResumeBlocks.
	MaxResumeBlocks int `yaml:"max_resume_blocks"`
	// MemoryBytes bounds what clients and nodes can make the process hold
	// (answers and notifications waiting to be written, batches being
	// assembled, node answers being read); 0 means an eighth of the
	// machine's (or the container's) memory (membudget.DefaultProcessLimit).
	// KeyMemoryBytes bounds it for one key over all its connections and
	// requests, and ConnectionMemoryBytes for one WebSocket connection; 0
	// means no bound of that kind (the process's still holds).
	MemoryBytes           int64         `yaml:"memory_bytes"`
	KeyMemoryBytes        int64         `yaml:"key_memory_bytes"`
	ConnectionMemoryBytes int64         `yaml:"connection_memory_bytes"`
	ReadTimeout           time.Duration `yaml:"read_timeout"`
	// HeaderTimeout is how long a connection may take to send a whole
	// request (its head and body) from its first byte, or its first
	// request from when it opened, before it counts as stalled: when
	// connection slots run short, stalled connections are closed first
	// to make room (docs/errors.md, -32044), so that a client trickling
	// bytes cannot hold slots a new client needs. Unlike ReadTimeout, it
	// closes nothing while slots are left.
	HeaderTimeout time.Duration `yaml:"header_timeout"`
	WriteTimeout  time.Duration `yaml:"write_timeout"`
	IdleTimeout   time.Duration `yaml:"idle_timeout"`
	WSIdleTimeout time.Duration `yaml:"ws_idle_timeout"`
}

// DefaultLimits are the limits `portico serve` runs with when the config
// sets none (docs/configuration.md shows them).
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:                  5 << 20,
		MaxBatch:                      100,
		MaxBatchResponseBytes:         25 << 20,
		MaxResultBytes:                64 << 20,
		MaxWSMessageBytes:             5 << 20,
		MaxConnections:                4096,
		MaxConnectionsPerIP:           512,
		MaxWSConnections:              1024,
		MaxWSConnectionsPerKey:        256,
		MaxSubscriptionsPerConnection: 100,
		MaxSubscriptionsPerKey:        1000,
		MaxNotificationQueue:          1024,
		MaxResumeBlocks:               DefaultMaxResumeBlocks,
		KeyMemoryBytes:                256 << 20,
		ConnectionMemoryBytes:         128 << 20,
		ReadTimeout:                   30 * time.Second,
		HeaderTimeout:                 10 * time.Second,
		WriteTimeout:                  60 * time.Second,
		IdleTimeout:                   120 * time.Second,
		WSIdleTimeout:                 10 * time.Minute,
	}
}

// LogLimits bound a log query (eth_getLogs, the rollup's
// starknet_getEvents): the block range it may span, the addresses and
// topics it may name, and the logs its answer may hold. A network has
// them (config `logs:`), and a key may override them (docs/keys.md); 0
// means no bound of that kind.
type LogLimits struct {
	MaxBlockRange uint64 `yaml:"max_block_range" json:"max_block_range,omitempty"`
	MaxAddresses  int    `yaml:"max_addresses" json:"max_addresses,omitempty"`
	MaxTopics     int    `yaml:"max_topics" json:"max_topics,omitempty"`
	MaxLogs       int    `yaml:"max_logs" json:"max_logs,omitempty"`
}

// Over returns l with each bound that o sets (non-zero) taken from o: a
// key's own bounds over its network's.
func (l LogLimits) Over(o *LogLimits) LogLimits {
	if o == nil {
		return l
	}
	if o.MaxBlockRange != 0 {
		l.MaxBlockRange = o.MaxBlockRange
	}
	if o.MaxAddresses != 0 {
		l.MaxAddresses = o.MaxAddresses
	}
	if o.MaxTopics != 0 {
		l.MaxTopics = o.MaxTopics
	}
	if o.MaxLogs != 0 {
		l.MaxLogs = o.MaxLogs
	}
	return l
}

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

// Data says what a method reads at the block it is about, so that the
// pool sends it only to nodes that keep that (a node's Reach).
type Data uint8

// What a method reads at its block.
const (
	// DataAny: the call is about no block's data, or any node has it.
	DataAny Data = iota
	// DataState: the chain's state at the block (balances, nonces,
	// storage, code, calls run on it): a pruned node keeps only the
	// newest blocks' state.
	DataState
	// DataHistory: the block itself, its transactions, receipts or logs
	// (a slot's block): a node that pruned history keeps them from its
	// first block on.
	DataHistory
)

// Reach is what one node keeps and serves, as configured (or, where the
// config says nothing, as the pool learns from its answers).
type Reach struct {
	// Archive says the node keeps the state of every block.
	Archive bool
	// StateBlocks is how many of the newest blocks' state the node keeps
	// (128 on a geth full node); 0 with Archive false says nothing is
	// known: the pool learns it from the node's answers.
	StateBlocks uint64
	// FirstBlock is the oldest block (slot) whose block, transactions and
	// receipts the node has; 0 means all.
	FirstBlock uint64
	// Serves, when not empty, are the only methods the node serves: a
	// name, or a namespace as its prefix ending in "_" ("debug_").
	Serves []string
	// Lacks are methods or namespaces (as in Serves) the node does not
	// serve.
	Lacks []string
	// PerSecond bounds the calls sent to the node each second (a
	// provider's plan); 0 means no bound.
	PerSecond float64
	// Concurrent bounds the calls in flight at the node; 0 means no bound.
	Concurrent int
}

// ServesMethod reports whether the node serves method, by Serves and
// Lacks.
func (r Reach) ServesMethod(method string) bool {
	if len(r.Serves) > 0 && !matchesMethod(r.Serves, method) {
		return false
	}
	return !matchesMethod(r.Lacks, method)
}

// matchesMethod reports whether method is in list, by name or by a
// namespace prefix ending in "_".
func matchesMethod(list []string, method string) bool {
	for _, m := range list {
		if m == method || (len(m) > 0 && m[len(m)-1] == '_' && len(method) > len(m) && method[:len(m)] == m) {
			return true
		}
	}
	return false
}
