package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/porticohq/portico/internal/fixturenode"
	"github.com/porticohq/portico/internal/loadgen"
)

const benchKey = "bench0123456789abcdef0123456789ab"

// target is one request measured direct and through the gateway.
type target struct {
	name    string
	network string // network name in the portico config
	body    []byte
}

// setups are the values of --setup.
var setups = map[string]func(context.Context, *cli) error{
	"trivial":     trivial,
	"geth":        gethEmbedded,
	"geth-remote": geth,
	"metering":    meteringSetup,
	"leases":      leasesSetup,
	"fixed":       fixedSetup,
	"chaos":       chaosSetup,
	"observe":     observeSetup,
	"subs":        subsSetup,
	"guess":       guessSetup,
	"allowlist":   allowlistSetup,
	"compare":     compareSetup,
}

func run(ctx context.Context, c *cli) error {
	logs, err := os.CreateTemp("", "portico-bench-*.log")
	if err != nil {
		return err
	}
	defer logs.Close()
	c.logs = logs
	fmt.Fprintf(os.Stderr, "portico-bench: the log of portico and its nodes goes to %s\n", logs.Name())
	cache := "off"
	if c.Cache {
		cache = "on (64 MiB)"
	}
	fmt.Printf("portico-bench: %d CPUs, GOMAXPROCS %d, %s, concurrency %d, %d rounds of %s (+%s warm-up), result cache %s (fixed: both, chaos: off)\n\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), c.Concurrency, c.Rounds, c.Duration, c.Warmup, cache)
	header := sync.OnceFunc(func() {
		fmt.Println("| setup | request | direct req/s | gateway req/s | ratio | direct p50 | gateway p50 | added p50 | direct p99 | gateway p99 | added p99 |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	})
	for _, s := range c.Setup {
		if s == "trivial" || s == "geth" || s == "geth-remote" {
			header()
		}
		setup, ok := setups[s]
		if !ok {
			return fmt.Errorf("unknown setup %q", s)
		}
		if err := setup(ctx, c); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// trivialUpstream serves fixed bytes on a free port and prints its
// address: a recorded transaction, or a recorded 138 KB getBlock result.
// It runs as a child process of its own, as a real node does: an upstream
// inside the load generator's process would be woken by the same Go
// runtime that sends it the calls, which a node elsewhere never is.
func trivialUpstream(fixtures string) error {
	fx, err := fixturenode.New(fixtures)
	if err != nil {
		return err
	}
	block := fx.Block(fixturenode.SlotSolders, "json")
	blockResp := append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), block...), '}')
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if bytes.Contains(body, []byte(`"getBlock"`)) {
			w.Write(blockResp)
			return
		}
		w.Write(trivialTx)
	}))
}

var trivialTx = []byte(`{"jsonrpc":"2.0","id":1,"result":{"blockHash":"0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e","blockNumber":"0x1","from":"0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f","gas":"0x5208","gasPrice":"0x3b9aca00","hash":"0x5b4bf0e1e5b3a7ad3b6ccd8a9f5d2f0b1e7c8d9a0b1c2d3e4f5a6b7c8d9e0f1a","input":"0x","nonce":"0x0","to":"0x0000000000000000000000000000000000000000","transactionIndex":"0x0","value":"0x1","type":"0x0","v":"0x1b","r":"0x1","s":"0x1"}}`)

