package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/config"
)

// The README is the front door: TestREADME runs every command in its ```sh
// blocks, as written, right after `portico serve` prints its ready lines
// (the ones `make run` prints: the test's serve takes make run's flags).
// A block is either a curl session (lines that set or use variables and
// run curl or bin/portico ws, run together by bash, as a reader pastes
// them) or commands (`make …`, `bin/portico …`, run one by one, bin/portico
// being what the README's `make build` built). A line that is neither, and
// is not listed below, fails the test: a new README command must be made
// runnable here or listed with its reason.

// notRun are README commands deliberately not run, by the command as
// written (its trailing comment dropped), with the reason.
var notRun = map[string]string{
	// make test runs the whole suite, this test included.
	"make test": "runs every test, this one included",
	// The wallet example asks for the login code on the terminal.
	"bin/portico wallet --email you@example.com": "asks for a login code on the terminal; TestWalletEndToEnd runs it against the real login pages, with the code from an SMTP server",
}

// knownBroken are README commands that fail today, by the command as
// written, with where they are being fixed. They are still run, and must
// fail: once one works, the test says so, and it leaves this list. (It held
// `auth node init --nodes 5 --dir keynet`, which asked for a verifier the
// README did not give, until branch auth-house changed the README's line.)
var knownBroken = map[string]string{}

// readmeBlock is one ```sh block of the README.
type readmeBlock struct {
	line int // of the block's first command, 1-based
	text string
}

// commandLine is a command of a block: a line, with the lines it continues
// on (a trailing backslash) joined to it.
type commandLine struct {
	line int // where it starts, 1-based
	text string
}

// commands splits a block into its command lines.
func (b readmeBlock) commands() []commandLine {
	var out []commandLine
	cont := false
	for i, l := range strings.Split(strings.TrimRight(b.text, "\n"), "\n") {
		joined, more := strings.CutSuffix(l, "\\")
		switch {
		case cont:
			out[len(out)-1].text += " " + strings.TrimSpace(joined)
		case strings.TrimSpace(l) != "":
			out = append(out, commandLine{line: b.line + i, text: joined})
		}
		cont = more
	}
	return out
}

// readmeBlocks returns the ```sh blocks of a Markdown document.
func readmeBlocks(doc string) []readmeBlock {
	var (
		out []readmeBlock
		cur *readmeBlock
	)
	for i, l := range strings.Split(doc, "\n") {
		switch {
		case cur == nil && strings.TrimSpace(l) == "```sh":
			cur = &readmeBlock{line: i + 2}
		case cur != nil && strings.TrimSpace(l) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += l + "\n"
		}
	}
	return out
}

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// isSession reports whether a block is a curl session: its first line sets
// a variable or runs curl, or it uses a variable (the session's $KEY).
func (b readmeBlock) isSession() bool {
	first := strings.TrimSpace(strings.SplitN(b.text, "\n", 2)[0])
	return strings.HasPrefix(first, "curl ") || assignRE.MatchString(first) || strings.Contains(b.text, "$")
}

// shellWords splits a command line the way sh would for the simple lines
// the README has: words, single and double quotes, a trailing # comment,
// and one `> file`. Anything else sh would interpret (pipes, variables,
// command substitution, background) is refused, since these lines run
// in-process.
func shellWords(line string) (words []string, stdout string, err error) {
	var (
		cur    strings.Builder
		inWord bool
		quote  rune
	)
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '#' && !inWord:
			flush()
			goto done
		case strings.ContainsRune("|&;<$`(){}\\*?", r):
			return nil, "", fmt.Errorf("%q: %q needs a shell", line, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, "", fmt.Errorf("%q: unterminated quote", line)
	}
	flush()
done:
	for i, w := range words {
		if w == ">" {
			if i != len(words)-2 {
				return nil, "", fmt.Errorf("%q: > must name one file, at the end", line)
			}
			return words[:i], words[i+1], nil
		}
	}
	return words, "", nil
}

