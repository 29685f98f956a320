package portico

import (
	"errors"
	"fmt"
	"time"
)

// Portico's own JSON-RPC error codes, the range -32040 to -32059 plus the
// -32005 that hosted providers use for limits. They are defined here and
// nowhere else; jsonrpc.ErrorFor maps every error to its code and HTTP
// status in one function, and docs/errors.md is the table a test keeps in
// step with it.
const (
	CodeLimitExceeded = -32005
	CodeUnauthorized  = -32040
	// CodeForbidden was answered for a key's allowlists before issue 26,
	// which moved them to CodeKeyRejected; kept so the number is not
	// reused.
	CodeForbidden         = -32041
	CodeBodyTooLarge      = -32042
	CodeBatchTooLarge     = -32043
	CodeTooManyConns      = -32044
	CodeUpstreamDown      = -32045
	CodeUpstreamTimeout   = -32046
	CodeClientTimeout     = -32047
	CodeNetworkUnknown    = -32048
	CodeWrongContentType  = -32049
	CodeMethodNotAllowed  = -32050
	CodeWSMessageTooLarge = -32051
	CodeMeteringDown      = -32052
	CodeHeadersTooLarge   = -32053
	CodeBatchResponse     = -32054
	CodeTooManySubs       = -32055
	CodeResultTooLarge    = -32056
	CodeMemoryBusy        = -32057
	// CodeUnverified: in verify: strict, no node gave an answer that could
	// be verified (issue 27).
	CodeUnverified = -32058
	// CodeKeyRejected: a key's own settings (its allowlists: methods,
	// networks, origins, contract addresses, User-Agents) refused the
	// call; the message names the list (issue 26). -32002 is what Infura
	// answers for the same case ("rejected due to project ID settings").
	CodeKeyRejected = -32002
	// CodeLogsTooLarge: an eth_getLogs (or starknet_getEvents) asked for
	// more than the network's or the key's bounds allow; the message
	// suggests a range that would fit (issue 26).
	CodeLogsTooLarge = -32059
	// CodeNotKept answers a call about data no node of the network keeps
	// by its configured reach (MissingError).
	CodeNotKept = -32060
)

// Sentinel errors of the gateway. jsonrpc.ErrorFor maps each to a JSON-RPC
// code and an HTTP status (see docs/errors.md); the text here is for logs.
var (
	// ErrKeyMissing means the URL path carries no API key.
	ErrKeyMissing = errors.New("portico: API key missing")
	// ErrKeyMalformed means the path segment cannot be an API key.
	ErrKeyMalformed = errors.New("portico: API key malformed")
	// ErrKeyUnknown means the key is well formed but not known (or revoked).
	ErrKeyUnknown = errors.New("portico: API key unknown")
	// ErrNoUpstream means the network has no node to forward to.
	ErrNoUpstream = errors.New("portico: no upstream configured")
	// ErrUpstreamUnavailable means no upstream could be reached or every
	// upstream answered with a transport-level failure.
	ErrUpstreamUnavailable = errors.New("portico: upstream unavailable")
	// ErrUpstreamTimeout means the upstream did not answer in time.
	ErrUpstreamTimeout = errors.New("portico: upstream timed out")
	// ErrNetworkUnknown means the Host of a request on the shared listener
	// names no network.
	ErrNetworkUnknown = errors.New("portico: unknown network host")
	// ErrClientTimeout means the client did not send its request in time.
	ErrClientTimeout = errors.New("portico: client too slow")
	// ErrMeteringUnavailable means calls cannot be charged (the counter or
	// the journal failed), so they are refused rather than served unbilled.
	ErrMeteringUnavailable = errors.New("portico: metering unavailable")
	// ErrWrongContentType means a POST did not carry application/json.
	ErrWrongContentType = errors.New("portico: Content-Type must be application/json")
	// ErrHTTPMethod means an HTTP method other than POST (or OPTIONS)
	// reached a JSON-RPC endpoint.
	ErrHTTPMethod = errors.New("portico: HTTP method must be POST")
	// ErrSecretMissing means the key has a secret and the request carried
	// none (docs/keys.md).
	ErrSecretMissing = errors.New("portico: API key secret missing")
	// ErrSecretWrong means the request carried a secret that is not the
	// key's (nor, during a rotation's grace period, its previous one).
	ErrSecretWrong = errors.New("portico: API key secret wrong")
	// ErrFilterNotFound means a call names a log filter the gateway does
	// not keep for the calling key (never made, uninstalled, or expired);
	// answered as go-ethereum answers it.
	ErrFilterNotFound = errors.New("filter not found")
	// ErrNoBlock, wrapped by a family's header reader, means the node
	// answered that it has no block by the hash asked (a block a reorg
	// dropped and the node forgot): not a failure of the node.
	ErrNoBlock = errors.New("portico: the node has no such block")
)

