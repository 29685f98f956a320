package metering

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The journal makes charges durable before a call is forwarded. Each charge
// and refund is one line appended to the current segment file: once the
// append returns, the line is in the kernel's page cache and survives the
// process being killed (kill -9, a panic, OOM), though not a power cut. A
// flush moves the aggregated lines into the store together with the
// sequence number of the last line it covers, then deletes the segments it
// covered. At start, lines past the store's checkpoint are replayed, so
// each line counts exactly once.
//
// On Linux a segment is a file of segmentSize bytes allocated up front and
// mapped shared into memory: appending lines is a copy into the mapping,
// which puts them in the page cache exactly as write(2) would, with no
// system call per charge (the write(2) per call was 8% of the gateway's CPU
// on a cache hit, docs/benchmarks.md). The rest of the file reads as NUL
// bytes, which replay takes as the end. A batch's first byte is stored last:
// until it is, the batch starts with a NUL and a crash in the middle of the
// copy leaves nothing of it to replay. A segment that fills up gives way to
// a new one; a closed segment is truncated to its lines. Elsewhere, or
// where the file system cannot allocate a file up front, each append is one
// write(2) to a file opened for appending.
//
// A line is: <seq> <c|r> <day> <key id> <credits> <method>\n ("c" a
// charge, "r" a refund). Method names come from the method tables and hold
// no spaces.
type journal struct {
	dir  string
	f    *os.File
	path string
	buf  []byte
	// mapped is the segment file mapped shared, nil when lines are
	// written with write(2); off is where the next line goes in it.
	mapped []byte
	off    int
}

// segmentSize is the size of a mapped segment: about 18,000 lines.
const segmentSize = 1 << 20

// record is one journal line.
type record struct {
	seq     int64
	refund  bool
	day     string
	keyID   int64
	credits int64
	method  string
}

func (r record) append(b []byte) []byte {
	b = strconv.AppendInt(b, r.seq, 10)
	if r.refund {
		b = append(b, " r "...)
	} else {
		b = append(b, " c "...)
	}
	b = append(b, r.day...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, r.keyID, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, r.credits, 10)
	b = append(b, ' ')
	b = append(b, r.method...)
	return append(b, '\n')
}

func parseRecord(line string) (record, error) {
	f := strings.Fields(line)
	if len(f) != 6 || (f[1] != "c" && f[1] != "r") {
		return record{}, fmt.Errorf("malformed line %q", line)
	}
	var r record
	var err error
	if r.seq, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return record{}, fmt.Errorf("malformed seq in %q", line)
	}
	if r.keyID, err = strconv.ParseInt(f[3], 10, 64); err != nil {
		return record{}, fmt.Errorf("malformed key id in %q", line)
	}
	if r.credits, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return record{}, fmt.Errorf("malformed credits in %q", line)
	}
	r.refund, r.day, r.method = f[1] == "r", f[2], f[5]
	return r, nil
}

const segmentPrefix, segmentSuffix = "ledger-", ".log"

// segments lists the journal's segment files, oldest first.
func segments(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, segmentPrefix) && strings.HasSuffix(n, segmentSuffix) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	slices.Sort(out) // names carry a zero-padded sequence number
	return out, nil
}

// replay reads every segment and calls fn for each record. A segment ends
// at its first NUL byte (the unwritten rest of a mapped segment, or a batch
// cut short while it was copied there, which is dropped). A last line cut
// short by a crash (no newline) is dropped too: its write never completed,
// so the call it belongs to was never forwarded. Any other damage is an
// error.
func replay(dir string, fn func(record)) (maxSeq int64, err error) {
	segs, err := segments(dir)
	if err != nil {
		return 0, err
	}
	for _, path := range segs {
		b, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		if i := bytes.IndexByte(b, 0); i >= 0 {
			// Past the first NUL there may be the rest of a batch whose
			// first byte was never stored, then NULs to the end: nothing
			// else was written there. Lines after a run of NULs are damage.
			tail := b[i+1:]
			if k := bytes.IndexByte(tail, 0); k >= 0 && len(bytes.TrimLeft(tail[k:], "\x00")) > 0 {
				return 0, fmt.Errorf("metering: journal %s: lines after NUL bytes at offset %d", path, i)
			}
			b = b[:i]
		}
		if i := bytes.LastIndexByte(b, '\n'); i < len(b)-1 {
			b = b[:i+1] // torn last write
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for n := 1; sc.Scan(); n++ {
			r, err := parseRecord(sc.Text())
			if err != nil {
				return 0, fmt.Errorf("metering: journal %s line %d: %w", path, n, err)
			}
			maxSeq = max(maxSeq, r.seq)
			fn(r)
		}
	}
	return maxSeq, nil
}

// openJournal opens a new segment starting at seq.
func openJournal(dir string, seq int64) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("metering: journal: %w", err)
	}
	j := &journal{dir: dir}
	return j, j.open(seq)
}

func (j *journal) open(seq int64) error {
	path := filepath.Join(j.dir, fmt.Sprintf("%s%020d%s", segmentPrefix, seq, segmentSuffix))
	if mapped, f, off, err := mapSegment(path, segmentSize); err == nil {
		j.f, j.path, j.mapped, j.off = f, path, mapped, off
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("metering: journal: %w", err)
	}
	j.f, j.path = f, path
	return nil
}

// write appends records as one unit.
func (j *journal) write(recs []record) error {
	j.buf = j.buf[:0]
	for _, r := range recs {
		j.buf = r.append(j.buf)
	}
	if j.f == nil { // a segment could not be opened: try again
		if err := j.open(recs[0].seq); err != nil {
			return err
		}
	}
	if j.mapped == nil {
		if _, err := j.f.Write(j.buf); err != nil {
			return fmt.Errorf("metering: journal: %w", err)
		}
		return nil
	}
	if j.off+len(j.buf) > len(j.mapped) {
		if len(j.buf) > segmentSize {
			return fmt.Errorf("metering: journal: %d bytes of records in one charge, more than a segment holds", len(j.buf))
		}
		if err := j.closeSegment(); err != nil {
			return err
		}
		if err := j.open(recs[0].seq); err != nil {
			return err
		}
		if j.mapped == nil {
			return j.write(recs)
		}
	}
	copy(j.mapped[j.off+1:], j.buf[1:])
	j.mapped[j.off] = j.buf[0]
	j.off += len(j.buf)
	return nil
}

// rotate closes the current segment and starts one at seq. It returns the
// segments that came before, for removal once they are in the store.
func (j *journal) rotate(seq int64) ([]string, error) {
	old, err := segments(j.dir)
	if err != nil {
		return nil, err
	}
	if err := j.closeSegment(); err != nil {
		return nil, err
	}
	return old, j.open(seq)
}

// closeSegment unmaps the current segment, cuts it to its lines and closes
// it.
func (j *journal) closeSegment() error {
	if j.f == nil {
		return nil
	}
	var err error
	if j.mapped != nil {
		err = errors.Join(unmapSegment(j.mapped), j.f.Truncate(int64(j.off)))
		j.mapped, j.off = nil, 0
	}
	err = errors.Join(err, j.f.Close())
	j.f = nil
	if err != nil {
		return fmt.Errorf("metering: journal: %w", err)
	}
	return nil
}

// remove deletes segments that the store now covers.
func (j *journal) remove(paths []string) error {
	for _, p := range paths {
		if p == j.path {
			continue
		}
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("metering: journal: %w", err)
		}
	}
	return nil
}

func (j *journal) close() error { return j.closeSegment() }
