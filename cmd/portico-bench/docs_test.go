package main

import (
	"os"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// Every bench command docs/benchmarks.md shows parses, and names setups
// and requests that exist: the page is how numbers are refreshed.
func TestDocsCommandsParse(t *testing.T) {
	b, err := os.ReadFile("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(string(b), "\n") {
		var args []string
		for _, prefix := range []string{"./scripts/bench.sh ", "bin/portico-bench "} {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
				rest, _, _ = strings.Cut(rest, "#")
				args = strings.Fields(rest)
			}
		}
		if args == nil {
			continue
		}
		n++
		var c cli
		parser, err := kong.New(&c, kong.Name("portico-bench"), kong.Exit(func(int) { t.Fatalf("%q: exit", line) }))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse(args); err != nil {
			t.Errorf("%q: %v", line, err)
			continue
		}
		for _, s := range c.Setup {
			if setups[s] == nil {
				t.Errorf("%q: no setup %q", line, s)
			}
		}
		for _, r := range c.Request {
			if r != "small" && r != "block" {
				t.Errorf("%q: no request %q", line, r)
			}
		}
	}
	if n < 5 {
		t.Fatalf("found %d bench commands in docs/benchmarks.md", n)
	}
}
