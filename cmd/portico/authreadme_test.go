package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// readmeAuthCommands are the `bin/portico auth …` lines of the README's
// Auth section, continuation lines joined and comments dropped, as
// argument lists after `bin/portico`.
func readmeAuthCommands(t *testing.T) [][]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Auth\n")
	if !ok {
		t.Fatal("README.md has no section \"Auth\"")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var cmds [][]string
	for _, line := range strings.Split(strings.ReplaceAll(section, "\\\n", " "), "\n") {
		if i := strings.Index(line, " #"); i >= 0 {
			line = line[:i]
		}
		if rest, ok := strings.CutPrefix(line, "bin/portico auth "); ok {
			cmds = append(cmds, append([]string{"auth"}, strings.Fields(rest)...))
		}
	}
	if len(cmds) < 3 {
		t.Fatalf("found %d auth commands in the README: %q", len(cmds), cmds)
	}
	return cmds
}

// Every auth command the README shows works as written, run from a
// checkout (files it names from the repository's testdata are copied into
// a temporary directory at the same path). `auth serve` runs until its
// front page answers, on port 0.
func TestAuthReadmeCommands(t *testing.T) {
	cmds := readmeAuthCommands(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	for _, args := range cmds {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out string
			if i := slices.Index(args, ">"); i >= 0 {
				args, out = args[:i], args[i+1]
			}
			for _, a := range args {
				if strings.Contains(a, "testdata/") {
					copyFromRepo(t, root, a)
				}
			}
			if args[1] == "serve" {
				readmeServe(t, args)
				return
			}
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), args, &stdout, &stderr); err != nil {
				t.Fatalf("%v\n%s", err, &stderr)
			}
			if out != "" {
				if err := os.WriteFile(out, stdout.Bytes(), 0o600); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	// What the commands made: the key network's files and the v7 config
	// the migration goldens expect.
	for _, f := range []string{"keynet/network.json", "keynet/node5/node.key", "auth-data/auth-sessions.db"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("README commands did not make %s: %v", f, err)
		}
	}
	got, _ := os.ReadFile("v7.json")
	want, err := os.ReadFile(filepath.Join(root, "auth", "testdata", "migrate", "full.v7.json"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("v7.json:\n%s\nwant\n%s", got, want)
	}
}

// readmeServe runs `auth serve` from the README on port 0 until its front
// page answers.
func readmeServe(t *testing.T, args []string) {
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, append(args, "--listen", "127.0.0.1:0"), stdout, stderr) }()
	exited := false
	defer func() {
		cancel()
		if exited {
			return
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("auth serve: %v\n%s", err, stderr)
			}
		case <-time.After(15 * time.Second):
			t.Error("auth serve did not stop")
		}
	}()
	re := regexp.MustCompile(`serving the session server on (http://\S+)/`)
	for deadline := time.Now().Add(20 * time.Second); ; {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			resp, err := http.Get(m[1] + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("front page: %s", resp.Status)
			}
			return
		}
		select {
		case err := <-done:
			exited = true
			t.Fatalf("auth serve exited: %v\n%s", err, stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("auth serve did not start\n%s", stderr)
		}
	}
}

// copyFromRepo copies the repository file rel to the same relative path
// in the current directory.
func copyFromRepo(t *testing.T, root, rel string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatalf("the README names %s: %v", rel, err)
	}
	if err := os.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rel, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
