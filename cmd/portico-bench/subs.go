package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// This file is the subs setup (issue 17): a fake EVM node making a new
// head every interval (headsnode.go, a process of its own), Portico in
// front of it with the node's url and ws_url, and many WebSocket clients
// subscribed to newHeads through Portico, all sharing Portico's one
// upstream subscription. It measures, per head, the delay from the node's
// send to each client's receipt (the node's clock is this machine's), the
// resident memory Portico adds per idle subscriber, and Portico's CPU per
// notification per subscriber. One client subscribed to the node directly
// gives the baseline delay in the same run.

// subsRun is one run of the subs setup.
type subsRun struct {
	clients  int           // subscribers through Portico
	heads    int           // heads measured
	interval time.Duration // between heads
	dial     int           // clients connecting at once
	settle   time.Duration // after the last client subscribed, before memory is read
	idle     time.Duration // how long idle CPU is read, the heads paused
	// floor subscribes the clients to the fake node itself, in floor mode
	// (floor.go), instead of through Portico: the node is the server
	// measured.
	floor bool
}

// subsWarmHeads are the heads after the pause that are not measured: the
// first one finds every connection idle since it subscribed.
const subsWarmHeads = 2

// subsResult is what a run measured.
type subsResult struct {
	clients, heads int
	connect        time.Duration   // connecting and subscribing every client
	delays         []time.Duration // every client's delay for every measured head it got
	last           []time.Duration // per measured head, the delay to its last client
	direct         []time.Duration // per measured head, the direct client's delay
	missed         int             // notifications of measured heads that never came
	// Portico's resident memory: after warm-up with one subscriber, with
	// every client subscribed and idle, and after the measured heads.
	rssBefore, rssIdle, rssAfter int64
	cpu, window                  time.Duration // the server's CPU over the measured heads, and their wall time
	cpuSys                       time.Duration // the part of cpu in the kernel (system time)
	idleCPU                      time.Duration // Portico's CPU over subsRun.idle, every client subscribed, no heads
	idleWindow                   time.Duration
	benchCPU                     time.Duration // this process's (the clients') CPU over the measured heads
	log                          string        // the file with Portico's log
}

// perSubscriber is the resident memory Portico added per idle subscriber.
func (r *subsResult) perSubscriber() float64 {
	return float64(r.rssIdle-r.rssBefore) / float64(r.clients)
}

// cpuPerNotification is the server's CPU over the measured heads per
// notification sent.
func (r *subsResult) cpuPerNotification() time.Duration {
	return r.cpu / time.Duration(r.heads*r.clients)
}

// sysPerNotification is the kernel's part of cpuPerNotification.
func (r *subsResult) sysPerNotification() time.Duration {
	return r.cpuSys / time.Duration(r.heads*r.clients)
}

// subsSetup runs the subs setup once per --subscribers value and prints a
// table.
func subsSetup(ctx context.Context, c *cli) error {
	var rlim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rlim); err != nil {
		return err
	}
	need := uint64(slices.Max(c.Subscribers)) + 256
	if rlim.Cur < need {
		return fmt.Errorf("the file limit is %d (hard %d); %d clients need about %d open files here and as many in portico: raise the hard limit (ulimit -Hn, limits.conf) or use fewer --subscribers",
			rlim.Cur, rlim.Max, slices.Max(c.Subscribers), need)
	}
	fmt.Printf("\nsubs: clients subscribed to newHeads through Portico (metering on, one key), a head every %s, %d heads measured after %d warm ones; file limit %d\n\n",
		c.HeadInterval, c.Heads, subsWarmHeads, rlim.Cur)
	fmt.Println("| server | subscribers | connect | delay p50 | delay p99 | last client p50 | last client p99 | direct p50 | direct p99 | missed | RSS before | RSS idle | RSS per subscriber | CPU per notification per subscriber (kernel's part) | CPU idle |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	var notes []string
	for _, n := range c.Subscribers {
		for _, floor := range []bool{false, true} {
			if floor && !c.Floor {
				continue
			}
			server := "Portico"
			if floor {
				server = "floor"
			}
			r, err := runSubs(ctx, c, subsRun{clients: n, heads: c.Heads, interval: c.HeadInterval, dial: c.DialConcurrency,
				settle: 2 * time.Second, idle: 3 * time.Second, floor: floor})
			if err != nil {
				return fmt.Errorf("%d subscribers (%s): %w", n, server, err)
			}
			fmt.Printf("| %s | %d | %.1f s | %s | %s | %s | %s | %s | %s | %d | %s | %s | %.1f KB | %.1f µs (%.1f µs) | %.0f ms/s |\n",
				server, r.clients, r.connect.Seconds(), ms(pct(r.delays, 0.50)), ms(pct(r.delays, 0.99)), ms(pct(r.last, 0.50)), ms(pct(r.last, 0.99)),
				ms(pct(r.direct, 0.50)), ms(pct(r.direct, 0.99)), r.missed, mib(r.rssBefore), mib(r.rssIdle), r.perSubscriber()/1000,
				float64(r.cpuPerNotification())/1e3, float64(r.sysPerNotification())/1e3, float64(r.idleCPU.Milliseconds())/r.idleWindow.Seconds())
			notes = append(notes, fmt.Sprintf("%s, %d subscribers: %d heads over %.1f s; the server's CPU %.2f s (%.0f%% of a core, %.1f ms per head, %.2f s in the kernel), the clients' %.2f s (%.1f ms per head); RSS after the heads %s; last client at most %s; Portico's log: %s",
				server, r.clients, r.heads, r.window.Seconds(), r.cpu.Seconds(), 100*r.cpu.Seconds()/r.window.Seconds(), float64(r.cpu.Microseconds())/1e3/float64(r.heads),
				r.cpuSys.Seconds(), r.benchCPU.Seconds(), float64(r.benchCPU.Microseconds())/1e3/float64(r.heads), mib(r.rssAfter), ms(pct(r.last, 1)), r.log))
		}
	}
	fmt.Println()
	for _, n := range notes {
		fmt.Println(n)
	}
	return nil
}

