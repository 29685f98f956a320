package webhook_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/porticohq/portico/gateway/webhook"
)

// fakeDNS answers every A query with addr, over UDP on 127.0.0.1, and
// returns a resolver that asks it.
func fakeDNS(t *testing.T, addr [4]byte) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if q.Type == dnsmessage.TypeA {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: addr})
			}
			msg, _ := b.Finish()
			_, _ = pc.WriteTo(msg, from)
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// With allow_private_urls off, a delivery to loopback, to the cloud
// metadata address, or to a name that resolves to a private address is
// refused before anything is sent; with it on, a redirect (to loopback)
// is not followed.
func TestSSRF(t *testing.T) {
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer target.Close()
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	strict := webhook.NewSender(webhook.SenderConfig{Resolver: fakeDNS(t, [4]byte{10, 0, 0, 1})})
	for _, c := range []struct{ name, url string }{
		{"loopback", target.URL},
		{"loopback by name", "http://localhost:" + port + "/"},
		{"metadata", "http://169.254.169.254/latest/meta-data/"},
		{"name resolving to 10.0.0.1", "https://hooks.example.test/"},
		{"ipv6 loopback", "http://[::1]:" + port + "/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := strict.Post(context.Background(), c.url, "s", "d1", []byte(`{}`))
			if !errors.Is(err, webhook.ErrPrivateAddress) {
				t.Fatalf("Post(%s) = %v, want ErrPrivateAddress", c.url, err)
			}
		})
	}
	if hits.Load() != 0 {
		t.Fatalf("the target was reached %d times", hits.Load())
	}

	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusFound)
	}))
	defer redirect.Close()
	lax := webhook.NewSender(webhook.SenderConfig{AllowPrivate: true})
	var se *webhook.StatusError
	if err := lax.Post(context.Background(), redirect.URL, "s", "d1", []byte(`{}`)); !errors.As(err, &se) || se.Status != http.StatusFound {
		t.Fatalf("redirect: %v, want the 302 as a failure", err)
	}
	if hits.Load() != 0 {
		t.Fatal("the redirect was followed")
	}
}

func TestPublic(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"8.8.8.8", true}, {"2606:4700::1111", true},
		{"127.0.0.1", false}, {"10.0.0.1", false}, {"172.16.3.4", false}, {"192.168.1.1", false},
		{"169.254.169.254", false}, {"100.64.0.1", false}, {"0.0.0.0", false}, {"::1", false},
		{"fe80::1", false}, {"fd00::1", false}, {"::ffff:127.0.0.1", false}, {"224.0.0.1", false},
	} {
		if got := webhook.Public(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("Public(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
}

func TestSign(t *testing.T) {
	// RFC 4231 test case 2.
	got := webhook.Sign([]byte("what do ya want for nothing?"), "Jefe")
	want := "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
	if got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}