// trivial measures portico and a bare reverse proxy in front of the
// trivial upstream.
func trivial(ctx context.Context, c *cli) error {
	fx, err := fixturenode.New(c.Fixtures)
	if err != nil {
		return err
	}
	block := fx.Block(fixturenode.SlotSolders, "json")
	up, err := startChild(ctx, "trivial-upstream", c.Fixtures)
	if err != nil {
		return err
	}
	defer up.stop()
	upURL := up.urls["evm"]
	gw, err := startPortico(ctx, c, map[string]string{"evm": upURL, "solana": upURL})
	if err != nil {
		return err
	}
	defer gw.stop()
	targets := []target{
		txLookup("0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e"),
		{fmt.Sprintf("getBlock (%d KB result)", len(block)>>10), "solana", []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[%d,{"encoding":"json","maxSupportedTransactionVersion":0}]}`, fixturenode.SlotSolders))},
	}
	if err := measure(ctx, c, "trivial upstream", upURL, gw, targets); err != nil {
		return err
	}
	// The same calls through a bare httputil.ReverseProxy: what a
	// pass-through proxy on net/http costs in this setup, with no checks.
	rp, err := startChild(ctx, "reverse-proxy", upURL)
	if err != nil {
		return err
	}
	defer rp.stop()
	// Only the small call: httputil.ReverseProxy drops some 135 KB bodies
	// mid-copy when the load generator ends a round ("read error during
	// body copy"), which the load generator counts as errors.
	return measure(ctx, c, "trivial upstream, bare net/http reverse proxy", upURL, rp, targets[:1])
}

// meteringSetup measures the gateway with metering on (embedded, then
// Redis) against the same gateway with metering off, in one run, in front
// of the trivial upstream.
func meteringSetup(ctx context.Context, c *cli) error {
	txResp := []byte(`{"jsonrpc":"2.0","id":1,"result":{"blockHash":"0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e","blockNumber":"0x1","hash":"0x5b4bf0e1e5b3a7ad3b6ccd8a9f5d2f0b1e7c8d9a0b1c2d3e4f5a6b7c8d9e0f1a","transactionIndex":"0x0","type":"0x0"}}`)
	up, err := listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(txResp)
	}))
	if err != nil {
		return err
	}
	defer up.Close()
	upURL := "http://" + up.Addr().String()
	off, err := startPortico(ctx, c, map[string]string{"evm": upURL}, "metering: {disabled: true}")
	if err != nil {
		return err
	}
	defer off.stop()
	targets := []target{txLookup("0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e")}
	fmt.Println()
	fmt.Println("| metering | request | off req/s | on req/s | ratio | off p50 | on p50 | added p50 | off p99 | on p99 | added p99 |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, mode := range []struct{ name, yaml string }{
		{"embedded (memory counter, SQLite, journal)", ""},
		{"Redis on loopback (SQLite, journal)", fmt.Sprintf("metering: {redis: %q, redis_prefix: \"portico-bench-%d:\"}", c.Redis, time.Now().UnixNano())},
	} {
		on, err := startPortico(ctx, c, map[string]string{"evm": upURL}, mode.yaml)
		if err != nil {
			return err
		}
		err = measure(ctx, c, mode.name, off.urls["evm"], on, targets)
		on.stop()
		if err != nil {
			return err
		}
	}
	return nil
}

// reverseProxy serves httputil.ReverseProxy to target on a free port and
// prints its address.
func reverseProxy(target string) error {
	u, err := url.Parse(target)
	if err != nil {
		return err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 512}
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		// The load generator cancels calls in flight at the end of a
		// round; anything else is worth seeing.
		if !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "reverse proxy:", err)
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	return http.Serve(ln, rp)
}

// startChild runs this binary in one of its child modes (a reverse proxy,
// the trivial upstream, a fake node) in a process of its own and reads the
// address it prints.
func startChild(ctx context.Context, mode string, args ...string) (*process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, append([]string{mode}, args...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, urls: map[string]string{}}
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		p.stop()
		return nil, fmt.Errorf("%s did not start", mode)
	}
	p.addr = sc.Text()
	for _, n := range []string{"evm", "solana"} {
		p.urls[n] = "http://" + p.addr
	}
	go io.Copy(io.Discard, out)
	return p, nil
}

// gethEmbedded measures portico serve's own embedded go-ethereum devnet:
// direct is the devnet's loopback HTTP endpoint (in the portico process),
// the gateway reaches the same node in-process, as portico serve does.
func gethEmbedded(ctx context.Context, c *cli) error {
	gw, err := startPortico(ctx, c, map[string]string{"evm": embedded})
	if err != nil {
		return err
	}
	defer gw.stop()
	direct := gw.devnets["evm"]
	if direct == "" {
		return fmt.Errorf("portico did not print its devnet's URL")
	}
	hash, err := blockWithTransactions(ctx, direct)
	if err != nil {
		return err
	}
	targets := []target{txLookup(hash)}
	return measure(ctx, c, "embedded geth (in portico)", direct, gw, targets)
}

// geth runs the go-ethereum devnet as a node of its own (portico devnet
// evm, another process, with traffic) and puts portico in front of it as
// a remote node over HTTP.
func geth(ctx context.Context, c *cli) error {
	cmd := exec.CommandContext(ctx, c.Portico, "devnet", "evm", "--listen", "127.0.0.1:0")
	cmd.Stderr = c.logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	node := &process{cmd: cmd}
	defer node.stop()
	var nodeURL string
	sc := bufio.NewScanner(out)
	for nodeURL == "" && sc.Scan() {
		if m := devnetReady.FindStringSubmatch(sc.Text()); m != nil {
			nodeURL = m[1]
		}
	}
	if nodeURL == "" {
		return fmt.Errorf("portico devnet evm did not print its URL")
	}
	go io.Copy(io.Discard, out)
	hash, err := blockWithTransactions(ctx, nodeURL)
	if err != nil {
		return err
	}
	gw, err := startPortico(ctx, c, map[string]string{"evm": nodeURL})
	if err != nil {
		return err
	}
	defer gw.stop()
	targets := []target{txLookup(hash)}
	return measure(ctx, c, "geth in another process, over HTTP", nodeURL, gw, targets)
}

var devnetReady = regexp.MustCompile(`serving JSON-RPC on (http://\S+)`)

// blockWithTransactions waits for the devnet's traffic to land in a block
// and returns that block's hash.
func blockWithTransactions(ctx context.Context, nodeURL string) (string, error) {
	ec, err := ethclient.DialContext(ctx, nodeURL)
	if err != nil {
		return "", err
	}
	defer ec.Close()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		b, err := ec.BlockByNumber(ctx, nil)
		if err != nil {
			return "", err
		}
		if len(b.Transactions()) > 0 {
			return b.Hash().Hex(), nil
		}
	}
	return "", fmt.Errorf("the devnet sealed no block with transactions in a minute")
}

// txLookup is the EVM call every setup measures: the first transaction of
// a block, by the block's hash.
func txLookup(blockHash string) target {
	return target{"eth_getTransactionByBlockHashAndIndex", "evm",
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionByBlockHashAndIndex","params":["` + blockHash + `","0x0"]}`)}
}

// measure alternates direct and gateway rounds per target and prints the
// medians.
func measure(ctx context.Context, c *cli, setup, direct string, gw *process, targets []target) error {
	for _, t := range targets {
		var d, g []loadgen.Result
		for range c.Rounds {
			for _, side := range []struct {
				url string
				out *[]loadgen.Result
			}{{direct, &d}, {gw.urls[t.network], &g}} {
				r, err := loadgen.Run(ctx, loadgen.Config{
					URL: side.url, Body: t.body, Concurrency: c.Concurrency, Duration: c.Duration, Warmup: c.Warmup,
					Check: func(_ int, b []byte) bool { return bytes.Contains(b, []byte(`"result"`)) },
				})
				if err != nil {
					return err
				}
				if r.Errors > 0 {
					return fmt.Errorf("%s: %d errors at %s", t.name, r.Errors, side.url)
				}
				*side.out = append(*side.out, r)
			}
		}
		dm, gm := median(d), median(g)
		fmt.Printf("| %s | %s | %.0f | %.0f | %.2f× | %s | %s | %s | %s | %s | %s |\n", setup, t.name,
			dm.RPS, gm.RPS, gm.RPS/dm.RPS, ms(dm.P50), ms(gm.P50), ms(gm.P50-dm.P50), ms(dm.P99), ms(gm.P99), ms(gm.P99-dm.P99))
	}
	return nil
}

func median(rs []loadgen.Result) loadgen.Result {
	pick := func(f func(loadgen.Result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return loadgen.Result{
		RPS: pick(func(r loadgen.Result) float64 { return r.RPS }),
		P50: time.Duration(pick(func(r loadgen.Result) float64 { return float64(r.P50) })),
		P99: time.Duration(pick(func(r loadgen.Result) float64 { return float64(r.P99) })),
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

func listen(h http.Handler) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go http.Serve(ln, h)
	return ln, nil
}

// process is a running child process: portico, a peer gateway, or this
// binary as a node or a baseline proxy.
type process struct {
	cmd     *exec.Cmd
	urls    map[string]string // network name → HTTP URL (with the key, for portico)
	devnets map[string]string // network name → its embedded EVM devnet's own URL
	// addr is the address it serves on: portico's shared listener (the
	// admin API), a node's or a proxy's only one.
	addr string
	// dir is portico's config and data directory, removed by stop.
	dir string
}

// embedded as an upstream URL lets the network run its embedded devnet.
const embedded = "embedded"

var (
	readyLine  = regexp.MustCompile(`^(\S+)\s+(http://\S+/v3/\S+)\s`)
	devnetLine = regexp.MustCompile(`^(\S+): embedded go-ethereum devnet at (http://\S+),`)
	sharedLine = regexp.MustCompile(`^portico ready on (\S+) `)
)

// startPortico runs the portico binary with one network per upstream and
// waits for its ready lines; the result cache is on with --cache.
func startPortico(ctx context.Context, c *cli, upstreams map[string]string, extra ...string) (*process, error) {
	opts := porticoOptions{cache: c.Cache, extra: extra, pprof: c.Pprof}
	for _, fam := range []string{"evm", "solana"} {
		switch u, ok := upstreams[fam]; {
		case u == embedded:
			opts.networks = append(opts.networks, fmt.Sprintf("{name: %s, family: %s}", fam, fam))
		case ok:
			opts.networks = append(opts.networks, fmt.Sprintf("{name: %s, family: %s, upstreams: [{url: %q}]}", fam, fam, u))
		}
	}
	return startPorticoWith(ctx, c, opts)
}

// porticoOptions is the config of one portico process.
type porticoOptions struct {
	cache    bool     // the default result cache (64 MiB), else none
	extra    []string // top-level YAML lines
	networks []string // one YAML flow mapping per network
	log      string   // the log: flow mapping; default {level: warn}
	// noCoalesce sends every call to the node, even identical ones in
	// flight together.
	noCoalesce bool
	// stderr, when set, receives portico's log instead of the run's log
	// file.
	stderr io.Writer
	pprof  string // --pprof ADDR, when set
	// keyRules are more members of the bench key's flow mapping (its
	// allowlists), such as "allow_addresses: [...]".
	keyRules string
}

// startPorticoWith runs the portico binary with opts, key checks and
// metering on, and waits for its ready lines.
func startPorticoWith(ctx context.Context, c *cli, opts porticoOptions) (*process, error) {
	dir, err := os.MkdirTemp("", "portico-bench")
	if err != nil {
		return nil, err
	}
	var cfg strings.Builder
	logCfg := opts.log
	if logCfg == "" {
		logCfg = "{level: warn}"
	}
	rules := ""
	if opts.keyRules != "" {
		rules = ", " + opts.keyRules
	}
	fmt.Fprintf(&cfg, "listen: 127.0.0.1:0\nlog: %s\nkeys: [{name: bench, key: %s, daily_credits: 1000000000000000%s}]\n", logCfg, benchKey, rules)
	switch {
	case !opts.cache && opts.noCoalesce:
		fmt.Fprintf(&cfg, "cache: {max_bytes: 0, coalesce_disabled: true}\n")
	case !opts.cache:
		fmt.Fprintf(&cfg, "cache: {max_bytes: 0}\n")
	case opts.noCoalesce:
		fmt.Fprintf(&cfg, "cache: {coalesce_disabled: true}\n")
	}
	for _, e := range opts.extra {
		fmt.Fprintln(&cfg, e)
	}
	fmt.Fprintf(&cfg, "networks:\n")
	for _, n := range opts.networks {
		fmt.Fprintf(&cfg, "  - %s\n", n)
	}
	path := filepath.Join(dir, "portico.yaml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
		return nil, err
	}
	// No auth server: it is not measured, and its development warnings
	// would only add to the log.
	cmd := exec.CommandContext(ctx, c.Portico, "serve", "--config", path, "--data-dir", dir, "--no-auth")
	if opts.pprof != "" {
		cmd.Args = append(cmd.Args, "--pprof", opts.pprof)
	}
	cmd.Stderr = c.logs
	if opts.stderr != nil {
		cmd.Stderr = opts.stderr
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, urls: map[string]string{}, devnets: map[string]string{}, dir: dir}
	sc := bufio.NewScanner(out)
	for len(p.urls) < len(opts.networks) && sc.Scan() {
		if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
			p.urls[m[1]] = strings.Replace(m[2], "<API_KEY>", benchKey, 1)
		}
		if m := devnetLine.FindStringSubmatch(sc.Text()); m != nil {
			p.devnets[m[1]] = m[2]
		}
		if m := sharedLine.FindStringSubmatch(sc.Text()); m != nil {
			p.addr = m[1]
		}
	}
	if len(p.urls) < len(opts.networks) {
		p.stop()
		if f, ok := cmd.Stderr.(*os.File); ok {
			return nil, fmt.Errorf("portico did not print its ready lines (its log: %s)", f.Name())
		}
		return nil, fmt.Errorf("portico did not print its ready lines")
	}
	go io.Copy(io.Discard, out)
	return p, nil
}

func (p *process) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	p.cmd.Wait()
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}
