package gateway

import (
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"
)

func TestClientOf(t *testing.T) {
	tests := []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::"},
		{"2001:db8:1:2::1", "2001:db8:1:2::"},
		{"2001:db8:1:3::1", "2001:db8:1:3::"},
		{"::1", "::"},
		{"::ffff:192.0.2.7", "::ffff:192.0.2.7"},
	}
	for _, tc := range tests {
		if got := clientOf(netip.MustParseAddr(tc.in)); got.String() != tc.want {
			t.Errorf("clientOf(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// fakeAddrConn is a connection from a given address, for the slot count.
type fakeAddrConn struct {
	net.Conn
	remote net.Addr
}

func (c fakeAddrConn) RemoteAddr() net.Addr { return c.remote }
func (c fakeAddrConn) Close() error         { return nil }

func connFrom(ip string) net.Conn {
	return fakeAddrConn{remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 1}}
}

// TestSlotsVictim: with every slot taken, the newcomer gets in by closing
// first a stalled connection (no whole request within headerTimeout: still
// sending one, as a client trickling bytes does) of a client holding more
// than the newcomer, or of its own; then an idle connection of the largest
// client over its share, skipping busy ones; then one of such a client
// still sending its request. When nobody is over its share, or the large
// ones are all being served, it is refused. A client at its own bound
// gets in only by a stalled connection of its own.
func TestSlotsVictim(t *testing.T) {
	type client struct {
		ip string
		// idle: between requests; busy: being served; stalled: sending
		// a request for an hour; reading: sending one since now.
		idle, busy, stalled, reading int
	}
	tests := []struct {
		name          string
		max, perIP    int
		headerTimeout time.Duration
		clients       []client
		newcomer      string
		victim        string // "" when refused
	}{
		{"largest idle goes", 10, 0, time.Minute, []client{{"10.0.0.1", 6, 0, 0, 0}, {"10.0.0.2", 4, 0, 0, 0}}, "10.0.0.3", "10.0.0.1"},
		{"largest busy, next largest goes", 10, 0, time.Minute, []client{{"10.0.0.1", 0, 6, 0, 0}, {"10.0.0.2", 4, 0, 0, 0}}, "10.0.0.3", "10.0.0.2"},
		{"all busy: refused", 10, 0, time.Minute, []client{{"10.0.0.1", 0, 6, 0, 0}, {"10.0.0.2", 0, 4, 0, 0}}, "10.0.0.3", ""},
		{"nobody over its share: refused", 6, 0, time.Minute, []client{{"10.0.0.1", 3, 0, 0, 0}, {"10.0.0.2", 3, 0, 0, 0}}, "10.0.0.1", ""},
		{"one each, a newcomer still gets in", 4, 0, time.Minute, []client{{"10.0.0.1", 1, 0, 0, 0}, {"10.0.0.2", 1, 0, 0, 0}, {"10.0.0.3", 1, 0, 0, 0}, {"10.0.0.4", 1, 0, 0, 0}}, "10.0.0.5", "10.0.0.1"},
		{"the largest holder gets no more", 10, 0, time.Minute, []client{{"10.0.0.1", 8, 0, 0, 0}, {"10.0.0.2", 2, 0, 0, 0}}, "10.0.0.1", ""},
		{"an IPv6 /64 is one client", 10, 0, time.Minute, []client{{"2001:db8::1", 3, 0, 0, 0}, {"2001:db8::2", 3, 0, 0, 0}, {"10.0.0.9", 4, 0, 0, 0}}, "10.0.0.3", "2001:db8::"},
		{"trickling on every slot: a stalled one goes", 8, 0, time.Minute, []client{{"10.0.0.1", 0, 0, 2, 0}, {"10.0.0.2", 0, 0, 2, 0}, {"10.0.0.3", 0, 0, 2, 0}, {"10.0.0.4", 0, 0, 2, 0}}, "10.0.0.5", "10.0.0.1"},
		{"a stalled one goes before an idle one", 10, 0, time.Minute, []client{{"10.0.0.1", 6, 0, 0, 0}, {"10.0.0.2", 0, 3, 1, 0}}, "10.0.0.3", "10.0.0.2"},
		{"still sending, not stalled yet: of the largest over its share", 10, 0, time.Minute, []client{{"10.0.0.1", 0, 0, 0, 6}, {"10.0.0.2", 0, 4, 0, 0}}, "10.0.0.3", "10.0.0.1"},
		{"idle before still sending", 10, 0, time.Minute, []client{{"10.0.0.1", 0, 0, 0, 6}, {"10.0.0.2", 1, 0, 0, 3}}, "10.0.0.3", "10.0.0.2"},
		{"not a smaller client's stalled one", 10, 0, time.Minute, []client{{"10.0.0.1", 0, 6, 0, 0}, {"10.0.0.2", 0, 3, 1, 0}}, "10.0.0.1", ""},
		{"the newcomer's own stalled one", 10, 0, time.Minute, []client{{"10.0.0.1", 0, 5, 1, 0}, {"10.0.0.2", 0, 4, 0, 0}}, "10.0.0.1", "10.0.0.1"},
		{"no header timeout: nothing is stalled", 8, 0, 0, []client{{"10.0.0.1", 0, 0, 4, 0}, {"10.0.0.2", 0, 0, 4, 0}}, "10.0.0.1", ""},
		{"per address: its own stalled one goes", 0, 3, time.Minute, []client{{"10.0.0.1", 0, 2, 1, 0}}, "10.0.0.1", "10.0.0.1"},
		{"per address: none stalled, refused", 0, 3, time.Minute, []client{{"10.0.0.1", 1, 1, 0, 1}}, "10.0.0.1", ""},
		{"per address: its only one, stalled, goes", 0, 1, time.Minute, []client{{"10.0.0.1", 0, 0, 1, 0}}, "10.0.0.1", "10.0.0.1"},
		{"its only one, stalled, goes for itself", 2, 0, time.Minute, []client{{"10.0.0.1", 0, 0, 1, 0}, {"10.0.0.2", 0, 1, 0, 0}}, "10.0.0.1", "10.0.0.1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &slots{max: tc.max, perClient: tc.perIP, headerTimeout: tc.headerTimeout}
			log := slog.New(slog.DiscardHandler)
			long := time.Now().Add(-time.Hour)
			for _, c := range tc.clients {
				states := slices.Repeat([]int64{stateWord(connIdle, long)}, c.idle)
				states = append(states, slices.Repeat([]int64{stateWord(connServing, long)}, c.busy)...)
				states = append(states, slices.Repeat([]int64{stateWord(connReading, long)}, c.stalled)...)
				states = append(states, slices.Repeat([]int64{stateWord(connReading, time.Now())}, c.reading)...)
				for _, st := range states {
					cc, refused := s.admit(connFrom(c.ip), log)
					if refused != nil {
						t.Fatalf("setup: %v", refused)
					}
					cc.state.Store(st)
				}
			}
			open := s.open()
			cc, refused := s.admit(connFrom(tc.newcomer), log)
			if tc.victim == "" {
				if refused == nil {
					t.Fatal("admitted, want refused")
				}
				return
			}
			if refused != nil {
				t.Fatalf("refused: %v", refused)
			}
			if s.open() != open {
				t.Errorf("%d open, want %d", s.open(), open)
			}
			want := 0
			for _, c := range tc.clients {
				if clientOf(netip.MustParseAddr(c.ip)).String() == tc.victim {
					want += c.idle + c.busy + c.stalled + c.reading
				}
			}
			if tc.victim == clientOf(netip.MustParseAddr(tc.newcomer)).String() {
				want++ // the newcomer's own connection
			}
			if got := len(s.byAddr[netip.MustParseAddr(tc.victim)]); got != want-1 {
				t.Errorf("%s holds %d, want %d", tc.victim, got, want-1)
			}
			cc.Close()
			if s.open() != open-1 {
				t.Errorf("after close: %d open", s.open())
			}
			// Every connection counted is in its client's set.
			n := 0
			for _, conns := range s.byAddr {
				n += len(conns)
			}
			if n != s.open() {
				t.Errorf("%d connections in the clients' sets, %d counted", n, s.open())
			}
		})
	}
}
