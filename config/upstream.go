package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/porticohq/portico"
)

// This file holds a network's nodes as the config names them: their URLs,
// what each keeps and serves and its own rate (docs/nodes.md), and where
// signed transactions go.

// Upstream is one node.
type Upstream struct {
	// Name labels the node in logs; default is its redacted URL.
	Name string `yaml:"name"`
	// URL is http(s) or ws(s); it may carry secrets and is never logged.
	URL string `yaml:"url"`
	// WSURL, for a node whose URL is http(s), is its WebSocket endpoint:
	// calls go over HTTP, subscriptions over it.
	WSURL string `yaml:"ws_url"`
	// History is how much state the node keeps: "archive", or the number
	// of newest blocks whose state it keeps (128 on a geth full node).
	// Empty says nothing: Portico learns it from the node's answers.
	History string `yaml:"history"`
	// FirstBlock is the oldest block (slot) whose block, transactions and
	// receipts the node has, for a node that pruned them; 0 means all.
	FirstBlock uint64 `yaml:"first_block"`
	// Methods, when set, are the only methods the node serves; Lacks are
	// methods it does not. Each is a method name or a namespace ending in
	// "_" ("debug_"). A call never goes to a node that does not serve it.
	Methods []string `yaml:"methods"`
	Lacks   []string `yaml:"lacks"`
	// Rate is the node's own bound (a provider's plan): calls to it are
	// kept within it, sent to another node or queued.
	Rate NodeRate `yaml:"rate"`
	// MaxLogRange is the widest log query, in blocks, the node takes (a
	// provider's eth_getLogs range): the network's log queries are split
	// into chunks no wider than the narrowest of its nodes' from the
	// start, rather than after their refusals; 0 says nothing.
	MaxLogRange uint64 `yaml:"max_log_range"`
}

// NodeRate is a node's own rate bound; zero fields bound nothing.
type NodeRate struct {
	// PerSecond bounds the calls sent to the node each second.
	PerSecond float64 `yaml:"per_second"`
	// Concurrent bounds the calls in flight at the node.
	Concurrent int `yaml:"concurrent"`
}

// MaxNodeConcurrent bounds an upstream's rate.concurrent.
const MaxNodeConcurrent = 100000

// Reach is what the config says the node keeps and serves.
func (u Upstream) Reach() portico.Reach {
	r := portico.Reach{FirstBlock: u.FirstBlock, Serves: u.Methods, Lacks: u.Lacks, PerSecond: u.Rate.PerSecond, Concurrent: u.Rate.Concurrent}
	if u.History == HistoryArchive {
		r.Archive = true
	} else if n, err := strconv.ParseUint(u.History, 10, 64); err == nil {
		r.StateBlocks = n
	}
	return r
}

// Broadcast modes a network's broadcast may name alone.
const (
	BroadcastAll   = "all"
	BroadcastFirst = "first"
)

// checkBroadcast checks a network's broadcast: all, first, or upstream
// names.
func checkBroadcast(field string, n Network) error {
	names := map[string]bool{}
	for _, u := range n.Upstreams {
		names[u.Name] = true
	}
	for i, b := range n.Broadcast {
		switch {
		case b == BroadcastAll || b == BroadcastFirst:
			if len(n.Broadcast) > 1 {
				return fmt.Errorf("config: %s.broadcast[%d]: %s stands alone", field, i, b)
			}
		case b == "" || !names[b]:
			return fmt.Errorf("config: %s.broadcast[%d]: %q is not all, first, or the name of one of the network's upstreams", field, i, b)
		}
	}
	return nil
}

// NodeRange is the log chunk width a network's nodes take by their config:
// the narrowest max_log_range of its upstreams, or the logs block's
// node_range when that is narrower or none says; 0 when nothing does.
func (n Network) NodeRange() uint64 {
	r := n.Logs.Settings().NodeRange
	for _, u := range n.Upstreams {
		if u.MaxLogRange > 0 && (r == 0 || u.MaxLogRange < r) {
			r = u.MaxLogRange
		}
	}
	return r
}

// HistoryArchive is the history of a node that keeps every block's state.
const HistoryArchive = "archive"

// checkReach checks what an upstream's config says of its reach; field
// names the upstream.
func checkReach(field string, u Upstream) error {
	if u.History != "" && u.History != HistoryArchive {
		if n, err := strconv.ParseUint(u.History, 10, 64); err != nil || n == 0 {
			return fmt.Errorf("config: %s.history: %q must be archive or a number of blocks (at least 1)", field, u.History)
		}
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"methods", u.Methods}, {"lacks", u.Lacks}} {
		for k, m := range l.list {
			if !methodEntry.MatchString(m) {
				return fmt.Errorf("config: %s.%s[%d]: %q is not a method name or a namespace ending in _", field, l.name, k, m)
			}
		}
	}
	if u.Rate.PerSecond < 0 || math.IsNaN(u.Rate.PerSecond) || math.IsInf(u.Rate.PerSecond, 0) {
		return fmt.Errorf("config: %s.rate.per_second: must be a number of calls, at least 0", field)
	}
	if u.Rate.Concurrent < 0 || u.Rate.Concurrent > MaxNodeConcurrent {
		return fmt.Errorf("config: %s.rate.concurrent: must be 0 to %d", field, MaxNodeConcurrent)
	}
	return nil
}

// methodEntry is a method name or a namespace, as an upstream's methods
// and lacks name them.
var methodEntry = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(_[A-Za-z0-9]*)*$`)

// checkUpstreams checks a network's upstreams and its broadcast; field
// names the network.
func checkUpstreams(field string, n Network) error {
	for j, u := range n.Upstreams {
		if err := checkUpstream(u.URL); err != nil {
			return fmt.Errorf("config: %s.upstreams[%d].url: %v", field, j, err)
		}
		if u.WSURL != "" && !strings.HasPrefix(u.WSURL, "ws://") && !strings.HasPrefix(u.WSURL, "wss://") {
			return fmt.Errorf("config: %s.upstreams[%d].ws_url: must be a ws or wss URL", field, j)
		}
		if err := checkReach(fmt.Sprintf("%s.upstreams[%d]", field, j), u); err != nil {
			return err
		}
	}
	return checkBroadcast(field, n)
}

// checkUpstream checks a node's URL, which is never shown (it may carry
// secrets).
func checkUpstream(raw string) error {
	i := strings.Index(raw, "://")
	if i < 0 {
		return errors.New("must be an http, https, ws or wss URL")
	}
	switch raw[:i] {
	case "http", "https", "ws", "wss":
	default:
		return fmt.Errorf("scheme %q is not http, https, ws or wss", raw[:i])
	}
	if len(raw) == i+3 {
		return errors.New("host is missing")
	}
	return nil
}