// HeaderKeySecret is the request header that may carry a key's secret,
// beside the password of HTTP Basic auth (docs/keys.md).
const HeaderKeySecret = "X-Portico-Secret"

// JWTError reports a request to a key that requires a JWT whose token was
// missing or refused. It answers 401 with CodeUnauthorized; Reason is what
// the client sees, and says what to fix (never which parts were right).
type JWTError struct {
	Reason string
}

// Error says why the token was refused.
func (e *JWTError) Error() string { return "JWT refused: " + e.Reason }

// ParamsError reports params that break a method's rules. It answers -32602,
// and its message names the param's position (for positional params) and the
// field inside it.
type ParamsError struct {
	// Position is the 1-based position of the param for positional params,
	// or 0 when the params are named or the error concerns them all.
	Position int
	// Field is the dotted path of the offending field, such as
	// "config.commitment" or "filter.keys[1][0]"; empty for the params as a
	// whole.
	Field string
	// Reason says what is wrong, in words a caller can act on.
	Reason string
}

// Error formats the message a client sees.
func (e *ParamsError) Error() string {
	switch {
	case e.Position > 0 && e.Field != "":
		return fmt.Sprintf("invalid params: param %d (%s): %s", e.Position, e.Field, e.Reason)
	case e.Position > 0:
		return fmt.Sprintf("invalid params: param %d: %s", e.Position, e.Reason)
	case e.Field != "":
		return fmt.Sprintf("invalid params: %s: %s", e.Field, e.Reason)
	}
	return "invalid params: " + e.Reason
}

// ErrorCode returns -32602, JSON-RPC's invalid params.
func (e *ParamsError) ErrorCode() int { return -32602 }

// MethodNotFoundError reports a method that is neither in the family's table
// nor in the network's allowlist.
type MethodNotFoundError struct {
	Method string
}

// Error uses the wording clients of go-ethereum nodes already recognise.
func (e *MethodNotFoundError) Error() string {
	return fmt.Sprintf("the method %s does not exist/is not available", e.Method)
}

// ErrorCode returns -32601, JSON-RPC's method not found.
func (e *MethodNotFoundError) ErrorCode() int { return -32601 }

// AnsweredError marks an error Portico answers in place of a node: the
// method is not on the network's list, or its params break a rule the
// family checks before forwarding. Its code is the one a node would use
// (-32601, -32602, a spec's code); jsonrpc.ErrorFor adds the data
// {"source":"portico"} so that a client can tell it from a node's.
type AnsweredError struct {
	Err error
}

// Answered wraps err, when not nil, as Portico's own answer.
func Answered(err error) error {
	if err == nil {
		return nil
	}
	return &AnsweredError{Err: err}
}

// Error returns the wrapped error's message.
func (e *AnsweredError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *AnsweredError) Unwrap() error { return e.Err }

// LimitError reports a request that exceeds one of the gateway's size or
// count limits.
type LimitError struct {
	// Limit names the limit: one of the Limit* constants.
	Limit string
	// Max is the configured maximum.
	Max int64
	// Got is the observed value, or 0 when it is not known (a body is not
	// read past the limit).
	Got int64
}

