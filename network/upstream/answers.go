package upstream

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// Classifier sorts a node's JSON-RPC error answers into the classes of
// portico.Answer, once, where the pool gets them: by the hosted
// providers' words (ProviderAnswers, the same for every family), then by
// the family's (portico.Chain.Answers). The first rule that matches wins;
// words no rule knows are the client's own error, passed on unchanged.
type Classifier struct {
	rules []portico.AnswerRule
}

// NewClassifier returns the classifier of a family's rules.
func NewClassifier(family []portico.AnswerRule) *Classifier {
	rules := make([]portico.AnswerRule, 0, len(ProviderAnswers)+len(family))
	rules = append(rules, ProviderAnswers...)
	rules = append(rules, family...)
	for i := range rules {
		rules[i].Words = strings.ToLower(rules[i].Words)
	}
	return &Classifier{rules: rules}
}

// Classify returns the class of a node's error answer: its code and the
// words of its message and data.
func (c *Classifier) Classify(e *jsonrpc.Error) portico.Answer {
	if c == nil || e == nil {
		return portico.AnswerClient
	}
	var msg, data string
	for _, r := range c.rules {
		if r.Code != 0 && r.Code != e.Code {
			continue
		}
		if r.Words == "" {
			return r.Class
		}
		if msg == "" {
			msg = strings.ToLower(e.Message)
			if len(e.Data) > 0 {
				data = strings.ToLower(string(e.Data))
			}
		}
		if strings.Contains(msg, r.Words) || (data != "" && strings.Contains(data, r.Words)) {
			return r.Class
		}
	}
	return portico.AnswerClient
}

// ProviderAnswers are the hosted providers' words for their rate limits
// and capacity, and the JSON-RPC spec's own codes that say a node lacks a
// method, whatever the node software behind them. They come before a
// family's rules (a provider's -32007 is not the slot chain's skipped
// slot).
var ProviderAnswers = []portico.AnswerRule{
	// Alchemy: {"code":429,"message":"Your app has exceeded its compute
	// units per second capacity. …"}; the code mirrors HTTP 429.
	{Code: 429, Class: portico.AnswerLimited, Source: "Alchemy: code 429, compute units per second capacity"},
	{Words: "compute units per second capacity", Class: portico.AnswerLimited, Source: "Alchemy"},
	// Infura: -32005 "daily request count exceeded, request rate
	// limited"; "project ID request rate exceeded".
	{Words: "request rate limited", Class: portico.AnswerLimited, Source: "Infura: -32005 daily request count exceeded, request rate limited"},
	{Words: "request rate exceeded", Class: portico.AnswerLimited, Source: "Infura: project ID request rate exceeded"},
	// QuickNode: -32007 "15/second request limit reached - reduce calls
	// per second or upgrade your account at quicknode.com".
	{Words: "request limit reached", Class: portico.AnswerLimited, Source: "QuickNode: -32007 …/second request limit reached"},
	// Ankr: -32090 "Too many requests, reason: call rate limit
	// exhausted, retry in 10s".
	{Words: "rate limit exhausted", Class: portico.AnswerLimited, Source: "Ankr: -32090 call rate limit exhausted"},
	// Many providers and proxies in front of nodes (Chainstack,
	// publicnode, Helius, nginx limit_req written as JSON-RPC).
	{Words: "too many requests", Class: portico.AnswerLimited, Source: "Chainstack, Helius, Ankr, publicnode: Too Many Requests"},
	{Words: "rate limit", Class: portico.AnswerLimited, Source: "generic: rate limit exceeded / rate limited"},
	{Words: "capacity exceeded", Class: portico.AnswerLimited, Source: "generic: capacity exceeded"},
	// The JSON-RPC spec's "method not found": Portico forwards only
	// methods the network's list allows, so a node that does not know
	// one lacks it (a full node without debug_, a provider without
	// eth_getProof); another node may serve it.
	{Code: -32601, Class: portico.AnswerMissing, Source: "JSON-RPC 2.0: -32601 method not found"},
}

// LimitedError is a node's HTTP answer that it is over its rate or
// capacity (429, or 503 with Retry-After): the node is left alone for
// RetryAfter and the call goes to another node. It is not the node's
// fault.
type LimitedError struct {
	Status     int
	RetryAfter time.Duration // 0 when the node did not say
}

// Error says what the node answered.
func (e *LimitedError) Error() string {
	if e.RetryAfter > 0 {
		return "HTTP " + strconv.Itoa(e.Status) + ", retry after " + e.RetryAfter.String()
	}
	return "HTTP " + strconv.Itoa(e.Status)
}

// Unwrap marks it as the node's unavailability, for what only asks
// whether a node could answer.
func (e *LimitedError) Unwrap() error { return portico.ErrUpstreamUnavailable }

// parseRetryAfter reads an HTTP Retry-After value: seconds, or an HTTP
// date; 0 when absent or unreadable.
func parseRetryAfter(v []byte, now time.Time) time.Duration {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return 0
	}
	if s, err := strconv.Atoi(string(v)); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := time.Parse(time.RFC1123, string(v)); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// limitedFor is how long a node that answered err is left alone: err's
// Retry-After within [1s, 60s], or 1s.
func limitedFor(err error) time.Duration {
	var le *LimitedError
	if errors.As(err, &le) && le.RetryAfter > 0 {
		return min(max(le.RetryAfter, time.Second), time.Minute)
	}
	return time.Second
}
