package sqldb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrSharedDir is returned for a database whose directory is shared with
// other users (it has the sticky bit, as /tmp does): making it private
// would take it from them, and leaving it open would expose the database.
var ErrSharedDir = errors.New("sqldb: the database's directory is shared (sticky bit, as /tmp): give it a directory of its own")

// MakePrivate makes the database file at path private to its owner before
// it is opened, whatever existed before: its directory is made if missing
// and set to mode 0700, and the file (created empty if missing) and the
// -wal and -shm files SQLite keeps beside it are set to 0600. SQLite gives
// the files it makes later the mode of the database file, so they stay
// private too. Key digests, names and usage, session records and key
// shares are not for the other users of the host, even in a directory
// that was made world-readable (0755, the usual umask) before Portico
// first ran.
func MakePrivate(path string) error {
	if err := MakePrivateDir(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("sqldb: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sqldb: %w", err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sqldb: make %s private (mode 0600): %w", p, err)
		}
	}
	return nil
}

// MakePrivateDir makes dir (and its missing parents) if needed and sets
// its mode to 0700 whatever it was, unless it is shared (ErrSharedDir).
func MakePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("sqldb: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("sqldb: %w", err)
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		return fmt.Errorf("%w: %s", ErrSharedDir, dir)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("sqldb: make %s private (mode 0700): %w", dir, err)
		}
	}
	return nil
}