// Names of the limits a LimitError can report.
const (
	LimitBody             = "request body"
	LimitBatch            = "batch"
	LimitWSMessage        = "websocket message"
	LimitConnections      = "connections"
	LimitConnectionsPerIP = "connections per address"
	LimitWSPerKey         = "websocket connections per key"
	LimitHeaders          = "request headers"
	LimitBatchResponse    = "batch response"
	LimitSubscriptions    = "subscriptions per connection"
	LimitKeySubscriptions = "subscriptions per key"
	// LimitKeyFilters is the log filters one key may keep on a network.
	LimitKeyFilters = "log filters per key"
	// LimitResult is one node answer's size (limits.max_result_bytes),
	// checked while the answer is read.
	LimitResult = "result"
	// LimitMemory is a memory budget (per connection, per key or for the
	// process) that holding one more answer would pass.
	LimitMemory = "memory budget"
)

// Error describes which limit was hit.
func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitBody:
		return fmt.Sprintf("request body too large: limit is %d bytes", e.Max)
	case LimitBatch:
		return fmt.Sprintf("batch too large: limit is %d calls, got %d", e.Max, e.Got)
	case LimitWSMessage:
		return fmt.Sprintf("websocket message too large: limit is %d bytes", e.Max)
	case LimitConnections:
		return fmt.Sprintf("too many connections: limit is %d", e.Max)
	case LimitConnectionsPerIP:
		return fmt.Sprintf("too many connections from this address: limit is %d", e.Max)
	case LimitWSPerKey:
		return fmt.Sprintf("too many websocket connections for this API key: limit is %d", e.Max)
	case LimitSubscriptions:
		return fmt.Sprintf("too many subscriptions on this connection: limit is %d", e.Max)
	case LimitKeySubscriptions:
		return fmt.Sprintf("too many subscriptions for this API key: limit is %d", e.Max)
	case LimitKeyFilters:
		return fmt.Sprintf("too many log filters for this API key on this network: limit is %d; uninstall one, or let one expire (5 minutes unpolled)", e.Max)
	case LimitBatchResponse:
		return fmt.Sprintf("batch response too large: this call's result does not fit in the batch's limit of %d bytes", e.Max)
	case LimitHeaders:
		return fmt.Sprintf("request headers too large: limit is %d bytes", e.Max)
	case LimitResult:
		return fmt.Sprintf("result too large: the node's answer passes the limit of %d bytes", e.Max)
	case LimitMemory:
		return fmt.Sprintf("server busy: this answer does not fit the memory budget of %d bytes; retry later", e.Max)
	}
	return fmt.Sprintf("%s limit exceeded: limit is %d", e.Limit, e.Max)
}

// UpstreamError wraps a failure to get an answer from a network's nodes. Err
// is ErrUpstreamTimeout, ErrUpstreamUnavailable or ErrNoUpstream, possibly
// wrapping the cause. Upstream names the node with secrets redacted.
type UpstreamError struct {
	Network  string
	Upstream string
	Err      error
}

// Error describes the failure; it may be logged, since Upstream is redacted.
func (e *UpstreamError) Error() string {
	if e.Upstream == "" {
		return fmt.Sprintf("network %s: %v", e.Network, e.Err)
	}
	return fmt.Sprintf("network %s: upstream %s: %v", e.Network, e.Upstream, e.Err)
}

// Unwrap returns the cause.
func (e *UpstreamError) Unwrap() error { return e.Err }

// Quota limits: the ways a key runs out.
const (
	// QuotaDaily is the daily credit balance, reset at 00:00 UTC.
	QuotaDaily = "daily"
	// QuotaRate is the key's credits-per-second rate limit.
	QuotaRate = "rate"
	// QuotaRequests is the key's own bound on calls per second, apart
	// from credits (docs/keys.md).
	QuotaRequests = "requests"
	// QuotaConcurrent is the key's own bound on calls in flight at once.
	QuotaConcurrent = "concurrent"
)