// runSubs runs the setup once with its own node and Portico.
func runSubs(ctx context.Context, c *cli, r subsRun) (*subsResult, error) {
	mode := "geth"
	if r.floor {
		mode = "floor"
	}
	node, err := startChild(ctx, "fake-heads-node", "127.0.0.1:0", r.interval.String(), mode)
	if err != nil {
		return nil, err
	}
	defer node.stop()
	nodeHTTP, nodeWS := "http://"+node.addr, "ws://"+node.addr+"/"
	// The server measured, and the URL its clients subscribe at.
	pid, gwWS, host, logName := node.cmd.Process.Pid, nodeWS, "", "(none: no Portico in the floor run)"
	if !r.floor {
		// Portico's log goes to a file: with thousands of clients a
		// warning per connection would flood the terminal.
		logFile, err := os.CreateTemp("", "portico-bench-subs-*.log")
		if err != nil {
			return nil, err
		}
		defer logFile.Close()
		limit := r.clients + 1024
		gw, err := startPorticoWith(ctx, c, porticoOptions{
			stderr: logFile,
			pprof:  c.Pprof,
			extra: []string{fmt.Sprintf("limits: {max_connections: %d, max_connections_per_ip: 0, max_ws_connections: %d, max_ws_connections_per_key: 0, max_subscriptions_per_key: %d}",
				limit, limit, limit)},
			networks: []string{fmt.Sprintf(`{name: evm, family: evm, chain_id: "0x1", upstreams: [{name: fake, url: %q, ws_url: %q}]}`, nodeHTTP, nodeWS)},
		})
		if err != nil {
			return nil, err
		}
		defer gw.stop()
		pid, logName = gw.cmd.Process.Pid, logFile.Name()
		if gwWS, host, err = porticoWS(gw.urls["evm"]); err != nil {
			return nil, err
		}
	}

	// Every client reads from the moment it has subscribed (it answers
	// Portico's pings while reading) until clientsCtx ends.
	clientsCtx, stopClients := context.WithCancel(ctx)
	var (
		readers   sync.WaitGroup
		socketsMu sync.Mutex
		sockets   []*websocket.Conn
	)
	defer readers.Wait()
	defer stopClients()
	defer func() {
		socketsMu.Lock()
		defer socketsMu.Unlock()
		for _, ws := range sockets {
			ws.CloseNow()
		}
	}()
	read := func(ws *websocket.Conn, record func(num uint64, at int64)) {
		socketsMu.Lock()
		sockets = append(sockets, ws)
		socketsMu.Unlock()
		readers.Go(func() { readHeads(clientsCtx, ws, record) })
	}

	// Warm-up: the direct client, and one client through Portico, which
	// opens the upstream subscription (once head tracking has found the
	// node) and keeps it open; three heads through both.
	var directLog atomic.Pointer[headLog]
	ws, err := dialSub(ctx, nodeWS, "")
	if err != nil {
		return nil, fmt.Errorf("direct client: %w", err)
	}
	read(ws, func(num uint64, at int64) {
		if l := directLog.Load(); l != nil {
			l.record(0, num, at)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		ws, err = dialSub(ctx, gwWS, host)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the first client through Portico: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	warm := make(chan struct{}, 64)
	read(ws, func(uint64, int64) {
		select {
		case warm <- struct{}{}:
		default:
		}
	})
	for range 3 {
		select {
		case <-warm:
		case <-time.After(10*r.interval + 10*time.Second):
			return nil, errors.New("the first client through Portico got no heads")
		}
	}

	// Heads paused: memory with one subscriber, then every client
	// connects and subscribes, idle.
	head, err := nodeControl(ctx, nodeHTTP, "pause")
	if err != nil {
		return nil, err
	}
	time.Sleep(200 * time.Millisecond)
	res := &subsResult{clients: r.clients, heads: r.heads, log: logName}
	if res.rssBefore, err = rss(pid); err != nil {
		return nil, err
	}
	total := subsWarmHeads + r.heads
	receipts := newHeadLog(head+1, total, r.clients)
	directLog.Store(newHeadLog(head+1, total, 1))
	start := time.Now()
	var (
		wg       sync.WaitGroup
		firstErr atomic.Pointer[error]
		sem      = make(chan struct{}, max(r.dial, 1))
	)
	for i := range r.clients {
		sem <- struct{}{}
		if firstErr.Load() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			ws, err := dialSub(ctx, gwWS, host)
			if err != nil {
				err = fmt.Errorf("client %d: %w", i, err)
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			read(ws, func(num uint64, at int64) { receipts.record(i, num, at) })
		})
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return nil, *e
	}
	res.connect = time.Since(start)
	time.Sleep(r.settle)
	if res.rssIdle, err = rss(pid); err != nil {
		return nil, err
	}
	idleStart := time.Now()
	cpu0, err := cpuTime(pid)
	if err != nil {
		return nil, err
	}
	time.Sleep(r.idle)
	cpu1, err := cpuTime(pid)
	if err != nil {
		return nil, err
	}
	res.idleCPU, res.idleWindow = cpu1-cpu0, time.Since(idleStart)

	// Heads again: the warm ones, then the measured ones. The CPU window
	// runs from the last warm head's last receipt to the last measured
	// head's.
	if _, err := nodeControl(ctx, nodeHTTP, "resume"); err != nil {
		return nil, err
	}
	deadline = time.Now().Add(time.Duration(total)*r.interval + 30*time.Second)
	receipts.wait(subsWarmHeads-1, deadline)
	userA, sysA, errA := cpuTimes(pid)
	selfA, windowA := selfCPU(), time.Now()
	receipts.wait(total-1, deadline)
	userB, sysB, errB := cpuTimes(pid)
	res.benchCPU, res.window = selfCPU()-selfA, time.Since(windowA)
	if err := errors.Join(errA, errB); err != nil {
		return nil, err
	}
	res.cpu, res.cpuSys = userB+sysB-userA-sysA, sysB-sysA
	if res.rssAfter, err = rss(pid); err != nil {
		return nil, err
	}
	if _, err := nodeControl(ctx, nodeHTTP, "pause"); err != nil {
		return nil, err
	}
	sent, err := sentTimes(ctx, nodeHTTP)
	if err != nil {
		return nil, err
	}
	dl := directLog.Load()
	for h := subsWarmHeads; h < total; h++ {
		at, ok := sent[receipts.first+uint64(h)]
		if !ok {
			return nil, fmt.Errorf("the node did not send head %d", receipts.first+uint64(h))
		}
		if d, ok := dl.at(0, h); ok {
			res.direct = append(res.direct, time.Duration(d-at))
		}
		var last int64
		for i := range r.clients {
			d, ok := receipts.at(i, h)
			if !ok {
				res.missed++
				continue
			}
			res.delays = append(res.delays, time.Duration(d-at))
			last = max(last, d)
		}
		if last != 0 {
			res.last = append(res.last, time.Duration(last-at))
		}
	}
	return res, nil
}

// porticoWS turns Portico's HTTP URL of a network (http://evm.localhost:PORT/v3/KEY)
// into its WebSocket URL on 127.0.0.1 and the Host to send.
func porticoWS(httpURL string) (wsURL, host string, err error) {
	u, err := url.Parse(httpURL)
	if err != nil {
		return "", "", err
	}
	_, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", "", err
	}
	return "ws://127.0.0.1:" + port + "/ws" + u.Path, u.Host, nil
}

// subsHTTP dials the clients' WebSockets: no proxy, a fresh connection each.
var subsHTTP = &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext}}

