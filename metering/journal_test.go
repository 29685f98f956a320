package metering

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// FuzzReplay feeds arbitrary segment contents to replay: it must return
// records or an error, never panic, and the records it returns must read
// back the same after being written again.
func FuzzReplay(f *testing.F) {
	f.Add([]byte("1 c 2026-11-22 1 160 getBlock\n2 r 2026-11-22 1 160 getBlock\n"))
	f.Add([]byte("1 c 2026-11-22 1 160 getBlock\n2 c 2026-11-2"))
	f.Add([]byte("x c d 1 1 m\n"))
	f.Add([]byte("1 c 2026-11-22 1 160 getBlock\n\x00 c 2026-11-22 1 160 getBlock\n\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "ledger-00000000000000000001.log"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		var recs []record
		if _, err := replay(dir, func(r record) { recs = append(recs, r) }); err != nil {
			return
		}
		for _, r := range recs {
			back, err := parseRecord(string(r.append(nil)[:len(r.append(nil))-1]))
			if err != nil || back != r {
				t.Fatalf("record %+v does not round-trip: %+v, %v", r, back, err)
			}
		}
	})
}

// TestJournalSegments writes more lines than one segment holds, "crashes"
// without closing, and replays: every line comes back once, in order, from
// segments that grew past one; the unused rest of the last one is ignored.
// After a clean close, no segment holds anything but its lines.
func TestJournalSegments(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * segmentSize / 40 // lines of about 50 bytes: three segments or more
	var seq int64
	for i := range n {
		recs := []record{{seq: seq + 1, day: "2026-11-23", keyID: int64(i % 7), credits: 16, method: "eth_getTransactionByHash"}}
		if i%5 == 0 {
			recs = append(recs, record{seq: seq + 2, refund: true, day: "2026-11-23", keyID: 3, credits: 1, method: "getSlot"})
		}
		if err := j.write(recs); err != nil {
			t.Fatal(err)
		}
		seq += int64(len(recs))
	}
	check := func(when string) {
		t.Helper()
		var got int64
		maxSeq, err := replay(dir, func(r record) {
			got++
			if r.seq != got {
				t.Fatalf("%s: record %d has seq %d", when, got, r.seq)
			}
		})
		if err != nil || maxSeq != seq || got != seq {
			t.Fatalf("%s: replayed %d records up to %d (%v), want %d", when, got, maxSeq, err, seq)
		}
	}
	check("without close")
	segs, _ := segments(dir)
	if runtime.GOOS == "linux" && j.mapped == nil {
		t.Fatal("segments are not mapped on Linux: see mapSegment")
	}
	if j.mapped != nil && len(segs) < 3 {
		t.Fatalf("%d lines in %d segments: want three or more", seq, len(segs))
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
	check("after close")
	for _, p := range segs {
		b, _ := os.ReadFile(p)
		if len(b) == 0 || b[len(b)-1] != '\n' || bytes.IndexByte(b, 0) >= 0 {
			t.Fatalf("%s after close: %d bytes, not cut to its lines", p, len(b))
		}
	}
}

// TestJournalTornBatch replays a segment whose last batch was cut short
// while being copied into the mapping: its first byte, stored last, is
// still NUL, so none of it counts, though its other lines are whole.
func TestJournalTornBatch(t *testing.T) {
	dir := t.TempDir()
	whole := "1 c 2026-11-23 1 16 getBlock\n"
	torn := "\x00 c 2026-11-23 1 16 getBlock\n3 c 2026-11-23 1 16 getBlock\n"
	if err := os.WriteFile(filepath.Join(dir, "ledger-00000000000000000001.log"), []byte(whole+torn+strings.Repeat("\x00", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	var n int
	if maxSeq, err := replay(dir, func(record) { n++ }); err != nil || n != 1 || maxSeq != 1 {
		t.Fatalf("replayed %d records up to %d (%v), want 1 up to 1", n, maxSeq, err)
	}
	// Lines after a run of NULs were not written so: damage, not a tail.
	damaged := whole + strings.Repeat("\x00", 4096) + "2 c 2026-11-23 1 16 getBlock\n" + strings.Repeat("\x00", 100)
	if err := os.WriteFile(filepath.Join(dir, "ledger-00000000000000000001.log"), []byte(damaged), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := replay(dir, func(record) {}); err == nil {
		t.Fatal("a segment with lines after a block of NULs replayed without an error")
	}
}
