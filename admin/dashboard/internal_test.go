package dashboard

import (
	"io/fs"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The limiter holds at most max addresses: those whose debt is paid go
// first, then the one nearest to being paid.
func TestLimiterBound(t *testing.T) {
	l := newLimiter(Limit{Burst: 2, Every: time.Second}, 3)
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}) }
	for i := range 3 {
		for range 2 {
			if _, ok := l.take(addr(i), now.Add(time.Duration(i)*time.Millisecond)); !ok {
				t.Fatalf("address %d limited too soon", i)
			}
		}
	}
	if _, ok := l.take(addr(0), now); ok {
		t.Fatal("address 0 not limited after its burst")
	}
	// A fourth address pushes out the one nearest to being paid: 0.
	if _, ok := l.take(addr(3), now); !ok || l.len() != 3 {
		t.Fatalf("fourth address: %v, %d tracked", ok, l.len())
	}
	if _, ok := l.take(addr(1), now); ok {
		t.Error("address 1 was forgotten instead of 0")
	}
	if _, ok := l.take(addr(0), now); !ok {
		t.Error("address 0 still limited: it was not the one forgotten")
	}
	// Later every debt is paid: all go to make room.
	if _, ok := l.take(addr(9), now.Add(time.Minute)); !ok || l.len() != 1 {
		t.Errorf("after a minute: %v, %d tracked, want 1", ok, l.len())
	}
	for i := range 1000 {
		l.take(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), now.Add(time.Minute))
	}
	if l.len() > 3 {
		t.Errorf("%d addresses tracked, max 3", l.len())
	}
}

func TestSessionsBound(t *testing.T) {
	s := newSessions(3, time.Hour)
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 10 {
		id, _ := s.create(now.Add(time.Duration(i) * time.Second))
		ids = append(ids, id)
	}
	if s.len() != 3 {
		t.Errorf("%d sessions held, max 3", s.len())
	}
	for i, id := range ids {
		if _, ok := s.get(id, now.Add(time.Minute)); ok != (i >= 7) {
			t.Errorf("session %d live: %v", i, ok)
		}
	}
	if _, ok := s.get(ids[9], now.Add(time.Hour+9*time.Second)); ok {
		t.Error("a session outlived its TTL")
	}
}

// The dashboard works offline: no page, style or script loads anything
// from another origin.
func TestNoExternalAssets(t *testing.T) {
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(assetFS, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assetFS.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range external.FindAllString(string(b), -1) {
			// XML namespaces and example origins in placeholders are
			// never fetched.
			if m != "http://www.w3.org" && !strings.HasSuffix(m, "example.com") {
				t.Errorf("%s refers to %s", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
