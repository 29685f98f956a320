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
// as `go list -deps` shows them, and every package has a row.
func TestArchitecture(t *testing.T) {
	const module = "github.com/porticohq/portico"
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		pkgs    []string // patterns, relative to the module; "" is the root
		allowed []string // patterns, or "anything"
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
		for _, m := range tick.FindAllStringSubmatch(cells[3], -1) {
			p := m[1]
			if p == "portico" {
				p = ""
			}
			r.allowed = append(r.allowed, p)
		}
		if strings.TrimSpace(cells[3]) == "anything" {
			r.allowed = []string{"anything"}
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
		if slices.Contains(r.allowed, "anything") {
			continue
		}
		for _, imp := range deps[pkg].imports {
			irel, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			irel = strings.TrimPrefix(irel, "/")
			if !slices.ContainsFunc(r.allowed, func(p string) bool { return matches(p, irel) }) {
				t.Errorf("%s imports %s, which its row in docs/architecture.md does not allow", pkg, imp)
			}
		}
	}
}