// QuotaError reports a call refused because its key has run out of credits
// for the day or is over its rate limit. It answers HTTP 429 with code
// -32005, and nothing is charged.
type QuotaError struct {
	// Limit is QuotaDaily or QuotaRate.
	Limit string
	// Key is the key's name (never the key).
	Key string
	// Cost is what the refused call or batch would have cost.
	Cost int64
	// Remaining and Daily describe the balance (QuotaDaily).
	Remaining, Daily int64
	// Rate is the credits-per-second limit (QuotaRate), the calls per
	// second (QuotaRequests) or the calls in flight (QuotaConcurrent).
	Rate int64
	// ResetAt is when the daily balance is refilled (QuotaDaily).
	ResetAt time.Time
	// RetryAfter is how long to wait before the call can pass.
	RetryAfter time.Duration
}

// Error says which limit was hit and when to try again.
func (e *QuotaError) Error() string {
	switch e.Limit {
	case QuotaRequests:
		return fmt.Sprintf("request rate exceeded for key %q: %d calls per second; retry after %s",
			e.Key, e.Rate, e.RetryAfter.Round(time.Millisecond))
	case QuotaConcurrent:
		return fmt.Sprintf("too many calls in flight for key %q: limit is %d at once; retry after %s",
			e.Key, e.Rate, e.RetryAfter.Round(time.Millisecond))
	}
	if e.Limit == QuotaRate {
		return fmt.Sprintf("rate limit exceeded for key %q: %d credits per second, this call costs %d; retry after %s",
			e.Key, e.Rate, e.Cost, e.RetryAfter.Round(time.Millisecond))
	}
	return fmt.Sprintf("daily credit balance exhausted for key %q: this call costs %d, %d of %d credits left; resets at %s",
		e.Key, e.Cost, e.Remaining, e.Daily, e.ResetAt.UTC().Format(time.RFC3339))
}

// ErrorCode returns CodeLimitExceeded, the code hosted providers use for
// limits.
func (e *QuotaError) ErrorCode() int { return CodeLimitExceeded }

// ForbiddenError reports a call that one of the key's allowlists does
// not permit. It answers 403 with CodeKeyRejected, and data.reason names
// the list.
type ForbiddenError struct {
	// What names the list: one of the Allow* constants.
	What string
	// Value is the refused method, network, origin, address or
	// User-Agent; empty when the request has none.
	Value string
	// Field names where in the params a refused address, or what made
	// the params unreadable for the list, is ("params[0].to"); empty for
	// the lists of the whole request.
	Field string
	// Reason, when set, says why the call was refused instead of naming
	// a Value: params the list cannot read as every node would, or a
	// method that may reach contracts its params do not name.
	Reason string
}

// The allowlists of a key, as ForbiddenError.What and data.reason name
// them.
const (
	AllowMethod    = "method"
	AllowNetwork   = "network"
	AllowOrigin    = "origin"
	AllowAddress   = "address"
	AllowUserAgent = "user_agent"
)

// Error names what is not allowed and by which list.
func (e *ForbiddenError) Error() string {
	what := e.What
	switch what {
	case AllowAddress:
		what = "contract address"
	case AllowUserAgent:
		what = "User-Agent"
	}
	var msg string
	switch {
	case e.Reason != "":
		msg = e.Reason
	case e.Value == "":
		msg = fmt.Sprintf("this API key is restricted by %s and the call has none", what)
	default:
		msg = fmt.Sprintf("%s %q is not allowed for this API key", what, e.Value)
	}
	if e.Field != "" {
		return e.Field + ": " + msg
	}
	return msg
}

// ErrUnverified is the kind of every UnverifiedError.
var ErrUnverified = errors.New("portico: no verifiable answer")

// UnverifiedError reports a call on a network with verify on or strict
// (docs/verify.md) that no node answered with something Portico could
// check against a trusted header: in strict, an answer nothing commits to;
// in either mode, answers that every node asked got wrong. Reason says
// why, for the client and the log; it never names a node.
type UnverifiedError struct {
	Network string
	Method  string
	Reason  string
}