// dialSub connects a WebSocket client and subscribes it to newHeads.
func dialSub(ctx context.Context, wsURL, host string) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{Host: host, HTTPClient: subsHTTP})
	if err != nil {
		return nil, err
	}
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`)); err != nil {
		ws.CloseNow()
		return nil, err
	}
	_, msg, err := ws.Read(ctx)
	if err != nil {
		ws.CloseNow()
		return nil, err
	}
	if !bytes.Contains(msg, []byte(`"result":"0x`)) {
		ws.CloseNow()
		return nil, fmt.Errorf("eth_subscribe: %.300s", msg)
	}
	return ws, nil
}

// readHeads reads notifications until ctx ends or the connection breaks,
// and records each head's number and when its message was read whole.
func readHeads(ctx context.Context, ws *websocket.Conn, record func(num uint64, at int64)) {
	var buf bytes.Buffer
	for {
		_, r, err := ws.Reader(ctx)
		if err != nil {
			return
		}
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return
		}
		at := time.Now().UnixNano()
		if num, ok := headNumber(buf.Bytes()); ok {
			record(num, at)
		}
	}
}

// headNumber reads the "number" of the header in a newHeads notification.
func headNumber(msg []byte) (uint64, bool) {
	const key = `"number":"0x`
	i := bytes.Index(msg, []byte(key))
	if i < 0 {
		return 0, false
	}
	hex := msg[i+len(key):]
	end := bytes.IndexByte(hex, '"')
	if end < 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(hex[:end]), 16, 64)
	return n, err == nil
}

