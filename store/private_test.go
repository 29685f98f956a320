package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/porticohq/portico/store"
)

// Issue 23: portico.db was created 0644 in a directory that already
// existed as 0755, so key digests, names and usage were readable by every
// user of the host. The store is 0600 and its directory 0700, whatever
// they were before.
func TestSQLiteFileIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "portico-data")
	path := filepath.Join(dir, "portico.db")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, path} {
		if err := os.Chmod(p, map[bool]os.FileMode{true: 0o755, false: 0o644}[p == dir]); err != nil {
			t.Fatal(err)
		}
	}
	s, err := store.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.Create(context.Background(), store.KeySpec{Name: "alice", DailyCredits: 10}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
}