// Error describes what could not be verified.
func (e *UnverifiedError) Error() string {
	return fmt.Sprintf("unverified: no node gave an answer to %s on network %s that could be verified: %s", e.Method, e.Network, e.Reason)
}

// Unwrap returns ErrUnverified.
func (e *UnverifiedError) Unwrap() error { return ErrUnverified }

// LogRangeError is a log query refused before any node was asked because
// the served chain shows its range to be wrong (LogQuery.Wrong): it costs
// nothing. Err is the family's answer, which gives the code and message.
type LogRangeError struct{ Err error }

// Error is the family's message.
func (e *LogRangeError) Error() string { return e.Err.Error() }

// Unwrap returns the family's error, which carries the code.
func (e *LogRangeError) Unwrap() error { return e.Err }

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

// MissingError reports a call about data that no node of the network
// keeps: every node that was asked answered that it lacks it (pruned
// state, a cleaned-up slot, a method it does not serve), or none keeps it
// by its configured reach and none was asked. It carries the last node's
// code, so that a client that acts on a node's code (a skipped slot) still
// can; with no node asked, CodeNotKept.
type MissingError struct {
	Network string
	// What names the data: "the state of block 5", "block 0x…".
	What string
	// Code and Message are the last node's answer; Code is 0 when no node
	// was asked.
	Code    int
	Message string
	// Node is the last node's answer as an error (its *jsonrpc.Error),
	// for what reads the node's own code; nil when no node was asked.
	Node error
}

// Unwrap returns the last node's answer.
func (e *MissingError) Unwrap() error { return e.Node }

// Error names the network, the data and what the last node said.
func (e *MissingError) Error() string {
	msg := fmt.Sprintf("no node of network %s keeps %s", e.Network, e.What)
	if e.Code != 0 {
		msg += "; the last node asked said: " + e.Message
	}
	return msg
}

// ErrorCode is the last node's code, or CodeNotKept.
func (e *MissingError) ErrorCode() int {
	if e.Code != 0 {
		return e.Code
	}
	return CodeNotKept
}

// Answer is the class of a node's JSON-RPC error answer: every answer is
// classified once, by the family's rules (Chain.Answers), and the pool
// acts on the class alone.
type Answer uint8

// The classes of a node's error answers.
const (
	// AnswerClient is the client's own error (bad params, execution
	// reverted): passed on unchanged, never retried, not the node's fault.
	// Words no rule knows are taken as this.
	AnswerClient Answer = iota
	// AnswerMissing: the node lacks the data asked about (pruned state, a
	// cleaned-up slot): another node may have it. Not a fault.
	AnswerMissing
	// AnswerLimited: the node's own rate limit or capacity; the node is
	// left alone for a while and another asked. Not a fault.
	AnswerLimited
	// AnswerUnhealthy: the node is unhealthy or behind (syncing, no
	// peers, internal failure): a fault, another node is asked.
	AnswerUnhealthy
	// AnswerTooLarge: a range or answer size the node refuses (a log
	// query): the network splits it.
	AnswerTooLarge
	// AnswerKnown: the node already has the transaction it was sent: for
	// a broadcast send, as good as taking it.
	AnswerKnown
)

// String names the class, as in metrics and docs/nodes.md.
func (a Answer) String() string {
	switch a {
	case AnswerMissing:
		return "missing"
	case AnswerLimited:
		return "limited"
	case AnswerUnhealthy:
		return "unhealthy"
	case AnswerTooLarge:
		return "too_large"
	case AnswerKnown:
		return "known"
	}
	return "client"
}

// AnswerRule is one row of a family's table of node words: an error
// answer whose code is Code (0: any) and whose message contains Words
// (matched in lower case) is of Class. Source names the node software
// and where in its source the words come from.
type AnswerRule struct {
	Code   int
	Words  string
	Class  Answer
	Source string
}
