package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	"github.com/redis/go-redis/v9"

	"github.com/porticohq/portico/internal/loadgen"
)

// leasesSetup (issue 37) runs the small call through several portico
// instances that share one Redis (a redis-server of the run's own, so that
// its counters hold nothing else) and one PostgreSQL database (made for
// the run), with metering off, with Redis charged call by call
// (lease_ttl: 0, and --baseline's binary when given) and with leases. For
// each it reports the calls a second over all instances, Portico's CPU
// per call, and what each call costs the shared stores: Redis commands
// and Redis CPU (INFO commandstats and cpu), PostgreSQL transactions and
// rows written (pg_stat_database), in one run, modes alternating round by
// round.
func leasesSetup(ctx context.Context, c *cli) error {
	up, err := listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(smallAnswer)
	}))
	if err != nil {
		return err
	}
	defer up.Close()
	rs, err := startRedisServer(ctx, c.RedisServer)
	if err != nil {
		return err
	}
	defer rs.stop()
	db, dsn, dropDB, err := benchDatabase(ctx, c.Postgres)
	if err != nil {
		return err
	}
	defer dropDB()
	rdb := redis.NewClient(&redis.Options{Addr: rs.addr})
	defer rdb.Close()

	type mode struct {
		name, binary, yaml string
		procs              []*process
		rounds             []leaseRound
	}
	common := fmt.Sprintf("store: {postgres: %q}", dsn)
	metering := func(extra string) string {
		return fmt.Sprintf("metering: {redis: \"redis://%s/0\", redis_prefix: \"bench:\"%s}", rs.addr, extra)
	}
	modes := []*mode{
		{name: "metering off", binary: c.Portico, yaml: "metering: {disabled: true}"},
		{name: "Redis, call by call (lease_ttl: 0)", binary: c.Portico, yaml: metering(", lease_ttl: 0s")},
		{name: "Redis, leases (lease_ttl: 2s)", binary: c.Portico, yaml: metering("")},
	}
	if c.Baseline != "" {
		modes = append(modes[:1], append([]*mode{{name: "Redis, before (--baseline)", binary: c.Baseline, yaml: metering("")}}, modes[1:]...)...)
	}
	for _, m := range modes {
		for i := range c.Instances {
			cc := *c
			cc.Portico = m.binary
			p, err := startPortico(ctx, &cc, map[string]string{"evm": "http://" + up.Addr().String()}, common,
				strings.TrimSuffix(m.yaml, "}")+fmt.Sprintf(", instance: %q}", fmt.Sprintf("bench-%d", i)))
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			defer p.stop()
			m.procs = append(m.procs, p)
		}
	}
	body := txLookup("0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e").body
	for range c.Rounds {
		for _, m := range modes {
			r, err := leaseRun(ctx, c, m.procs, body, rdb, db)
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			m.rounds = append(m.rounds, r)
		}
	}
	fmt.Printf("\n%d instances sharing one Redis and one PostgreSQL database, %d clients each, the small call (%d rounds of %s, medians):\n\n", c.Instances, max(1, c.Concurrency/c.Instances), c.Rounds, c.Duration)
	fmt.Println("| metering | req/s | × off | Portico CPU per call | Redis scripts per call | Redis commands per call (scripts' own included) | Redis CPU per call | PostgreSQL transactions per call | PostgreSQL rows written per call | errors |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	off := medianOf(modes[0].rounds, func(r leaseRound) float64 { return r.rps })
	for _, m := range modes {
		med := func(f func(leaseRound) float64) float64 { return medianOf(m.rounds, f) }
		rps := med(func(r leaseRound) float64 { return r.rps })
		errs := 0
		for _, r := range m.rounds {
			errs += r.errors
		}
		fmt.Printf("| %s | %.0f | %.2f× | %.1f µs | %.4f | %.4f | %.2f µs | %.5f | %.5f | %d |\n", m.name, rps, rps/off,
			med(func(r leaseRound) float64 { return r.cpuPerCall }),
			med(func(r leaseRound) float64 { return r.redisScripts }),
			med(func(r leaseRound) float64 { return r.redisCmds }),
			med(func(r leaseRound) float64 { return r.redisCPU }),
			med(func(r leaseRound) float64 { return r.pgXacts }),
			med(func(r leaseRound) float64 { return r.pgRows }), errs)
	}
	return nil
}

// smallAnswer is the trivial upstream's answer to the small call.
var smallAnswer = []byte(`{"jsonrpc":"2.0","id":1,"result":{"blockHash":"0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e","blockNumber":"0x1","hash":"0x5b4bf0e1e5b3a7ad3b6ccd8a9f5d2f0b1e7c8d9a0b1c2d3e4f5a6b7c8d9e0f1a","transactionIndex":"0x0","type":"0x0"}}`)

// leaseRound is one round of one mode: per call figures.
type leaseRound struct {
	rps, cpuPerCall, redisCmds, redisScripts, redisCPU, pgXacts, pgRows float64
	errors                                                              int
}

// storeCounters are the shared stores' counters at one moment.
type storeCounters struct {
	redisCmds       int64 // every command, those scripts run included
	redisScripts    int64 // EVAL and EVALSHA
	redisCPU        time.Duration
	pgXacts, pgRows int64
}

