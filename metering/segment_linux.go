package metering

import (
	"bytes"
	"os"

	"golang.org/x/sys/unix"
)

// mapSegment opens (or creates) a segment file, allocates it to size bytes
// and maps it shared for reading and writing. off is where new lines go:
// after the last complete line already in it. fallocate gives the file its
// blocks now, so a full disk is an error here and never a SIGBUS on a
// store into a hole of a sparse file later.
func mapSegment(path string, size int) (mapped []byte, f *os.File, off int, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, 0, err
	}
	fd := int(f.Fd())
	if err = unix.Fallocate(fd, 0, 0, int64(size)); err == nil {
		mapped, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, 0, err
	}
	// A segment reopened at start holds lines of the run before (already
	// replayed into the store) or nothing: append after its last line.
	used := mapped
	if i := bytes.IndexByte(used, 0); i >= 0 {
		used = used[:i]
	}
	off = bytes.LastIndexByte(used, '\n') + 1
	clear(mapped[off:len(used)]) // a torn line, never replayed
	return mapped, f, off, nil
}

// unmapSegment releases a mapping made by mapSegment.
func unmapSegment(mapped []byte) error { return unix.Munmap(mapped) }
