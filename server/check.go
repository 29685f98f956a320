package server

import (
	"fmt"
	"log/slog"
	"net/url"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/network/upstream"
)

// CheckConfig runs every check that serve runs before it opens anything,
// and names the first bad field. A config that names no networks gets one
// built-in network per registered family first. Then config's own field
// checks; then, per network, its family, its method allowlist and costs
// against the family's method table, its upstream URLs, and its devnet
// settings against what the family's devnet takes.
func CheckConfig(cfg *config.Config) error {
	if len(cfg.Networks) == 0 {
		for _, f := range families.All() {
			cfg.Networks = append(cfg.Networks, config.Network{Name: f.Network, Family: f.Name})
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	for i := range cfg.Networks {
		n := &cfg.Networks[i]
		field := fmt.Sprintf("config: networks[%d]", i)
		fam, err := families.Get(n.Family)
		if err != nil {
			return fmt.Errorf("%s.family: %v", field, err)
		}
		if err := fam.CheckVerify(field, n); err != nil {
			return err
		}
		embedded := len(n.Upstreams) == 0 && !n.Devnet.Disabled
		if _, err := gateway.NewMethods(fam.Table(embedded), gateway.MethodsConfig{Allow: n.Methods, Enable: n.Enable, Costs: n.Costs, DefaultCost: n.DefaultCost, NotificationCosts: n.NotificationCosts}); err != nil {
			return fmt.Errorf("%s.%v", field, err)
		}
		table := fam.Table(embedded)
		for j, u := range n.Upstreams {
			if _, err := url.Parse(u.URL); err != nil {
				return fmt.Errorf("%s.upstreams[%d].url: not a URL (%s)", field, j, upstream.Redact(u.URL))
			}
			if err := checkNodeMethods(table, u); err != nil {
				return fmt.Errorf("%s.upstreams[%d].%v", field, j, err)
			}
		}
		if embedded {
			d, err := fam.NewDevnet(devnetConfig("", slog.New(slog.DiscardHandler), n))
			if err != nil {
				return fmt.Errorf("%s.devnet: %v", field, err)
			}
			_ = d.Close() // built to check its settings, never started
		}
	}
	return nil
}

// checkNodeMethods refuses an upstream's methods or lacks entry that is
// not a method or namespace of the family's table.
func checkNodeMethods(table portico.Table, u config.Upstream) error {
	for _, l := range []struct {
		name string
		list []string
	}{{"methods", u.Methods}, {"lacks", u.Lacks}} {
		for k, m := range l.list {
			if !table.Knows(m) {
				return fmt.Errorf("%s[%d]: %q is not a method or namespace of the %s family", l.name, k, m, table.Family)
			}
		}
	}
	return nil
}