// headLog holds when each client read each head, from head first on.
type headLog struct {
	first          uint64
	heads, clients int
	recv           []atomic.Int64 // [client*heads+head]: unix ns, 0 for not yet
	got            []atomic.Int32 // per head: the clients that have it
	done           []chan struct{}
}

func newHeadLog(first uint64, heads, clients int) *headLog {
	l := &headLog{first: first, heads: heads, clients: clients, recv: make([]atomic.Int64, heads*clients),
		got: make([]atomic.Int32, heads), done: make([]chan struct{}, heads)}
	for i := range l.done {
		l.done[i] = make(chan struct{})
	}
	return l
}

func (l *headLog) record(client int, num uint64, at int64) {
	if num < l.first || num >= l.first+uint64(l.heads) {
		return
	}
	h := int(num - l.first)
	if !l.recv[client*l.heads+h].CompareAndSwap(0, at) {
		return
	}
	if int(l.got[h].Add(1)) == l.clients {
		close(l.done[h])
	}
}

// at is when client read head index h.
func (l *headLog) at(client, h int) (int64, bool) {
	v := l.recv[client*l.heads+h].Load()
	return v, v != 0
}

// wait waits until every client has head index h, or until deadline.
func (l *headLog) wait(h int, deadline time.Time) bool {
	select {
	case <-l.done[h]:
		return true
	case <-time.After(time.Until(deadline)):
		return false
	}
}

// nodeControl posts to the heads node's /pause or /resume and returns the
// last head it sent.
func nodeControl(ctx context.Context, nodeURL, what string) (uint64, error) {
	b, err := nodeGet(ctx, http.MethodPost, nodeURL+"/"+what)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// sentTimes reads the heads node's send times: number → unix ns.
func sentTimes(ctx context.Context, nodeURL string) (map[uint64]int64, error) {
	b, err := nodeGet(ctx, http.MethodGet, nodeURL+"/sent")
	if err != nil {
		return nil, err
	}
	out := map[uint64]int64{}
	for line := range strings.Lines(string(b)) {
		var n uint64
		var at int64
		if _, err := fmt.Sscan(line, &n, &at); err != nil {
			return nil, fmt.Errorf("/sent: %q: %w", line, err)
		}
		out[n] = at
	}
	return out, nil
}

func nodeGet(ctx context.Context, method, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s %s: HTTP %d: %.200s", method, u, resp.StatusCode, b)
	}
	return b, err
}

// rss is a process's resident memory in bytes (VmRSS).
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// userHZ is the unit of /proc/<pid>/stat's times, fixed at 100 by the
// kernel's ABI.
const userHZ = 100

// cpuTime is a process's user and system CPU time so far, all threads.
func cpuTime(pid int) (time.Duration, error) {
	user, sys, err := cpuTimes(pid)
	return user + sys, err
}

// cpuTimes is a process's user and system CPU time so far, apart.
func cpuTimes(pid int) (user, sys time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name, in parentheses, may hold spaces; fields count
	// from after it: state is field 3, utime 14, stime 15.
	_, rest, ok := bytes.Cut(b, []byte(") "))
	f := strings.Fields(string(rest))
	if !ok || len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %.100s", pid, b)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	return time.Duration(ut) * time.Second / userHZ, time.Duration(st) * time.Second / userHZ, nil
}

// selfCPU is this process's user and system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pct is the q-quantile of ds by nearest rank; 0 when empty.
func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
