package gateway

import (
	"log/slog"
	"net"
	"net/netip"
	"testing"
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
// an idle connection of the largest client over its share, skipping busy
// ones; when nobody is over its share, or the large ones are all busy,
// it is refused.
func TestSlotsVictim(t *testing.T) {
	type client struct {
		ip         string
		idle, busy int
	}
	tests := []struct {
		name     string
		max      int
		clients  []client
		newcomer string
		victim   string // "" when refused
	}{
		{"largest idle goes", 10, []client{{"10.0.0.1", 6, 0}, {"10.0.0.2", 4, 0}}, "10.0.0.3", "10.0.0.1"},
		{"largest busy, next largest goes", 10, []client{{"10.0.0.1", 0, 6}, {"10.0.0.2", 4, 0}}, "10.0.0.3", "10.0.0.2"},
		{"all busy: refused", 10, []client{{"10.0.0.1", 0, 6}, {"10.0.0.2", 0, 4}}, "10.0.0.3", ""},
		{"nobody over its share: refused", 6, []client{{"10.0.0.1", 3, 0}, {"10.0.0.2", 3, 0}}, "10.0.0.1", ""},
		{"one each, a newcomer still gets in", 4, []client{{"10.0.0.1", 1, 0}, {"10.0.0.2", 1, 0}, {"10.0.0.3", 1, 0}, {"10.0.0.4", 1, 0}}, "10.0.0.5", "10.0.0.1"},
		{"the largest holder gets no more", 10, []client{{"10.0.0.1", 8, 0}, {"10.0.0.2", 2, 0}}, "10.0.0.1", ""},
		{"an IPv6 /64 is one client", 10, []client{{"2001:db8::1", 3, 0}, {"2001:db8::2", 3, 0}, {"10.0.0.9", 4, 0}}, "10.0.0.3", "2001:db8::"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &slots{max: tc.max}
			log := slog.New(slog.DiscardHandler)
			for _, c := range tc.clients {
				for i := range c.idle + c.busy {
					cc, refused := s.admit(connFrom(c.ip), log)
					if refused != nil {
						t.Fatalf("setup: %v", refused)
					}
					if i >= c.idle {
						cc.state.Store(connActive)
					}
				}
			}
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
			if s.open() != tc.max {
				t.Errorf("%d open, want %d", s.open(), tc.max)
			}
			want := 0
			for _, c := range tc.clients {
				if clientOf(netip.MustParseAddr(c.ip)).String() == tc.victim {
					want += c.idle + c.busy
				}
			}
			if got := len(s.byAddr[netip.MustParseAddr(tc.victim)]); got != want-1 {
				t.Errorf("%s holds %d, want %d", tc.victim, got, want-1)
			}
			cc.Close()
			if s.open() != tc.max-1 {
				t.Errorf("after close: %d open", s.open())
			}
		})
	}
}
