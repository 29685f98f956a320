// Package privfile makes the auth server's state files private to their
// owner before a database opens them: the file mode 0600 in a directory of
// mode 0700. SQLite gives its -wal and -shm files the mode of the
// database file, so they stay private too.
package privfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Prepare creates path's directory (0700) if it is missing and the file
// (empty, 0600) if it does not exist; an existing file is made 0600.
func Prepare(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("privfile: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("privfile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("privfile: %w", err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("privfile: %w", err)
		}
	}
	return nil
}
