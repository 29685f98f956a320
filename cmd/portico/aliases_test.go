package main

import "github.com/porticohq/portico/server"

// The serve lifecycle lives in package server; the tests here run it
// in-process under the names they have always used.
type (
	// Main is a running portico serve.
	Main = server.Server
	// readiness is the answer of /readyz.
	readiness = server.Readiness
)

var (
	checkConfig = server.CheckConfig
	importKeys  = server.ImportKeys
)

// DevAdminTokenFile is the file in the data directory that keeps the dev
// admin token.
const DevAdminTokenFile = server.DevAdminTokenFile
