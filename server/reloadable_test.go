package server

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/gateway"
)

// TestReloadable: what a reload may change, and the field a refused one
// names; docs/operations.md names every refused field in its "needs a
// restart" paragraph.
func TestReloadable(t *testing.T) {
	base := func() config.Config {
		c := config.DefaultConfig()
		c.Networks = []config.Network{{Name: "evm", Family: "evm", Upstreams: []config.Upstream{{URL: "http://127.0.0.1:1"}}}}
		return c
	}
	tests := []struct {
		name   string
		change func(*config.Config)
		field  string // "" when the reload is taken
	}{
		{"nothing", func(*config.Config) {}, ""},
		{"keys", func(c *config.Config) { c.Keys = []config.Key{{Name: "k", Key: strings.Repeat("k", 32)}} }, ""},
		{"a network added", func(c *config.Config) { c.Networks = append(c.Networks, config.Network{Name: "b", Family: "evm"}) }, ""},
		{"a network removed", func(c *config.Config) { c.Networks = nil }, ""},
		{"upstreams", func(c *config.Config) { c.Networks[0].Upstreams[0].URL = "http://127.0.0.1:2" }, ""},
		{"costs", func(c *config.Config) { c.Networks[0].Costs = map[string]int{"eth_call": 3} }, ""},
		{"call limits", func(c *config.Config) {
			c.Limits.MaxBatch, c.Limits.MemoryBytes, c.Limits.WSIdleTimeout = 3, 1<<30, time.Hour
		}, ""},
		{"hit discount", func(c *config.Config) { c.Cache.HitDiscountPercent = 50 }, ""},
		{"listen", func(c *config.Config) { c.Listen = "127.0.0.1:9999" }, "listen"},
		{"a network's listen", func(c *config.Config) { c.Networks[0].Listen = "off" }, "networks[0].listen"},
		{"data_dir", func(c *config.Config) { c.DataDir = "/elsewhere" }, "data_dir"},
		{"store", func(c *config.Config) { c.Store.Postgres = "postgres://x" }, "store.postgres"},
		{"metering", func(c *config.Config) { c.Metering.Disabled = true }, "metering.disabled"},
		{"admin", func(c *config.Config) { c.Admin.Token = strings.Repeat("t", 16) }, "admin.token"},
		{"cache", func(c *config.Config) { c.Cache.MaxBytes = 1 }, "cache.max_bytes"},
		{"log", func(c *config.Config) { c.Log.Level = "debug" }, "log.level"},
		{"metrics", func(c *config.Config) { c.Metrics.Disabled = true }, "metrics.disabled"},
		{"tracing", func(c *config.Config) { c.Tracing.Endpoint = "http://127.0.0.1:4318" }, "tracing.endpoint"},
		{"body bound", func(c *config.Config) { c.Limits.MaxBodyBytes = 1 }, "limits.max_body_bytes"},
		{"read timeout", func(c *config.Config) { c.Limits.ReadTimeout = time.Hour }, "limits.read_timeout"},
		{"write timeout", func(c *config.Config) { c.Limits.WriteTimeout = time.Hour }, "limits.write_timeout"},
		{"idle timeout", func(c *config.Config) { c.Limits.IdleTimeout = time.Hour }, "limits.idle_timeout"},
		{"result bound", func(c *config.Config) { c.Limits.MaxResultBytes = 1 }, "limits.max_result_bytes"},
	}
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, restart, _ := strings.Cut(string(doc), "**What needs a restart**")
	restart, _, _ = strings.Cut(restart, "\n\n")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			was, now := base(), base()
			tc.change(&now)
			err := reloadable(&was, &now)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, gateway.ErrNotReloadable) || !strings.HasPrefix(err.Error(), "config: "+tc.field+": ") {
				t.Fatalf("err = %v, want one naming %s", err, tc.field)
			}
			// The paragraph names a block by its top field, a limit and
			// a network's field by their own names.
			named, _, _ := strings.Cut(tc.field, ".")
			switch {
			case strings.HasPrefix(tc.field, "limits."):
				named = tc.field
			case strings.HasPrefix(tc.field, "networks["):
				_, named, _ = strings.Cut(tc.field, ".")
			}
			if !strings.Contains(restart, "`"+named+"`") {
				t.Errorf("docs/operations.md's restart paragraph does not name `%s`", named)
			}
		})
	}
}

// TestSameServed: which changes to a network keep its nodes and
// network.Network.
func TestSameServed(t *testing.T) {
	base := config.Network{Name: "evm", Family: "evm", Upstreams: []config.Upstream{{URL: "http://127.0.0.1:1"}}}
	tests := []struct {
		name   string
		change func(*config.Network)
		same   bool
	}{
		{"hosts", func(n *config.Network) { n.Hosts = []string{"x.example"} }, true},
		{"methods and enable", func(n *config.Network) { n.Methods, n.Enable = []string{"eth_call"}, []string{"debug"} }, true},
		{"costs", func(n *config.Network) {
			n.Costs, n.DefaultCost, n.NotificationCosts = map[string]int{"eth_call": 1}, 2, map[string]int{"newHeads": 3}
		}, true},
		{"upstream url", func(n *config.Network) { n.Upstreams[0].URL = "http://127.0.0.1:2" }, false},
		{"upstream name", func(n *config.Network) { n.Upstreams[0].Name = "primary" }, false},
		{"an upstream more", func(n *config.Network) { n.Upstreams = append(n.Upstreams, config.Upstream{URL: "http://127.0.0.1:3"}) }, false},
		{"timeout", func(n *config.Network) { n.Timeout = time.Second }, false},
		{"hedge", func(n *config.Network) { n.Hedge.Disabled = true }, false},
		{"chain id", func(n *config.Network) { n.ChainID = "0x1" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := base
			now.Upstreams = append([]config.Upstream(nil), base.Upstreams...)
			tc.change(&now)
			if got := sameServed(&base, &now); got != tc.same {
				t.Fatalf("sameServed = %v, want %v", got, tc.same)
			}
		})
	}
}
