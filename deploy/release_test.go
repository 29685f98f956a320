package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// repoRoot is the checkout this module sits in.
const repoRoot = ".."

// snapshot is the release build of the host's target, made once per test
// run: `goreleaser build --snapshot --single-target` with .goreleaser.yaml,
// into a temporary dist directory.
type snapshot struct {
	Binary  string // path of the portico binary
	Version string // the version GoReleaser stamped
	Commit  string // the commit it stamped
}

// buildSnapshot runs once for all tests of the package: every other test
// runs the binary the release configuration builds, as an operator would.
var buildSnapshot = sync.OnceValues(func() (snapshot, error) {
	dist, err := os.MkdirTemp("", "portico-dist-")
	if err != nil {
		return snapshot{}, err
	}
	// GoReleaser's dist directory is not templated; a copy of the config
	// with a dist key appended keeps the checkout clean. TestRelease checks
	// the real file has none.
	cfg, err := os.ReadFile(filepath.Join(repoRoot, ".goreleaser.yaml"))
	if err != nil {
		return snapshot{}, err
	}
	cfgCopy := filepath.Join(dist, "goreleaser.yaml")
	cfg = append(cfg, []byte("\ndist: "+filepath.Join(dist, "dist")+"\n")...)
	if err := os.WriteFile(cfgCopy, cfg, 0o644); err != nil {
		return snapshot{}, err
	}
	if _, err := goreleaser("build", "--snapshot", "--single-target", "--clean", "--config", cfgCopy); err != nil {
		return snapshot{}, err
	}
	var artifacts []struct {
		Name   string `json:"name"`
		Path   string `json:"path"`
		Type   string `json:"type"`
		GOOS   string `json:"goos"`
		GOARCH string `json:"goarch"`
	}
	b, err := os.ReadFile(filepath.Join(dist, "dist", "artifacts.json"))
	if err != nil {
		return snapshot{}, err
	}
	if err := json.Unmarshal(b, &artifacts); err != nil {
		return snapshot{}, err
	}
	var meta struct {
		Version string `json:"version"`
		Commit  string `json:"commit"`
	}
	if b, err = os.ReadFile(filepath.Join(dist, "dist", "metadata.json")); err != nil {
		return snapshot{}, err
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		return snapshot{}, err
	}
	for _, a := range artifacts {
		if a.Type == "Binary" && a.Name == "portico" && a.GOOS == runtime.GOOS && a.GOARCH == runtime.GOARCH {
			return snapshot{Binary: a.Path, Version: meta.Version, Commit: meta.Commit}, nil
		}
	}
	return snapshot{}, &buildError{what: "no portico binary for " + runtime.GOOS + "/" + runtime.GOARCH + " in artifacts.json", out: string(b)}
})

// buildError is a failed build step with its output.
type buildError struct {
	what string
	out  string
}

func (e *buildError) Error() string { return e.what + "\n" + e.out }

// goreleaser runs the project's pinned goreleaser (scripts/goreleaser.sh)
// from the repository root.
func goreleaser(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join("scripts", "goreleaser.sh"), args...)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), &buildError{what: "goreleaser " + strings.Join(args, " ") + ": " + err.Error(), out: string(out)}
	}
	return string(out), nil
}

// releaseBinary returns the snapshot build's binary, failing the test when
// it could not be built.
func releaseBinary(t *testing.T) snapshot {
	t.Helper()
	s, err := buildSnapshot()
	if err != nil {
		t.Fatalf("release snapshot build: %v", err)
	}
	return s
}

// TestRelease checks .goreleaser.yaml with goreleaser's own check, builds
// the host's target as a snapshot, and runs that binary: `portico version`
// prints the stamped version and commit, and `portico serve` comes to ready
// and answers a call.
func TestRelease(t *testing.T) {
	cfg, err := os.ReadFile(filepath.Join(repoRoot, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`(?m)^dist:`).Match(cfg) {
		t.Fatal(".goreleaser.yaml sets dist: the test appends its own (see buildSnapshot)")
	}
	if out, err := goreleaser("check"); err != nil {
		t.Fatalf("goreleaser check: %v", err)
	} else if !strings.Contains(out, "1 configuration file(s) validated") {
		t.Fatalf("goreleaser check said:\n%s", out)
	}

	s := releaseBinary(t)
	head, err := exec.Command("git", "-C", repoRoot, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(head)); s.Commit != want {
		t.Errorf("goreleaser stamped commit %q, the checkout is at %q", s.Commit, want)
	}
	if !strings.Contains(s.Version, "-snapshot+") {
		t.Errorf("snapshot version %q lacks the -snapshot+<commit> suffix of snapshot.version_template", s.Version)
	}

	out, err := exec.Command(s.Binary, "version").Output()
	if err != nil {
		t.Fatalf("portico version: %v", err)
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "portico " + s.Version + " commit " + s.Commit + " " + strings.TrimSpace(string(goVersion)) + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	if string(out) != want {
		t.Errorf("portico version printed %q, want %q", out, want)
	}
	if err := checkStatic(s.Binary); err != nil {
		t.Error(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Binary, "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-auth")
	srv := startServe(t, cmd)
	srv.checkServes(t)
	srv.stop(t)
}

// checkStatic fails for a binary that needs a dynamic loader or libraries:
// the release and the image promise a static binary.
func checkStatic(path string) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	out, err := exec.Command("go", "version", "-m", path).CombinedOutput()
	if err != nil {
		return &buildError{what: "go version -m " + path, out: string(out)}
	}
	if !bytes.Contains(out, []byte("CGO_ENABLED=0")) {
		return &buildError{what: path + " was not built with CGO_ENABLED=0", out: string(out)}
	}
	return elfStatic(path)
}
