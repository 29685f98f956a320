package main

import (
	"fmt"
	"log/slog"
	"net/url"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/gateway"
	"github.com/porticohq/portico/network/upstream"
)

// ConfigCmd groups the config commands.
type ConfigCmd struct {
	Check ConfigCheckCmd `cmd:"" help:"Check a config file with every check serve runs before it opens anything; prints ok or the first bad field."`
}

// ConfigCheckCmd validates a config without serving.
type ConfigCheckCmd struct {
	Config string `help:"YAML config file; without one the embedded defaults are checked." type:"existingfile" env:"PORTICO_CONFIG"`
}

// Run prints ok, or returns the first bad field (and exits non-zero).
func (c *ConfigCheckCmd) Run(s *Streams) error {
	cfg := config.DefaultConfig()
	if c.Config != "" {
		var err error
		if cfg, err = config.Load(c.Config); err != nil {
			return err
		}
	}
	if err := checkConfig(&cfg); err != nil {
		return err
	}
	_, err := fmt.Fprintln(s.Out, "ok")
	return err
}

// checkConfig runs every check that serve runs before it opens anything,
// and names the first bad field. A config that names no networks gets one
// built-in network per registered family first. Then config's own field
// checks; then, per network, its family, its method allowlist and costs
// against the family's method table, its upstream URLs, and its devnet
// settings against what the family's devnet takes.
func checkConfig(cfg *config.Config) error {
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
		for j, u := range n.Upstreams {
			if _, err := url.Parse(u.URL); err != nil {
				return fmt.Errorf("%s.upstreams[%d].url: not a URL (%s)", field, j, upstream.Redact(u.URL))
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
