package main

import (
	"fmt"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/server"
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
	if err := server.CheckConfig(&cfg); err != nil {
		return err
	}
	_, err := fmt.Fprintln(s.Out, "ok")
	return err
}
