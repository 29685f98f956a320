package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var unitFile = filepath.Join("systemd", "portico.service")

// maxExposure is the highest `systemd-analyze security` exposure the unit
// may have (0 is fully locked down, 10 not at all; under 2 is "OK").
const maxExposure = 2.0

// TestSystemdUnit checks deploy/systemd/portico.service: it has the
// hardening the docs promise, `systemd-analyze verify` finds nothing to
// say about it installed in a scratch root beside the release binary, and
// `systemd-analyze security` rates its exposure at most maxExposure.
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"DynamicUser=yes",
		"StateDirectory=portico",
		"ProtectSystem=strict",
		"NoNewPrivileges=yes",
		"CapabilityBoundingSet=",
		"ExecStart=/usr/local/bin/portico serve --config /etc/portico/portico.yaml --data-dir ${STATE_DIRECTORY}",
	} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(line) + `$`).Match(unit) {
			t.Errorf("the unit lacks the line %q", line)
		}
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		missing(t, "systemd-analyze is not installed (Debian: systemd; scripts/install-deploy-deps.sh installs it)")
	}
	// A root holding systemd's own units, the unit and the binary at the
	// paths docs/deploy.md installs them to: verify then checks ExecStart's
	// binary too.
	root := t.TempDir()
	systemUnits := "/usr/lib/systemd/system"
	if _, err := os.Stat(systemUnits); err != nil {
		systemUnits = "/lib/systemd/system"
	}
	run(t, "cp", "-a", systemUnits, mkdir(t, root, "usr/lib/systemd")+"/")
	copyFile(t, releaseBinary(t).Binary, filepath.Join(mkdir(t, root, "usr/local/bin"), "portico"), 0o755)
	installed := filepath.Join(mkdir(t, root, "etc/systemd/system"), "portico.service")
	copyFile(t, unitFile, installed, 0o644)

	out, err := exec.Command(analyze, "verify", "--root="+root, installed).CombinedOutput()
	// verify only warns about unknown keys and the like: any output fails.
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}

	out, err = exec.Command(analyze, "security", "--offline=true", "--root="+root, installed).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for portico\.service: ([0-9.]+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	exposure, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("systemd-analyze security: exposure %.1f", exposure)
	if exposure > maxExposure {
		t.Errorf("exposure %.1f, want at most %.1f:\n%s", exposure, maxExposure, out)
	}
}

// mkdir makes dir/rel and returns it.
func mkdir(t *testing.T, dir, rel string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
