package main

import (
	"bytes"
	"context"
	"regexp"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestReadBuildInfo(t *testing.T) {
	recorded := func(mainVersion string, settings ...debug.BuildSetting) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Path: "github.com/porticohq/portico", Version: mainVersion}, Settings: settings}, true
		}
	}
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}
	tests := []struct {
		name            string
		version, commit string
		read            func() (*debug.BuildInfo, bool)
		want            buildInfo
	}{
		{
			name:    "stamped by the release build wins",
			version: "1.2.3", commit: "feedface",
			read: recorded("v0.0.0-20260101000000-abcdefabcdef", rev),
			want: buildInfo{Version: "1.2.3", Commit: "feedface", GoVersion: "go1.99.1"},
		},
		{
			name: "go install of a tagged version",
			read: recorded("v1.4.0"),
			want: buildInfo{Version: "v1.4.0", Commit: "unknown", GoVersion: "go1.99.1"},
		},
		{
			name: "go build in a clean checkout",
			read: recorded("(devel)", rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"}),
			want: buildInfo{Version: "(devel)", Commit: rev.Value, GoVersion: "go1.99.1"},
		},
		{
			name: "go build in a modified checkout",
			read: recorded("", rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}),
			want: buildInfo{Version: "(devel)", Commit: rev.Value + "+dirty", GoVersion: "go1.99.1"},
		},
		{
			name:    "stamped version, commit from the checkout",
			version: "2.0.0",
			read:    recorded("(devel)", rev),
			want:    buildInfo{Version: "2.0.0", Commit: rev.Value, GoVersion: "go1.99.1"},
		},
		{
			name: "no build info",
			read: func() (*debug.BuildInfo, bool) { return nil, false },
			want: buildInfo{Version: "(devel)", Commit: "unknown", GoVersion: runtime.Version()},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := readBuildInfo(tc.version, tc.commit, tc.read); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestVersionCommand runs `portico version` as a user does. A test binary
// has no stamped version: the line says (devel) and the Go version that
// built it. deploy/release_test.go checks a release build's stamped line.
func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	want := regexp.MustCompile(`^portico \S+ commit \S+ ` + regexp.QuoteMeta(runtime.Version()) + ` ` + runtime.GOOS + `/` + runtime.GOARCH + "\n$")
	if !want.MatchString(out.String()) {
		t.Errorf("portico version printed %q, want %v", out.String(), want)
	}
}
