package limit

import (
	"net/http/httptest"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) Now() time.Time          { return c.t }
func (c *clock) Advance(d time.Duration) { c.t = c.t.Add(d) }

func TestWindow(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	w := &Window{Limit: 3, Per: time.Minute, Now: c.Now, MaxKeys: 2}
	for i := range 3 {
		if !w.Allow("a", 1) {
			t.Fatalf("take %d refused", i)
		}
	}
	if ok, wait := w.Take("a", 1); ok || wait != time.Minute {
		t.Fatalf("4th: %v %v", ok, wait)
	}
	if !w.Allow("b", 3) || w.Allow("b", 1) {
		t.Fatal("b's window")
	}
	// A third key makes room by dropping the oldest window.
	if !w.Allow("c", 1) || w.Len() != 2 {
		t.Fatalf("keys %d", w.Len())
	}
	c.Advance(time.Minute)
	if !w.Allow("b", 3) {
		t.Fatal("a new window did not start")
	}
	if (&Window{}).Allow("x", 1e9) != true {
		t.Fatal("zero Limit must allow")
	}
}

func TestBackoff(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	b := &Backoff{Free: 2, Base: time.Minute, Max: 4 * time.Minute, Forget: time.Hour, Now: c.Now}
	steps := []time.Duration{0, 0, time.Minute, 2 * time.Minute, 4 * time.Minute, 4 * time.Minute}
	for i, want := range steps {
		if n, d := b.Fail("k"); n != i+1 || d != want {
			t.Fatalf("fail %d: %d %v, want %v", i+1, n, d, want)
		}
		if got := b.Wait("k"); got != want {
			t.Fatalf("wait after %d: %v", i+1, got)
		}
	}
	c.Advance(4 * time.Minute)
	if b.Wait("k") != 0 || b.Failures("k") != 6 {
		t.Fatal("lock did not end, or failures were forgotten too early")
	}
	c.Advance(time.Hour)
	if b.Failures("k") != 0 {
		t.Fatal("failures not forgotten")
	}
	b.Fail("k")
	b.Reset("k")
	if b.Failures("k") != 0 {
		t.Fatal("reset")
	}
}

func TestClientIP(t *testing.T) {
	cases := []struct{ remote, header, value, want string }{
		{"192.0.2.1:5555", "", "", "192.0.2.1"},
		{"[2001:db8::1]:5555", "", "", "2001:db8::/64"},
		{"[2001:db8::ffff:1]:1", "", "", "2001:db8::/64"},
		{"10.0.0.1:1", "X-Forwarded-For", "198.51.100.7, 10.0.0.9", "10.0.0.9"},
		{"10.0.0.1:1", "X-Real-IP", "198.51.100.7", "198.51.100.7"},
		{"10.0.0.1:1", "X-Real-IP", "", "10.0.0.1"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.value != "" {
			r.Header.Set(c.header, c.value)
		}
		if got := ClientIP(r, c.header); got != c.want {
			t.Errorf("%s %s=%q: %s, want %s", c.remote, c.header, c.value, got, c.want)
		}
	}
}
