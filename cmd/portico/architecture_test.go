package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitecture keeps docs/architecture.md's package table true: every
// package of the module imports only the module packages its row allows,
// as `go list -deps` shows them, and every package has a row. No package
// outside internal/ but the tools imports internal/ (test files aside).
func TestArchitecture(t *testing.T) {
	const module = "github.com/porticohq/portico"
	// tools are the module's programs that are not the product.
	tools := []string{"cmd/portico-bench"}
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		pkgs    []string // patterns, relative to the module; "" is the root
		allowed []string // patterns, or "anything"
		except  []string // with "anything": the patterns still refused
	}
	var rows []row
	tick := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.Contains(cells[1], "`") {
			continue
		}
		var r row
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			p := m[1]
			if p == "portico" {
				p = ""
			}
			r.pkgs = append(r.pkgs, p)
		}
		var patterns []string
		for _, m := range tick.FindAllStringSubmatch(cells[3], -1) {
			p := m[1]
			if p == "portico" {
				p = ""
			}
			patterns = append(patterns, p)
		}
		r.allowed = patterns
		if strings.HasPrefix(strings.TrimSpace(cells[3]), "anything") {
			// "anything", or "anything but `x`, `y`".
			r.allowed, r.except = []string{"anything"}, patterns
		}
		rows = append(rows, r)
	}
	if len(rows) < 15 {
		t.Fatalf("read only %d rows from docs/architecture.md", len(rows))
	}
	matches := func(pattern, pkg string) bool {
		if base, ok := strings.CutSuffix(pattern, "/..."); ok {
			return pkg == base || strings.HasPrefix(pkg, base+"/")
		}
		return pkg == pattern
	}
	// rowOf finds the row of pkg: an exact pattern wins over a subtree.
	rowOf := func(pkg string) *row {
		var sub *row
		for i := range rows {
			for _, p := range rows[i].pkgs {
				if p == pkg {
					return &rows[i]
				}
				if matches(p, pkg) && sub == nil {
					sub = &rows[i]
				}
			}
		}
		return sub
	}
	deps := goListDeps(t, "./...")
	checkWiring(t, module, deps)
	for _, pkg := range slices.Sorted(func(yield func(string) bool) {
		for p := range deps {
			if !yield(p) {
				return
			}
		}
	}) {
		rel, ok := strings.CutPrefix(pkg, module)
		if !ok || deps[pkg].standard {
			continue
		}
		rel = strings.TrimPrefix(rel, "/")
		r := rowOf(rel)
		if r == nil {
			t.Errorf("%s has no row in docs/architecture.md", pkg)
			continue
		}
		for _, imp := range deps[pkg].imports {
			irel, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			irel = strings.TrimPrefix(irel, "/")
			match := func(p string) bool { return matches(p, irel) }
			allowed := slices.Contains(r.allowed, "anything") && !slices.ContainsFunc(r.except, match) ||
				slices.ContainsFunc(r.allowed, match)
			if !allowed {
				t.Errorf("%s imports %s, which its row in docs/architecture.md does not allow", pkg, imp)
			}
			// internal/ is test and tool support: whatever the table says,
			// nothing the product is built from imports it.
			if matches("internal/...", irel) && !matches("internal/...", rel) && !slices.Contains(tools, rel) {
				t.Errorf("%s imports %s: only tests and tools (%s) may import internal/", pkg, imp, strings.Join(tools, ", "))
			}
		}
	}
}

// checkWiring keeps the rule "only cmd/ and server wire": the packages
// that read the config and know every family (config, families) are
// imported by the binaries under cmd/ and by server alone, and server,
// which builds a running Portico from a config, by cmd/ alone. The table
// allows no other importer either; this says why, apart from its rows.
func checkWiring(t *testing.T, module string, deps map[string]listedPackage) {
	t.Helper()
	wiring := map[string][]string{
		// families reads a network's config for its own checks (a
		// verify checkpoint's form): the family's hooks, not wiring.
		"config":   {"cmd/...", "server", "families"},
		"families": {"cmd/...", "server"},
		"server":   {"cmd/..."},
	}
	in := func(pattern, pkg string) bool {
		if base, ok := strings.CutSuffix(pattern, "/..."); ok {
			return pkg == base || strings.HasPrefix(pkg, base+"/")
		}
		return pkg == pattern
	}
	if _, ok := deps[module+"/server"]; !ok {
		t.Errorf("%s/server is not listed: the wiring rule checks nothing", module)
	}
	for pkg, lp := range deps {
		rel, ok := strings.CutPrefix(pkg, module+"/")
		if !ok {
			continue
		}
		for _, imp := range lp.imports {
			irel, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			importers, wired := wiring[irel]
			if wired && !slices.ContainsFunc(importers, func(p string) bool { return in(p, rel) }) {
				t.Errorf("%s imports %s: only %s wire (docs/architecture.md)", pkg, imp, strings.Join(importers, " and "))
			}
		}
	}
}
