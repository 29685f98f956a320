package auth

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestFileStorage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s := &FileStorage{Dir: dir}
	if _, err := s.Get("sessionID"); !errors.Is(err, ErrNotStored) {
		t.Fatalf("empty: %v", err)
	}
	if err := s.Delete("sessionID"); err != nil {
		t.Fatalf("delete missing: %v", err)
	}
	for _, v := range []string{"one", "two"} {
		if err := s.Set("sessionID", v); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get("sessionID"); err != nil || got != v {
			t.Fatalf("%q %v", got, err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "sessionID"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v %v", fi.Mode(), err)
	}
	di, err := os.Stat(dir)
	if err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v %v", di.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	if err := s.Delete("sessionID"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("sessionID"); !errors.Is(err, ErrNotStored) {
		t.Fatalf("after delete: %v", err)
	}
	for _, bad := range []string{"", "..", "a/b", "../x"} {
		var fe *FieldError
		if err := s.Set(bad, "v"); !errors.As(err, &fe) {
			t.Errorf("key %q: %v", bad, err)
		}
	}
}

// DefaultStorage picks the keyring when one answers and a file store in
// the user's config directory otherwise; either must work.
func TestDefaultStorage(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	clientID := "portico-test-" + filepath.Base(t.TempDir())
	s, err := DefaultStorage(clientID)
	if err != nil {
		t.Fatal(err)
	}
	if fs, ok := s.(*FileStorage); ok && filepath.Dir(filepath.Dir(fs.Dir)) != filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "portico") {
		t.Fatalf("file store at %s", fs.Dir)
	}
	t.Logf("storage: %T", s)
	if err := s.Set("probe", "v"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Delete("probe") }()
	if got, err := s.Get("probe"); err != nil || got != "v" {
		t.Fatalf("%q %v", got, err)
	}
}
