package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestAuthLayering keeps the auth packages' layering true, as `go list
// -deps` shows it: the server (authd/...) links neither the SDK package
// auth nor what the SDK needs on a device (the OS keyring, D-Bus, a
// browser opener); nothing under auth/ links the server; and the wire
// types both share (auth/authwire) need only the standard library.
func TestAuthLayering(t *testing.T) {
	const module = "github.com/porticohq/portico"
	cases := []struct {
		name    string
		pattern string
		bad     func(pkg string, standard bool) bool
	}{
		{"authd links no SDK", "./authd/...", func(pkg string, _ bool) bool {
			return pkg == module+"/auth" || under(pkg, "github.com/zalando/go-keyring") || under(pkg, "github.com/godbus/dbus") ||
				under(pkg, "github.com/godbus/dbus/v5") || under(pkg, "github.com/pkg/browser")
		}},
		{"auth links no server", "./auth/...", func(pkg string, _ bool) bool { return under(pkg, module+"/authd") }},
		{"authwire is standard library only", "./auth/authwire", func(pkg string, standard bool) bool {
			return !standard && pkg != module+"/auth/authwire"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			deps := goListDeps(t, c.pattern)
			for _, pkg := range slices.Sorted(maps.Keys(deps)) {
				if !c.bad(pkg, deps[pkg].standard) {
					continue
				}
				var by []string
				for importer, id := range deps {
					if slices.Contains(id.imports, pkg) {
						by = append(by, importer)
					}
				}
				slices.Sort(by)
				t.Errorf("%s links %s (imported by %s)", c.pattern, pkg, strings.Join(by, ", "))
			}
		})
	}
}

// under reports whether pkg is root or below it.
func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

type listedPackage struct {
	standard bool
	imports  []string
}

// goListDeps runs `go list -deps pattern` in the module root.
func goListDeps(t *testing.T, pattern string) map[string]listedPackage {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Fatalf("no go command: %v", err)
		}
	}
	cmd := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}{{range .Imports}} {{.}}{{end}}", pattern)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %s: %v\n%s", pattern, err, stderr)
	}
	deps := map[string]listedPackage{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			t.Fatalf("go list: %q", line)
		}
		deps[f[0]] = listedPackage{standard: f[1] == "true", imports: f[2:]}
	}
	if len(deps) == 0 {
		t.Fatalf("go list -deps %s: nothing listed", pattern)
	}
	return deps
}
