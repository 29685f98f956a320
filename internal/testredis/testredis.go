// Package testredis starts Redis servers of a test's own: one server that
// a test may kill and start again (its data kept in an append-only file),
// or a Redis Cluster of three masters. They listen on free 127.0.0.1
// ports, keep their files in the test's temporary directory and are
// stopped when the test ends.
//
// redis-server and redis-cli come from scripts/start-services.sh (or
// Debian's redis-server and redis-tools). When they are missing the test
// is skipped, unless PORTICO_TEST_STRICT=1, which makes it fail.
package testredis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server of the test's own.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	cmd  *exec.Cmd
	args []string
}

func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("PORTICO_TEST_STRICT") == "1" {
		t.Fatalf("redis-server is needed (PORTICO_TEST_STRICT=1): %v", err)
	}
	t.Skipf("redis-server is needed: %v", err)
}

// freePort returns a port free on 127.0.0.1 whose cluster bus port
// (port+10000) is free too.
func freePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port
	}
	t.Fatal("no free port pair for redis")
	return 0
}

// Start starts a redis-server that keeps its data in an append-only file
// written through on every command, so Kill then Restart loses nothing.
func Start(t testing.TB) *Server {
	t.Helper()
	return start(t, "--appendonly", "yes", "--appendfsync", "always")
}

func start(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, err)
	}
	dir := t.TempDir()
	s := &Server{t: t, bin: bin, dir: dir, port: freePort(t)}
	s.args = append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--protected-mode", "no", "--daemonize", "no"}, extra...)
	s.Restart()
	t.Cleanup(s.Kill)
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Kill kills the server at once (SIGKILL) and waits for it to end.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again, on the same port and files, and
// waits until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redis-server: %v", err)
	}
	s.cmd = cmd
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on %s did not answer: %v", s.Addr(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Cluster starts a Redis Cluster of three masters without replicas and
// returns their addresses once every slot is served.
func Cluster(t testing.TB) []string {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		unavailable(t, err)
	}
	var addrs []string
	for range 3 {
		s := start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000", "--appendonly", "no")
		addrs = append(addrs, s.Addr())
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer c.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := c.ClusterInfo(ctx).Result()
		cancel()
		if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") {
			return addrs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the test cluster on %v is not ready: %v %s", addrs, err, info)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Dir is where the server keeps its files.
func (s *Server) Dir() string { return filepath.Clean(s.dir) }

// String names the server in test logs.
func (s *Server) String() string { return fmt.Sprintf("redis-server %s", s.Addr()) }

// MasterName is the name the Sentinel of Sentinel watches its master by.
const MasterName = "portico-test"

// Sentinel starts a master and one Sentinel watching it (quorum 1) and
// returns the Sentinel's address once it names the master.
func Sentinel(t testing.TB) []string {
	t.Helper()
	master := start(t, "--appendonly", "no")
	s := &Server{t: t, dir: t.TempDir(), port: freePort(t)}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, err)
	}
	s.bin = bin
	conf := filepath.Join(s.dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 5000\n",
		s.port, s.dir, MasterName, master.port, MasterName)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	s.args = []string{conf, "--sentinel"}
	s.Restart()
	t.Cleanup(s.Kill)
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		addr, err := c.GetMasterAddrByName(ctx, MasterName).Result()
		cancel()
		if err == nil && len(addr) == 2 && addr[1] == strconv.Itoa(master.port) {
			return []string{s.Addr()}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the test Sentinel on %s does not name its master: %v %v", s.Addr(), addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
