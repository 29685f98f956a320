package main

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/internal/testsvc"
)

// ownRedis is a redis-server of the test's own, to kill and start again.
type ownRedis struct {
	port string
	dir  string
	cmd  *exec.Cmd
}

// startOwnRedis starts redis-server on a free port of 127.0.0.1, without
// persistence.
func startOwnRedis(t *testing.T) *ownRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("PORTICO_TEST_STRICT") == "1" {
			t.Fatal("redis-server is not installed (PORTICO_TEST_STRICT=1)")
		}
		t.Skip("redis-server is not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	_ = l.Close()
	r := &ownRedis{port: port, dir: t.TempDir()}
	r.start(t)
	t.Cleanup(r.kill)
	return r
}

func (r *ownRedis) url() string { return "redis://127.0.0.1:" + r.port + "/0" }

func (r *ownRedis) start(t *testing.T) {
	t.Helper()
	r.cmd = exec.Command("redis-server", "--port", r.port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", r.dir)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + r.port})
	defer c.Close()
	waitUntil(t, "redis-server on "+r.port, func() bool {
		return c.Ping(context.Background()).Err() == nil
	})
}

// kill ends the server at once (SIGKILL), as a crash would.
func (r *ownRedis) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

// TestBoundsRedisKilled: Redis is killed under load and started again.
// While it is down the key's bounds hold per instance (the default,
// metering.redis_unreachable: per_instance), never unbounded: metered
// calls are refused (credits are in the same Redis: 503), and each
// instance holds the key's WebSocket connections to the bound on its own.
// Once it is back, the bounds hold across instances again. With refuse,
// a limited key's connections are refused while it is down.
func TestBoundsRedisKilled(t *testing.T) {
	node := &slowNode{}
	srv := newSlowNodeServer(t, node)
	dsn := testsvc.Postgres(t)
	rs := startOwnRedis(t)
	prefix := "bounds-killed-" + testsvc.Suffix() + ":"
	ins := boundedInstances(t, 2, srv, dsn, rs.url(), prefix, func(c *config.Config) {
		c.Limits.MaxWSConnectionsPerKey = 1
	})
	urls := []string{ins[0].url(t, "evm"), ins[1].url(t, "evm")}
	check := func(phase string, l *boundsLoad, most int64) {
		t.Helper()
		if l.other.Load() != 0 {
			t.Errorf("%s: %d answers neither 200, 429 nor 503", phase, l.other.Load())
		}
		if got := node.most.Load(); got > most {
			t.Errorf("%s: the node held %d of the key's calls at once; want at most %d", phase, got, most)
		}
		if got, max := l.admitted.Load(), mostAdmitted(20, l.took); got > max {
			t.Errorf("%s: %d calls admitted in %v; want at most %d", phase, got, l.took, max)
		}
		t.Logf("%s: %d admitted, %d refused, %d unavailable; the node held at most %d", phase, l.admitted.Load(), l.refused.Load(), l.unavailable.Load(), node.most.Load())
	}

	check("redis up", hammerFor(t, urls, 8, 2*time.Second), 4)

	rs.kill()
	node.most.Store(0)
	check("redis killed", hammerFor(t, urls, 8, 2*time.Second), 8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 2 {
		c, status, err := wsDial(ctx, ins[i].wsURL(t, "evm"))
		if err != nil {
			t.Fatalf("redis down, instance %d: its own first connection: %d %v", i, status, err)
		}
		defer c.CloseNow()
		if c, status, err := wsDial(ctx, ins[i].wsURL(t, "evm")); err == nil || status != 503 {
			if c != nil {
				c.CloseNow()
			}
			t.Fatalf("redis down, instance %d: a second connection of 1 was not refused: %d %v", i, status, err)
		}
	}

	rs.start(t)
	// Calls pass as soon as Redis answers; the bounds are shared again
	// once an instance has asked Redis after its downFor (1 s), and the
	// calls it admitted on its own meanwhile have ended.
	for i, u := range urls {
		waitUntil(t, "calls after redis is back", func() bool {
			return call(t, u, `{"jsonrpc":"2.0","id":1,"method":"eth_gasPrice"}`).status == 200 && !ins[i].m.Bounds.Down()
		})
	}
	node.most.Store(0)
	check("redis back", hammerFor(t, urls, 8, 2*time.Second), 4)

	t.Run("refuse", func(t *testing.T) {
		ins := boundedInstances(t, 1, srv, dsn, rs.url(), prefix+"refuse:", func(c *config.Config) {
			c.Metering.RedisUnreachable = config.RedisRefuse
			c.Limits.MaxWSConnectionsPerKey = 1
		})
		rs.kill()
		// Redis is back before the instances stop, so that they give
		// their credit leases back (a lease lost is a close error).
		defer rs.start(t)
		_, status, err := wsDial(ctx, ins[0].wsURL(t, "evm"))
		if err == nil || status != 503 {
			t.Fatalf("redis down, refuse: a connection: %d %v", status, err)
		}
		if a := call(t, ins[0].url(t, "evm"), `{"jsonrpc":"2.0","id":1,"method":"eth_gasPrice"}`); a.status != 503 {
			t.Fatalf("redis down, refuse: a call: %d %s", a.status, a.body)
		}
	})
}

// newSlowNodeServer serves node on 127.0.0.1 until the test ends.
func newSlowNodeServer(t *testing.T, node *slowNode) string {
	srv := httptest.NewServer(node)
	t.Cleanup(srv.Close)
	return srv.URL
}
