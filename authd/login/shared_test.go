package login

import (
	"net/url"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/authd/limit"
	"github.com/porticohq/portico/internal/testsvc"
)

// TestLimitsAcrossInstances: two instances of the login pages share
// Redis (each with its own client), behind one public URL; an attacker's
// wrong codes for one address, spread over both, lock it as if they had
// all gone to one: after CodeFailures wrong codes in total, a new login on
// either instance gets no code.
func TestLimitsAcrossInstances(t *testing.T) {
	url0, prefix := testsvc.Redis(t)
	shared := func() limit.Shared {
		opts, _ := redis.ParseURL(url0)
		rdb := redis.NewClient(opts)
		t.Cleanup(func() { _ = rdb.Close() })
		return limit.NewRedis(rdb, prefix)
	}
	e := newEnv(t, func(c *Config) { c.Shared = shared() })
	cfg := e.Handler.cfg
	cfg.Shared = shared()
	other, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	instances := []*Handler{e.Handler, other}
	sdk := e.sdk(t, auth.InitParams{})
	const victim = "spread-target@example.com"
	free := DefaultCodeFailures - 1
	locked := e.Handler.catalogs[auth.English]["code_locked"]
	for i := range free {
		// Each wrong code from a new login on the next instance.
		e.serve(instances[i%2])
		b := e.codePage(t, sdk, victim)
		if cb, _ := b.submit("code", url.Values{"code": {wrongCode(e.Log.lastCode(t, victim))}}); cb != "" {
			t.Fatalf("wrong code %d ended the login: %s", i+1, cb)
		}
		if strings.Contains(b.Page, locked) {
			t.Fatalf("locked after %d wrong codes; %d are free", i+1, free)
		}
	}
	// The last free wrong code, on instance 1, locks the address for
	// this client IP on both.
	e.serve(instances[1])
	b := e.codePage(t, sdk, victim)
	b.submit("code", url.Values{"code": {wrongCode(e.Log.lastCode(t, victim))}})
	for i, h := range instances {
		e.serve(h)
		if b := e.codePage(t, sdk, victim); !strings.Contains(b.Page, locked) {
			t.Fatalf("instance %d gave a code after %d wrong codes over both instances:\n%s", i, DefaultCodeFailures, b.Page)
		}
	}
}
