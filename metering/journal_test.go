package metering

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReplay feeds arbitrary segment contents to replay: it must return
// records or an error, never panic, and the records it returns must read
// back the same after being written again.
func FuzzReplay(f *testing.F) {
	f.Add([]byte("1 c 2026-11-22 1 160 getBlock\n2 r 2026-11-22 1 160 getBlock\n"))
	f.Add([]byte("1 c 2026-11-22 1 160 getBlock\n2 c 2026-11-2"))
	f.Add([]byte("x c d 1 1 m\n"))
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
