package metering

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The journal makes charges durable before a call is forwarded. Each charge
// and refund is one line appended with a single write(2) to the current
// segment file: once write returns, the line is in the kernel's page cache
// and survives the process being killed (kill -9, a panic, OOM), though not
// a power cut. A flush moves the aggregated lines into the store together
// with the sequence number of the last line it covers, then deletes the
// segments it covered. At start, lines past the store's checkpoint are
// replayed, so each line counts exactly once.
//
// A line is: <seq> <c|r> <day> <key id> <credits> <method>\n ("c" a
// charge, "r" a refund). Method names come from the method tables and hold
// no spaces.
type journal struct {
	dir  string
	f    *os.File
	path string
	buf  []byte
}

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

// replay reads every segment and calls fn for each record. A last line cut
// short by a crash (no newline) is dropped: its write never completed, so
// the call it belongs to was never forwarded. Any other damage is an error.
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
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("metering: journal: %w", err)
	}
	j.f, j.path = f, path
	return nil
}

// write appends records with one write call.
func (j *journal) write(recs []record) error {
	j.buf = j.buf[:0]
	for _, r := range recs {
		j.buf = r.append(j.buf)
	}
	if _, err := j.f.Write(j.buf); err != nil {
		return fmt.Errorf("metering: journal: %w", err)
	}
	return nil
}

// rotate closes the current segment and starts one at seq. It returns the
// segments that came before, for removal once they are in the store.
func (j *journal) rotate(seq int64) ([]string, error) {
	old, err := segments(j.dir)
	if err != nil {
		return nil, err
	}
	if err := j.f.Close(); err != nil {
		return nil, fmt.Errorf("metering: journal: %w", err)
	}
	return old, j.open(seq)
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

func (j *journal) close() error { return j.f.Close() }
