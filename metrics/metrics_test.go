package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metrics"
	"github.com/porticohq/portico/network/upstream"
)

// exported returns the names of Portico's metrics as Prometheus writes
// them, with their types, once each kind has a series.
func exported(t *testing.T) map[string]string {
	t.Helper()
	m := metrics.New()
	if err := m.WatchNodes(func() map[string][]upstream.NodeState {
		return map[string][]upstream.NodeState{"evm": {{Name: "a", Heads: portico.Heads{Latest: 9}, P50: time.Millisecond, Answers: map[string]uint64{"result": 1}}}}
	}); err != nil {
		t.Fatal(err)
	}
	if err := m.WatchMemory(func() int64 { return 1 }, func() int64 { return 2 }); err != nil {
		t.Fatal(err)
	}
	m.Call("evm", "eth_call", "eth_call", metrics.OutcomeOK, 0, 0.001)
	m.Upstream("evm", "a", 0.001, true)
	m.Cache("evm", "eth_call", true)
	m.Coalesced("evm", "eth_call")
	m.Credits("k", 1)
	m.Refused("k", portico.QuotaDaily, 1)
	m.WebSocket(1)
	m.Subscription("evm", "newHeads", 1)
	m.Notifications("evm", "newHeads", 1)
	m.MeteringFailure()
	m.Verified("evm", "eth_getBalance", metrics.VerifyVerified)
	m.VerifyFault("evm", "a", "eth_getProof")
	m.TxEvent("evm", metrics.TxSent)
	m.TxLanded("evm", time.Second)
	m.TxBroadcast("evm", 3)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range fams {
		if strings.HasPrefix(f.GetName(), "portico_") {
			out[f.GetName()] = strings.ToLower(f.GetType().String())
		}
	}
	return out
}

// TestMetricNames: names follow Prometheus conventions: counters end in
// _total, histograms of time in _seconds.
func TestMetricNames(t *testing.T) {
	for name, typ := range exported(t) {
		switch {
		case typ == "counter" && !strings.HasSuffix(name, "_total"):
			t.Errorf("counter %s does not end in _total", name)
		case typ != "counter" && strings.HasSuffix(name, "_total"):
			t.Errorf("%s %s ends in _total", typ, name)
		case typ == "histogram" && !strings.HasSuffix(name, "_seconds"):
			t.Errorf("histogram %s is not in seconds", name)
		}
	}
}

var metricRef = regexp.MustCompile(`\bportico_[a-z_]+`)

// TestGrafanaDashboard: every query of the shipped Grafana dashboard is on
// metrics Portico exports, and every metric is on some panel.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile("../deploy/grafana/portico.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil || dash.UID == "" {
		t.Fatalf("dashboard JSON: %v", err)
	}
	names := exported(t)
	used := map[string]bool{}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, ref := range metricRef.FindAllString(tg.Expr, -1) {
				base := ref
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if b, ok := strings.CutSuffix(ref, suffix); ok && names[b] == "histogram" {
						base = b
					}
				}
				if names[base] == "" {
					t.Errorf("panel %q queries %s, which Portico does not export", p.Title, ref)
				}
				used[base] = true
			}
		}
	}
	for name := range names {
		if !used[name] {
			t.Errorf("%s is on no panel of the dashboard", name)
		}
	}
}

// TestMetricsDoc: docs/operations.md's table lists each metric once with
// its type.
func TestMetricsDoc(t *testing.T) {
	raw, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `(portico_[a-z_]+)` \\| ([a-z]+) \\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		if documented[m[1]] != "" {
			t.Errorf("%s is documented twice", m[1])
		}
		documented[m[1]] = m[2]
	}
	names := exported(t)
	for name, typ := range names {
		if documented[name] != typ {
			t.Errorf("docs/operations.md: %s is %q, want a row saying %s", name, documented[name], typ)
		}
	}
	for name := range documented {
		if names[name] == "" {
			t.Errorf("docs/operations.md documents %s, which Portico does not export", name)
		}
	}
}