// needTools fails (PORTICO_TEST_STRICT=1) or skips when a program the README
// uses is not installed (scripts/install-test-deps.sh installs curl and jq).
func needTools(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			msg := n + " not found; the README uses it (scripts/install-test-deps.sh installs curl and jq)"
			if strict() {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// TestREADME runs the README's commands: see the comment at the top of the
// file. Beyond each command's own check, it checks the ready lines the
// README shows against serve's, the dashboard a ready line offers, the
// auth server's demo login in Chromium up to its code step, and that
// whatever the commands leave in a checkout is ignored by git.
func TestREADME(t *testing.T) {
	needTools(t, "bash", "curl", "jq", "make", "git")
	chromium := chromiumBinary(t)
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(string(doc))
	if len(blocks) < 5 {
		t.Fatalf("found %d ```sh blocks in README.md", len(blocks))
	}

	// The README's relative paths (portico-data, sol-data, keynet, …) are
	// the reader's working directory, a checkout: here a temporary one,
	// into which the repository files a command names (testdata/…) are
	// copied at the same path.
	dir := t.TempDir()
	t.Chdir(dir)
	// Servers the README starts on their default ports (8550 for auth
	// serve) listen on a free port instead, so that the test does not
	// collide with a portico the developer runs.
	t.Setenv("PORTICO_AUTH_LISTEN", "127.0.0.1:0")

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// `make build` first: the README's bin/portico lines, the curl
	// session's included, run what it built.
	var commands []commandLine
	built := false
	for _, b := range blocks {
		if b.isSession() {
			continue
		}
		for _, c := range b.commands() {
			if words, _, _ := shellWords(c.text); strings.Join(words, " ") == "make build" && !built {
				built = true
				t.Run(fmt.Sprintf("line %d make build", c.line), func(t *testing.T) {
					if err := makeBuild(ctx, t, repo); err != nil {
						t.Fatal(err)
					}
				})
				continue
			}
			commands = append(commands, c)
		}
	}
	if !built {
		t.Fatal("the README has no `make build`, which its bin/portico lines need")
	}

	// `make run` is `portico serve --data-dir portico-data
	// --auth-dev-log-codes --dev-dashboard`: the curl sessions run against
	// it in-process, as soon as its ready lines are out. (The make run
	// line itself runs below, under a terminal.)
	serve := startCommand(ctx, t, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", "portico-data", "--auth-dev-log-codes", "--dev-dashboard"})
	serve.wait(t, demoLineRE)
	gw := parseReady(t, serve.out.String())
	t.Run("ready lines", func(t *testing.T) { checkReadyLines(t, string(doc), serve.out.String()) })
	t.Run("dashboard", func(t *testing.T) { checkDevDashboard(t, serve.out.String()) })
	t.Run("demo login", func(t *testing.T) { checkDemoLogin(t, chromium, serve) })

	var session []readmeBlock
	for _, b := range blocks {
		if b.isSession() {
			session = append(session, b)
		}
	}
	t.Run("curl", func(t *testing.T) { runCurlSession(t, session, gw) })

	ran, seen := 1, map[string]bool{"make build": true}
	for _, c := range commands {
		words, out, err := shellWords(c.text)
		if err != nil {
			t.Errorf("README.md:%d: %v", c.line, err)
			continue
		}
		cmdline := strings.Join(words, " ")
		if out != "" {
			cmdline += " > " + out
		}
		name := fmt.Sprintf("line %d %s", c.line, cmdline)
		seen[cmdline] = true
		if reason, ok := notRun[cmdline]; ok {
			t.Logf("README.md:%d not run (%s): %s", c.line, reason, cmdline)
			continue
		}
		ran++
		t.Run(name, func(t *testing.T) {
			for _, w := range words {
				if strings.Contains(w, "testdata/") {
					copyFromRepo(t, repo, w)
				}
			}
			err := runReadmeCommand(ctx, t, repo, words, out, gw)
			if reason, broken := knownBroken[cmdline]; broken {
				if err == nil {
					t.Fatalf("listed as known broken (%s) but works now: take it off knownBroken", reason)
				}
				t.Logf("fails as known (%s): %v", reason, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	if ran < 8 {
		t.Errorf("ran %d README commands; the README has lost some, or the parser has", ran)
	}
	for cmd := range knownBroken {
		if !seen[cmd] {
			t.Errorf("knownBroken lists %q, which the README no longer has", cmd)
		}
	}
	for cmd := range notRun {
		if !seen[cmd] {
			t.Errorf("notRun lists %q, which the README no longer has", cmd)
		}
	}
	if err := serve.stop(t); err != nil {
		t.Error(err)
	}
	// Whatever the README's commands left in the checkout, git ignores.
	t.Run("gitignore", func(t *testing.T) { checkIgnored(t, repo, dir) })
}

// gatewayAddrs are the addresses a `portico serve` printed in its ready
// lines: the shared listener and each network's own.
type gatewayAddrs struct {
	shared   string            // host:port
	networks map[string]string // network name to its HTTP URL with the key
}

var sharedRE = regexp.MustCompile(`(?m)^portico ready on (\S+) `)

func parseReady(t *testing.T, out string) gatewayAddrs {
	t.Helper()
	g := gatewayAddrs{networks: map[string]string{}}
	m := sharedRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no ready line in:\n%s", out)
	}
	g.shared = m[1]
	for _, line := range strings.Split(out, "\n") {
		if m := readyRE.FindStringSubmatch(line); m != nil {
			g.networks[m[1]] = m[2]
		}
	}
	if len(g.networks) != 3 {
		t.Fatalf("ready lines for %d networks in:\n%s", len(g.networks), out)
	}
	return g
}

// readmePorts maps the ports the README shows (the defaults: the shared
// listener's, then each built-in network's own) to the ones this run got.
func readmePorts(t *testing.T, gw gatewayAddrs) map[string]string {
	t.Helper()
	// The built-in networks, in the order serve gives them ports.
	def := config.DefaultConfig()
	if err := checkConfig(&def); err != nil {
		t.Fatal(err)
	}
	port := func(addr string) string {
		_, p, err := net.SplitHostPort(strings.TrimPrefix(addr, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ports := map[string]string{port(def.Listen): port(gw.shared)}
	for i, n := range def.Networks {
		u := gw.networks[n.Name]
		if u == "" {
			t.Fatalf("no ready line for built-in network %s", n.Name)
		}
		ports[port(def.ListenAddr(i))] = port(strings.SplitN(strings.TrimPrefix(u, "http://"), "/", 2)[0])
	}
	return ports
}

// runCurlSession runs the README's curl blocks in one bash, in order, and
// checks each block's answer.
//
// Substitution: the README shows the default ports (8700 shared, 8701 to
// 8703 per network), where `make run` listens; this serve listens on free
// ports, so each ":<default port>" in the blocks becomes ":<port this run
// got>". Host names (`evm-devnet.localhost`), the key file
// (portico-data/dev-key, in the working directory) and everything else run
// as written.
func runCurlSession(t *testing.T, blocks []readmeBlock, gw gatewayAddrs) {
	ports := readmePorts(t, gw)
	portRE := regexp.MustCompile(`(?:127\.0\.0\.1|localhost):(\d+)\b`)
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, b := range blocks {
		text := portRE.ReplaceAllStringFunc(b.text, func(m string) string {
			host, port, _ := strings.Cut(m, ":")
			p, ok := ports[port]
			if !ok {
				t.Errorf("README.md:%d: port %s is not one `make run` listens on", b.line, port)
				return m
			}
			return host + ":" + p
		})
		fmt.Fprintf(&script, "printf '\\n@@block %d\\n'\n%s", i, text)
	}
	cmd := exec.Command("bash", "-c", script.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v\n%s\nscript:\n%s", err, stderr.String(), script.String())
	}
	answers := map[int]string{}
	for _, part := range strings.Split(string(out), "\n@@block ")[1:] {
		n, rest, _ := strings.Cut(part, "\n")
		i, _ := strconv.Atoi(n)
		answers[i] = strings.TrimSpace(rest)
	}
	methodRE := regexp.MustCompile(`"method":"(\w+)"`)
	checked := 0
	for i, b := range blocks {
		ms := methodRE.FindAllStringSubmatch(b.text, -1)
		if len(ms) == 0 {
			if answers[i] != "" {
				t.Errorf("README.md:%d: a block without a call printed %q", b.line, answers[i])
			}
			continue
		}
		method := ms[len(ms)-1][1] // a block's last call is the one it shows
		checked++
		check := func(a string) error { return checkAnswer(method, a) }
		if method == "eth_subscribe" {
			check = checkSubscription
		}
		if err := check(answers[i]); err != nil {
			t.Errorf("README.md:%d: %s: %v\nanswer: %.600s", b.line, method, err, answers[i])
		}
	}
	if checked < 5 {
		t.Errorf("checked %d curl answers; the README shows one per seed method", checked)
	}
}

// checkAnswer checks that a README call answered a JSON-RPC result with
// real content: what its section says the reader gets.
func checkAnswer(method, answer string) error {
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(answer), &resp); err != nil {
		return fmt.Errorf("not a JSON-RPC response: %v", err)
	}
	if resp.JSONRPC != "2.0" || resp.Error != nil || len(resp.Result) == 0 || string(resp.Result) == "null" {
		return errors.New("no result")
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		return fmt.Errorf("result is not an object: %v", err)
	}
	nonEmpty := func(fields ...string) error {
		for _, f := range fields {
			if v := string(r[f]); v == "" || v == "null" || v == "[]" || v == "{}" || v == `""` {
				return fmt.Errorf("result.%s is empty", f)
			}
		}
		return nil
	}
	switch method {
	case "eth_getProof":
		return nonEmpty("accountProof", "storageProof", "storageHash")
	case "eth_getTransactionByBlockHashAndIndex":
		if err := nonEmpty("hash", "blockHash"); err != nil {
			return err
		}
		if string(r["transactionIndex"]) != `"0x0"` {
			return fmt.Errorf("transactionIndex %s", r["transactionIndex"])
		}
		return nil
	case "getBlock":
		return nonEmpty("blockhash", "transactions")
	case "starknet_getEvents":
		return nonEmpty("events")
	case "starknet_getStateUpdate":
		return nonEmpty("block_hash", "new_root", "state_diff")
	}
	return fmt.Errorf("no check for %s: add one to checkAnswer", method)
}

// checkSubscription checks the README's subscription line: the answer
// with the subscription's id, then a newHeads notification per line.
func checkSubscription(answer string) error {
	lines := strings.Split(answer, "\n")
	if len(lines) != 3 {
		return fmt.Errorf("%d lines, want the answer and 2 notifications", len(lines))
	}
	var sub struct {
		Result string `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &sub); err != nil || !strings.HasPrefix(sub.Result, "0x") {
		return fmt.Errorf("answer %q: %v", lines[0], err)
	}
	for _, l := range lines[1:] {
		var n struct {
			Method string `json:"method"`
			Params struct {
				Subscription string `json:"subscription"`
				Result       struct {
					Number string `json:"number"`
					Hash   string `json:"hash"`
				} `json:"result"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(l), &n); err != nil || n.Method != "eth_subscription" || n.Params.Subscription != sub.Result ||
			n.Params.Result.Number == "" || n.Params.Result.Hash == "" {
			return fmt.Errorf("notification %q: %v", l, err)
		}
	}
	return nil
}

// runReadmeCommand runs one README command line and checks what it says it
// does. bin/portico commands run the binary `make build` built, in the
// checkout; servers until they answer, then stopped with SIGINT.
func runReadmeCommand(ctx context.Context, t *testing.T, repo string, words []string, stdout string, gw gatewayAddrs) error {
	switch {
	case len(words) >= 2 && words[0] == "make" && words[1] == "run":
		return makeRun(ctx, t, repo, words)
	case len(words) >= 1 && words[0] == "bin/portico":
	default:
		return fmt.Errorf("no way to run %q: run it here or list it in notRun", strings.Join(words, " "))
	}
	args := words[1:]
	if len(args) == 0 {
		return fmt.Errorf("%q names no command", strings.Join(words, " "))
	}
	sub := ""
	if len(args) > 1 {
		sub = args[1]
	}
	// Servers given a fixed --listen address get a free port instead, for
	// the same reason as PORTICO_AUTH_LISTEN.
	for i := range args {
		if args[i] == "--listen" && i+1 < len(args) {
			host, _, err := net.SplitHostPort(args[i+1])
			if err != nil {
				return err
			}
			args[i+1] = net.JoinHostPort(host, "0")
		}
	}
	switch {
	case args[0] == "devnet" && sub != "":
		p, err := startProcess(ctx, t, args)
		if err != nil {
			return err
		}
		m, err := p.wait(ctx, regexp.MustCompile(`portico devnet \w+: serving JSON-RPC on (http://\S+)`))
		if err != nil {
			return err
		}
		url := regexp.MustCompile(`serving JSON-RPC on (http://\S+)`).FindStringSubmatch(m)[1]
		method := map[string]string{"solana": "getSlot", "evm": "eth_blockNumber", "starknet": "starknet_blockNumber"}[sub]
		if status, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`); status != 200 || !strings.Contains(body, `"result"`) {
			return fmt.Errorf("%s answered %d %s", method, status, body)
		}
		return p.stop()
	case args[0] == "auth" && sub == "serve":
		p, err := startProcess(ctx, t, args)
		if err != nil {
			return err
		}
		m, err := p.wait(ctx, regexp.MustCompile(`serving the session server on (http://\S+)/`))
		if err != nil {
			return err
		}
		url := regexp.MustCompile(`(http://\S+)/`).FindStringSubmatch(m)[1]
		for _, path := range []string{"/", "/healthz"} {
			resp, err := http.Get(url + path)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("GET %s: %s", path, resp.Status)
			}
		}
		return p.stop()
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, "bin/portico", args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w\n%s", err, errOut.String())
	}
	if stdout != "" {
		if err := os.WriteFile(stdout, out.Bytes(), 0o600); err != nil {
			return err
		}
	}
	switch {
	case args[0] == "keys" && sub == "create":
		// "a key, alone on the last line; make run takes it at once"
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		key := lines[len(lines)-1]
		status, body := post(t, gw.networks["evm-devnet"][:strings.LastIndex(gw.networks["evm-devnet"], "/")+1]+key,
			`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`)
		if status != 200 || !strings.Contains(body, `"result":"0x`) {
			return fmt.Errorf("the new key %q on the running serve: %d %s", key, status, body)
		}
	case args[0] == "auth" && sub == "migrate":
		var v7 map[string]any
		if err := json.Unmarshal(out.Bytes(), &v7); err != nil || len(v7) == 0 {
			return fmt.Errorf("v7 config %q: %v", out.String(), err)
		}
	default:
		if out.Len() == 0 {
			return errors.New("printed nothing")
		}
	}
	return nil
}

// makeRun runs the README's `make run` under a terminal, as a reader does:
// it must say it is building before the build, print the ready lines (the
// dashboard's and the demo login's among them), and on Ctrl-C end with
// "stopped" and exit status 0.
//
// Substitution: `make run` keeps the binary in bin/ and its state in
// portico-data/ of the checkout and listens on the default ports; here the
// binary is the one the test's `make build` built (make's BIN), the state
// goes to the test's directory (DATA_DIR: not portico-data, which the
// test's own serve holds) and PORTICO_LISTEN=127.0.0.1:0 puts every
// listener on a free port.
func makeRun(ctx context.Context, t *testing.T, repo string, words []string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	args := append(words[1:], "BIN="+sharedBin(t), "DATA_DIR="+filepath.Join(wd, makeRunData), "GO="+goTool())
	cmd := exec.CommandContext(ctx, "make", args...)
	cmd.Dir = repo
	cmd.Env = append(readerEnv(), "PORTICO_LISTEN=127.0.0.1:0")
	term, err := startInTerminal(cmd)
	if err != nil {
		return err
	}
	defer term.Close()
	out := &watched{ch: make(chan struct{})}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		// Reading ends with EIO once every process has closed the
		// terminal.
		io.Copy(out, term)
	}()
	var werr error
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		werr = cmd.Wait()
	}()
	if _, err := out.waitFor(ctx, demoLineRE, exited); err != nil {
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("no ready lines: %v (exit: %v)\n%s", err, werr, out)
	}
	if _, err := term.Write([]byte{3}); err != nil { // Ctrl-C
		return err
	}
	<-exited
	<-copied
	text := strings.ReplaceAll(out.String(), "\r\n", "\n")
	if werr != nil {
		return fmt.Errorf("make run after Ctrl-C: %v\n%s", werr, text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if !strings.HasPrefix(lines[0], "building ") {
		return fmt.Errorf("make run does not say it is building first:\n%s", text)
	}
	if !devDashboardRE.MatchString(text) {
		return fmt.Errorf("make run printed no dashboard line with a dev admin token:\n%s", text)
	}
	if last := lines[len(lines)-1]; last != "stopped" {
		return fmt.Errorf("make run's last line after Ctrl-C is %q, want \"stopped\":\n%s", last, text)
	}
	return nil
}

// command is a portico command running in-process.
type command struct {
	args   []string
	out    *watched
	errOut *lockedBuffer
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// startCommand runs `portico args…` in-process until stop.
func startCommand(ctx context.Context, t *testing.T, args []string) *command {
	ctx, cancel := context.WithCancel(ctx)
	c := &command{args: args, out: &watched{ch: make(chan struct{})}, errOut: &lockedBuffer{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		c.err = run(ctx, args, c.out, c.errOut)
	}()
	t.Cleanup(func() { c.cancel(); <-c.done })
	return c
}

// wait returns the command's output once it matches re.
func (c *command) wait(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := c.out.waitFor(ctx, re, c.done)
	if err != nil {
		t.Fatalf("%v: %v (exit: %v)\n%s\n%s", c.args, err, c.err, c.out, c.errOut)
	}
	return out
}

// stop interrupts the command, as Ctrl-C does, and returns its result.
func (c *command) stop(t *testing.T) error {
	c.cancel()
	<-c.done
	if c.err != nil {
		return fmt.Errorf("%v: %w\n%s", c.args, c.err, c.errOut)
	}
	return nil
}

// watched is an output stream a test can wait on: each write wakes the
// waiters.
type watched struct {
	mu  sync.Mutex
	buf bytes.Buffer
	ch  chan struct{} // closed and replaced at each write
}

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	close(w.ch)
	w.ch = make(chan struct{})
	return n, err
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// waitFor returns the first match of re in the output, or fails when done
// is closed first (the command ended) or ctx ends. Nothing is timed: the
// caller's deadline is there so that a broken command fails instead of
// hanging.
func (w *watched) waitFor(ctx context.Context, re *regexp.Regexp, done <-chan struct{}) (string, error) {
	for {
		w.mu.Lock()
		out, ch := w.buf.String(), w.ch
		w.mu.Unlock()
		if m := re.FindString(out); m != "" {
			return m, nil
		}
		select {
		case <-ch:
		case <-done:
			return "", errors.New("ended before printing " + re.String())
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s: %w", re, ctx.Err())
		}
	}
}
