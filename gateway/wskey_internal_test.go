package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/store"
)

// unversioned hides the identities' versions, so that every message
// re-derives the lists: the baseline of BenchmarkSocketKeyCheck.
type unversioned struct{ Authenticator }

func (u unversioned) Authenticate(ctx context.Context, key string) (apikey.Identity, error) {
	id, err := u.Authenticator.Authenticate(ctx, key)
	id.Version = 0
	return id, err
}

// BenchmarkSocketKeyCheck is what each WebSocket message adds to look its
// key up again (issue 33): a key of the store, cached as a server keeps
// it, unchanged since the socket last saw it, with and without lists of
// its own. The lookup is the one an HTTP request makes (a SHA-256 of the
// key and a cache read); the version compare spares the lists, which
// "re-derived" checks on every message instead.
func BenchmarkSocketKeyCheck(b *testing.B) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	auth := store.NewAuthenticator(st, time.Hour)
	_, plain, err := st.Create(ctx, store.KeySpec{Name: "plain", DailyCredits: 1})
	if err != nil {
		b.Fatal(err)
	}
	_, listed, err := st.Create(ctx, store.KeySpec{Name: "listed", DailyCredits: 1, AllowNetworks: []string{"n"}, AllowOrigins: []string{"app.example.com"},
		Rules: store.Rules{AllowUserAgents: []string{"viem/"}}})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name, key string
		keys      Authenticator
	}{
		{"no lists", plain, auth},
		{"lists", listed, auth},
		{"lists re-derived", listed, unversioned{auth}},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := &Gateway{keys: c.keys}
			id, err := auth.Authenticate(ctx, c.key)
			if err != nil {
				b.Fatal(err)
			}
			s := newSocket("n", c.key, "https://app.example.com", "viem/2.0", id)
			g.wsKeyOf = map[string]*wsKey{}
			g.shareKeyLocked(s)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := g.keyNow(ctx, s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSocketsShareTheirKey: the open sockets of one key share one wsKey,
// which goes when the last of them closes.
func TestSocketsShareTheirKey(t *testing.T) {
	g := New(Config{Keys: apikey.NewSet(), KeyTTL: time.Hour})
	defer g.Close()
	id := apikey.Identity{Name: "k", Version: 1}
	a, b, other := &jsonrpc.Conn{}, &jsonrpc.Conn{}, &jsonrpc.Conn{}
	sa, sb := newSocket("n", "key-one", "", "", id), newSocket("n", "key-one", "", "", apikey.Identity{Name: "k", Version: 2})
	so := newSocket("n", "key-two", "", "", id)
	for c, s := range map[*jsonrpc.Conn]*socket{a: sa, b: sb, other: so} {
		if !g.track(c, s) {
			t.Fatal("not tracked")
		}
	}
	if sa.key != sb.key || sa.key == so.key || len(g.wsKeyOf) != 2 {
		t.Fatalf("keys not shared: %p %p %p, %d held", sa.key, sb.key, so.key, len(g.wsKeyOf))
	}
	if v := sa.key.id.Version; v != 2 {
		t.Errorf("the shared key holds version %d, want the newer 2", v)
	}
	g.untrack(a)
	if len(g.wsKeyOf) != 2 {
		t.Errorf("a key with a socket open let go")
	}
	g.untrack(b)
	g.untrack(other)
	if len(g.wsKeyOf) != 0 {
		t.Errorf("%d keys held with no socket open", len(g.wsKeyOf))
	}
}
