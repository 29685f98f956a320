package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLogBuffer: lines written from many goroutines all reach the file,
// whole, by the periodic flush or at Close.
func TestLogBuffer(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := newLogBuffer(f, time.Millisecond)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				fmt.Fprintf(b, "goroutine=%d line=%d %s\n", g, i, strings.Repeat("x", 100))
			}
		})
	}
	wg.Wait()
	// The periodic flush writes without Close.
	deadline := time.Now().Add(time.Minute)
	for {
		st, _ := f.Stat()
		if st.Size() > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal("a second Close:", err)
	}
	raw, _ := os.ReadFile(f.Name())
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != 8000 {
		t.Fatalf("%d lines, want 8000", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "goroutine=") || !strings.HasSuffix(l, strings.Repeat("x", 100)) {
			t.Fatalf("a line was cut or mixed: %q", l)
		}
	}
}