func readCounters(ctx context.Context, rdb *redis.Client, db *sql.DB) (storeCounters, error) {
	var s storeCounters
	stats, err := rdb.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(stats, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "cmdstat_") && !strings.HasPrefix(line, "cmdstat_info:"):
			_, rest, _ := strings.Cut(line, "calls=")
			n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			s.redisCmds += n
			if strings.HasPrefix(line, "cmdstat_eval") {
				s.redisScripts += n
			}
		case strings.HasPrefix(line, "used_cpu_sys:"), strings.HasPrefix(line, "used_cpu_user:"):
			_, v, _ := strings.Cut(line, ":")
			f, _ := strconv.ParseFloat(v, 64)
			s.redisCPU += time.Duration(f * float64(time.Second))
		}
	}
	err = db.QueryRowContext(ctx, `SELECT xact_commit + xact_rollback, tup_inserted + tup_updated + tup_deleted
		FROM pg_stat_database WHERE datname = current_database()`).Scan(&s.pgXacts, &s.pgRows)
	return s, err
}

// leaseRun drives every instance of a mode at once for one round and
// returns what a call cost.
func leaseRun(ctx context.Context, c *cli, procs []*process, body []byte, rdb *redis.Client, db *sql.DB) (leaseRound, error) {
	cpu := func() time.Duration {
		var t time.Duration
		for _, p := range procs {
			d, _ := cpuTime(p.cmd.Process.Pid)
			t += d
		}
		return t
	}
	var (
		mu      sync.Mutex
		results []loadgen.Result
		errs    []error
		wg      sync.WaitGroup
		before  storeCounters
		cpu0    time.Duration
		started = make(chan struct{})
	)
	for _, p := range procs {
		wg.Go(func() {
			r, err := loadgen.Run(ctx, loadgen.Config{URL: p.urls["evm"], Body: body,
				Concurrency: max(1, c.Concurrency/len(procs)), Duration: c.Duration, Warmup: c.Warmup})
			mu.Lock()
			results, errs = append(results, r), append(errs, err)
			mu.Unlock()
		})
	}
	// The counters are read after the warm-up, as the load generator
	// starts counting.
	go func() {
		time.Sleep(c.Warmup)
		before, _ = readCounters(ctx, rdb, db)
		cpu0 = cpu()
		close(started)
	}()
	wg.Wait()
	<-started
	cpu1 := cpu()
	time.Sleep(time.Second) // PostgreSQL publishes its statistics within a second
	after, err := readCounters(ctx, rdb, db)
	if err != nil {
		return leaseRound{}, err
	}
	var r leaseRound
	calls := 0
	for i, res := range results {
		if errs[i] != nil {
			return r, errs[i]
		}
		r.rps += res.RPS
		r.errors += res.Errors
		calls += res.Requests - res.Errors - res.Timeouts
	}
	if calls == 0 {
		return r, fmt.Errorf("no call answered")
	}
	n := float64(calls)
	r.cpuPerCall = float64(cpu1-cpu0) / 1e3 / n
	r.redisCmds = float64(after.redisCmds-before.redisCmds) / n
	r.redisScripts = float64(after.redisScripts-before.redisScripts) / n
	r.redisCPU = float64(after.redisCPU-before.redisCPU) / 1e3 / n
	r.pgXacts = float64(after.pgXacts-before.pgXacts) / n
	r.pgRows = float64(after.pgRows-before.pgRows) / n
	return r, nil
}

func medianOf(rs []leaseRound, f func(leaseRound) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	for i := range v { // insertion sort: a handful of rounds
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
	return v[len(v)/2]
}

// redisServer is a redis-server of the run's own.
type redisServer struct {
	cmd  *exec.Cmd
	addr string
	dir  string
}

func (r *redisServer) stop() {
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	_ = os.RemoveAll(r.dir)
}

// startRedisServer starts bin on a free 127.0.0.1 port, without
// persistence, and waits until it answers.
func startRedisServer(ctx context.Context, bin string) (*redisServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dir, err := os.MkdirTemp("", "portico-bench-redis")
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("redis-server (--redis-server): %w", err)
	}
	rs := &redisServer{cmd: cmd, addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir}
	c := redis.NewClient(&redis.Options{Addr: rs.addr})
	defer c.Close()
	for i := 0; c.Ping(ctx).Err() != nil; i++ {
		if i > 100 {
			rs.stop()
			return nil, fmt.Errorf("redis-server on %s does not answer", rs.addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return rs, nil
}

// benchDatabase makes a PostgreSQL database for the run on the server of
// dsn and returns it, its DSN and how to drop it.
func benchDatabase(ctx context.Context, dsn string) (*sql.DB, string, func(), error) {
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, "", nil, err
	}
	name := fmt.Sprintf("portico_bench_%d", time.Now().UnixNano())
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		_ = admin.Close()
		return nil, "", nil, fmt.Errorf("--postgres: %w", err)
	}
	u := dsn
	if i := strings.LastIndex(u, "/"); i >= 0 {
		rest := ""
		if q := strings.Index(u[i:], "?"); q >= 0 {
			rest = u[i+q:]
		}
		u = u[:i+1] + name + rest
	}
	db, err := sql.Open("pgx", u)
	if err != nil {
		return nil, "", nil, err
	}
	drop := func() {
		_ = db.Close()
		_, _ = admin.ExecContext(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		_ = admin.Close()
	}
	return db, u, drop, nil
}
