package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// The release build stamps these at link time (.goreleaser.yaml:
// -X main.version=… -X main.commit=…). The linker can only set
// package-level strings, so they are the one exception to "no package
// state"; nothing assigns them at run time. A plain `go build` leaves them
// empty and the build info recorded by the Go toolchain is used instead.
var (
	version string
	commit  string
)

// VersionCmd prints the version, the commit and the Go version.
type VersionCmd struct{}

// Run prints one line: `portico <version> commit <commit> <go version> <os>/<arch>`.
func (c *VersionCmd) Run(s *Streams) error {
	info := readBuildInfo(version, commit, debug.ReadBuildInfo)
	_, err := fmt.Fprintf(s.Out, "portico %s commit %s %s %s/%s\n", info.Version, info.Commit, info.GoVersion, runtime.GOOS, runtime.GOARCH)
	return err
}

// buildInfo is what a binary knows about its own build.
type buildInfo struct {
	Version   string // the release version, the module version, or "(devel)"
	Commit    string // the VCS revision, "+dirty" when built from a modified tree; "unknown" when not recorded
	GoVersion string // the toolchain that built the binary
}

// readBuildInfo prefers the stamped version and commit, then what the Go
// toolchain recorded: the module version (set by `go install …@vX`) and
// the vcs.revision setting (set by `go build` in a git checkout unless
// -buildvcs=false). read is debug.ReadBuildInfo, passed in for tests.
func readBuildInfo(stampedVersion, stampedCommit string, read func() (*debug.BuildInfo, bool)) buildInfo {
	info := buildInfo{Version: stampedVersion, Commit: stampedCommit, GoVersion: runtime.Version()}
	bi, ok := read()
	if ok {
		info.GoVersion = bi.GoVersion
		if info.Version == "" && bi.Main.Version != "" {
			info.Version = bi.Main.Version
		}
		if info.Commit == "" {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			if rev != "" {
				info.Commit = rev
				if modified == "true" {
					info.Commit += "+dirty"
				}
			}
		}
	}
	if info.Version == "" {
		info.Version = "(devel)"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// buildVersion returns the version (as `portico version` prints it) and
// the Go version; the tracer names its service version with it.
func buildVersion() (string, string) {
	info := readBuildInfo(version, commit, debug.ReadBuildInfo)
	return info.Version, info.GoVersion
}
