package main

import (
	"context"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/server"
	"github.com/porticohq/portico/store"
)

// The serve lifecycle lives in package server; the tests here run it
// in-process under the names they have always used.
type (
	// Main is a running portico serve.
	Main = server.Server
	// readiness is the answer of /readyz.
	readiness = server.Readiness
)

// checkConfig runs every check a start runs.
func checkConfig(cfg *config.Config) error { return server.CheckConfig(cfg) }

// importKeys puts the config's keys into the store (or makes the dev key).
func importKeys(ctx context.Context, cfg *config.Config, s *store.Store) (string, error) {
	return server.ImportKeys(ctx, cfg, s)
}

// DevAdminTokenFile is the file in the data directory that keeps the dev
// admin token.
const DevAdminTokenFile = server.DevAdminTokenFile
