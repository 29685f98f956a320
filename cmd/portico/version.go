package main

import (
	"fmt"
	"runtime/debug"
)

// VersionCmd prints the module version and the Go version.
type VersionCmd struct{}

// Run prints the version.
func (c *VersionCmd) Run(s *Streams) error {
	version, goVersion := buildVersion()
	_, err := fmt.Fprintf(s.Out, "portico %s %s\n", version, goVersion)
	return err
}

// buildVersion returns the module's version, "(devel)" in a work tree, and
// the Go version it was built with.
func buildVersion() (version, goVersion string) {
	version = "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		goVersion = bi.GoVersion
	}
	return version, goVersion
}
