package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alecthomas/kong"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/porticohq/portico/authd/keynet"
	"github.com/porticohq/portico/authd/keynet/sss"
	"github.com/porticohq/portico/internal/testsvc"
)

// testIssuer serves a JWK set on 127.0.0.1 and signs id tokens with it.
type testIssuer struct {
	t   *testing.T
	key *rsa.PrivateKey
	srv *httptest.Server
	// issued are the tokens signed so far: none may reach a node's log.
	issued []string
}

const (
	testIss = "https://issuer.portico.test"
	testAud = "portico-app"
)

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &testIssuer{t: t, key: k}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k1", Use: "sig", Algorithm: "RS256"}}})
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(set)
	}))
	t.Cleanup(is.srv.Close)
	return is
}

// token signs a fresh token (a random nonce makes each one unique: a node
// serves a token once) with claims over the defaults.
func (is *testIssuer) token(key *rsa.PrivateKey, claims map[string]any) string {
	is.t.Helper()
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	c := map[string]any{"iss": testIss, "aud": testAud, "exp": time.Now().Add(time.Hour).Unix(),
		"iat": time.Now().Unix(), "nonce": hex.EncodeToString(nonce)}
	for k, v := range claims {
		c[k] = v
	}
	payload, _ := json.Marshal(c)
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		is.t.Fatal(err)
	}
	obj, err := s.Sign(payload)
	if err != nil {
		is.t.Fatal(err)
	}
	tok, _ := obj.CompactSerialize()
	is.issued = append(is.issued, tok)
	return tok
}

func (is *testIssuer) login(sub string) string { return is.token(is.key, map[string]any{"sub": sub}) }

// nodeProc is `portico auth node` running as its own OS process: this
// test binary re-executed as portico (see TestMain in crash_test.go).
type nodeProc struct {
	cmd    *exec.Cmd
	addr   string
	out    *lockedBuffer // stdout and stderr
	exited chan struct{}
}

var nodeReadyRE = regexp.MustCompile(`^portico auth node (\d+)/(\d+) \(network (\S+)\) listening on http://(\S+)/$`)

// startNodeProc starts a node process and waits for its ready line.
func startNodeProc(t *testing.T, args ...string) *nodeProc {
	t.Helper()
	p, err := tryStartNodeProc(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tryStartNodeProc is startNodeProc returning an error (with the node's
// output) if the node exits before it is ready.
func tryStartNodeProc(t *testing.T, args ...string) (*nodeProc, error) {
	t.Helper()
	argv, _ := json.Marshal(append([]string{"auth", "node"}, args...))
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PORTICO_TEST_RUN_MAIN="+string(argv))
	p := &nodeProc{cmd: cmd, out: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			_, _ = p.out.Write([]byte(sc.Text() + "\n"))
			if m := nodeReadyRE.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[4]
			}
		}
		close(ready)
		_ = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill(syscall.SIGKILL) })
	select {
	case addr, ok := <-ready:
		if !ok {
			return nil, fmt.Errorf("auth node %v exited before it was ready:\n%s", args, p.out)
		}
		p.addr = addr
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("auth node %v not ready after a minute:\n%s", args, p.out)
	}
	return p, nil
}

// kill signals the process and waits for it to exit.
func (p *nodeProc) kill(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// freePorts returns n ports free on 127.0.0.1 right now (the network file
// needs the nodes' URLs before they start).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// initNetwork runs `portico auth node init` for n nodes on free ports and
// returns the network file's path.
func initNetwork(t *testing.T, is *testIssuer, dir string, n int) string {
	t.Helper()
	args := []string{"auth", "node", "init", "--nodes", strconv.Itoa(n), "--dir", dir, "--jwks-url", is.srv.URL + "/jwks.json",
		"--issuer", testIss, "--audience", testAud, "--force"}
	for _, p := range freePorts(t, n) {
		args = append(args, "--url", fmt.Sprintf("http://127.0.0.1:%d/", p))
	}
	var out lockedBuffer
	if err := run(context.Background(), args, &out, io.Discard); err != nil {
		t.Fatalf("init: %v", err)
	}
	if !strings.Contains(out.String(), "portico auth node --config ") {
		t.Fatalf("init printed no start commands:\n%s", &out)
	}
	return filepath.Join(dir, "network.json")
}

// startNetwork inits a network of n nodes in dir and starts each node as
// a process with the flags args(i) adds. The free ports init picks may be
// taken by another program before a node listens on them; then it tries
// again on other ports.
func startNetwork(t *testing.T, is *testIssuer, dir string, n int, args func(i int) []string) (string, []*nodeProc) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		cfg := initNetwork(t, is, dir, n)
		procs := make([]*nodeProc, n+1)
		var err error
		for i := 1; i <= n && err == nil; i++ {
			procs[i], err = tryStartNodeProc(t, append([]string{"--config", cfg, "--index", strconv.Itoa(i)}, args(i)...)...)
		}
		if err == nil {
			return cfg, procs
		}
		for _, p := range procs {
			if p != nil {
				p.kill(syscall.SIGKILL)
			}
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
}

// TestAuthNodeProcesses runs the key network as five `portico auth node`
// processes over real HTTP and logs in against them with keynet.Client.
func TestAuthNodeProcesses(t *testing.T) {
	is := newTestIssuer(t)
	dir := t.TempDir()
	dataDir := func(i int) []string { return []string{"--data-dir", filepath.Join(dir, "node"+strconv.Itoa(i))} }
	cfg, procs := startNetwork(t, is, dir, 5, dataDir)
	file, err := keynet.LoadNetworkFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if want, _ := keynet.HostPort(file.Network.Nodes[i-1].URL); procs[i].addr != want {
			t.Fatalf("node %d listens on %s, its URL is %s", i, procs[i].addr, file.Network.Nodes[i-1].URL)
		}
	}
	c, err := keynet.NewClient(file.Network, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx := context.Background()

	// First login: the five processes run the DKG.
	start := time.Now()
	first, err := c.GetKey(ctx, "portico-jwt", "alice", is.login("alice"))
	if err != nil {
		t.Fatalf("first login: %v", err)
	}
	t.Logf("first login (commitments, DKG between 5 processes, shares): %v", time.Since(start))
	if len(first.Used) != 3 || len(first.Rejected) != 0 || !first.PrivateKey.PubKey().IsEqual(first.PublicKey) {
		t.Fatalf("first login: used %v, rejected %v", first.Used, first.Rejected)
	}

	// Later logins: the same key.
	var lat []time.Duration
	for range 10 {
		start := time.Now()
		k, err := c.GetKey(ctx, "portico-jwt", "alice", is.login("alice"))
		if err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		if k.PrivateKeyHex() != first.PrivateKeyHex() {
			t.Fatal("a second login gave another key")
		}
	}
	slices.Sort(lat)
	t.Logf("later logins: median %v, max %v (10 logins)", lat[len(lat)/2], lat[len(lat)-1])

	// More first logins, each its own DKG.
	var dkg []time.Duration
	for i := range 5 {
		sub := "user" + strconv.Itoa(i)
		start := time.Now()
		if _, err := c.GetKey(ctx, "portico-jwt", sub, is.login(sub)); err != nil {
			t.Fatal(err)
		}
		dkg = append(dkg, time.Since(start))
	}
	slices.Sort(dkg)
	t.Logf("first logins of 5 more users: median %v, max %v", dkg[len(dkg)/2], dkg[len(dkg)-1])

	// Any 3 of the 5 shares rebuild the key; 2 do not.
	shares, err := c.FetchShares(ctx, "portico-jwt", "alice", is.login("alice"))
	if err != nil || len(shares) != 5 {
		t.Fatalf("%d shares, %v", len(shares), err)
	}
	subsets := 0
	for a := range 5 {
		for b := a + 1; b < 5; b++ {
			if _, err := keynet.Reconstruct([]keynet.NodeShare{shares[a], shares[b]}, 3); !errors.Is(err, keynet.ErrNotEnoughShares) {
				t.Fatalf("2 shares: %v", err)
			}
			two, err := sss.Interpolate([]sss.Share{shares[a].Share, shares[b].Share})
			if err == nil && sss.PublicKeyOf(&two).IsEqual(first.PublicKey) {
				t.Fatal("2 shares gave the key")
			}
			for c := b + 1; c < 5; c++ {
				k, err := keynet.Reconstruct([]keynet.NodeShare{shares[a], shares[b], shares[c]}, 3)
				if err != nil || k.PrivateKeyHex() != first.PrivateKeyHex() {
					t.Fatalf("shares of nodes %d,%d,%d: %v", a+1, b+1, c+1, err)
				}
				subsets++
			}
		}
	}
	if subsets != 10 {
		t.Fatalf("%d subsets", subsets)
	}

	// Each node checks the token itself: a token of another issuer key,
	// for another audience or already served is refused by every node.
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	reused := is.login("alice")
	if _, err := c.GetKey(ctx, "portico-jwt", "alice", reused); err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"foreign key":   is.token(other, map[string]any{"sub": "alice"}),
		"wrong aud":     is.token(is.key, map[string]any{"sub": "alice", "aud": "another-app"}),
		"expired":       is.token(is.key, map[string]any{"sub": "alice", "exp": time.Now().Add(-time.Hour).Unix()}),
		"already used":  reused,
		"not a token":   "not.a.token",
		"other subject": is.login("bob"),
	} {
		_, err := c.GetKey(ctx, "portico-jwt", "alice", tok)
		var ne *keynet.NodesError
		if !errors.As(err, &ne) || ne.Step != keynet.MethodGetShare || len(ne.Errs) != 5 {
			t.Fatalf("%s: %v", name, err)
		}
		want := keynet.CodeBadToken
		if name == "already used" {
			want = keynet.CodeTokenReused
		}
		for i, e := range ne.Errs {
			var re *keynet.RPCError
			if !errors.As(e, &re) || re.Code != want {
				t.Fatalf("%s: node %d: %v, want code %d", name, i, e, want)
			}
		}
	}

	// A node stopped with SIGTERM stops cleanly and, restarted on its data
	// directory, still holds its share.
	procs[2].kill(syscall.SIGTERM)
	if code := procs[2].cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(procs[2].out.String(), "key node stopped") {
		t.Fatalf("node 2 exited %d on SIGTERM:\n%s", code, procs[2].out)
	}
	procs[2] = startNodeProc(t, append([]string{"--config", cfg, "--index", "2"}, dataDir(2)...)...)
	again, err := c.FetchShares(ctx, "portico-jwt", "alice", is.login("alice"))
	if err != nil || len(again) != 5 {
		t.Fatalf("after the restart: %d shares, %v", len(again), err)
	}
	if again[1].NodeIndex != 2 || !again[1].Share.Value.Equals(&shares[1].Share.Value) {
		t.Fatal("node 2 lost its share across a restart")
	}

	// Two nodes killed: the real network's client wants ⌊3n/4⌋+1 = 4
	// signed commitments and stops there; one content with t = 3 logs in
	// with the three that are left.
	procs[4].kill(syscall.SIGKILL)
	procs[5].kill(syscall.SIGKILL)
	if _, err := c.GetKey(ctx, "portico-jwt", "alice", is.login("alice")); !errors.Is(err, keynet.ErrNotEnoughCommitments) {
		t.Fatalf("3 nodes, default client: %v", err)
	}
	c3, err := c.WithCommitmentQuorum(3)
	if err != nil {
		t.Fatal(err)
	}
	k, err := c3.GetKey(ctx, "portico-jwt", "alice", is.login("alice"))
	if err != nil {
		t.Fatalf("3 nodes: %v", err)
	}
	if k.PrivateKeyHex() != first.PrivateKeyHex() || !slices.Equal(k.Used, []int{1, 2, 3}) {
		t.Fatalf("3 nodes: used %v, same key %v", k.Used, k.PrivateKeyHex() == first.PrivateKeyHex())
	}

	// Two nodes alone cannot give the key.
	procs[3].kill(syscall.SIGKILL)
	_, err = c3.GetKey(ctx, "portico-jwt", "alice", is.login("alice"))
	var ne *keynet.NodesError
	if !errors.As(err, &ne) || ne.Got != 2 {
		t.Fatalf("2 nodes: %v", err)
	}

	// No token, share or key reached a node's output.
	secrets := append(slices.Clone(is.issued), first.PrivateKeyHex())
	for _, s := range shares {
		b := s.Share.Value.Bytes()
		secrets = append(secrets, hex.EncodeToString(b[:]))
	}
	for i := 1; i <= 5; i++ {
		logs := procs[i].out.String()
		for _, s := range secrets {
			if strings.Contains(logs, s) {
				t.Fatalf("node %d logged a secret:\n%s", i, logs)
			}
		}
	}
}

// TestAuthNodeProcessesPostgres runs five node processes that share one
// PostgreSQL database.
func TestAuthNodeProcessesPostgres(t *testing.T) {
	dsn := testsvc.Postgres(t)
	is := newTestIssuer(t)
	dir := t.TempDir()
	cfg, _ := startNetwork(t, is, dir, 5, func(i int) []string {
		return []string{"--postgres", dsn, "--key-file", filepath.Join(dir, "node"+strconv.Itoa(i), keynet.NodeKeyFile)}
	})
	file, err := keynet.LoadNetworkFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := keynet.NewClient(file.Network, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	ctx := context.Background()
	first, err := c.GetKey(ctx, "portico-jwt", "dave", is.login("dave"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.GetKey(ctx, "portico-jwt", "dave", is.login("dave"))
	if err != nil || again.PrivateKeyHex() != first.PrivateKeyHex() {
		t.Fatalf("second login: %v", err)
	}
}

// TestAuthNodeCommandErrors checks what the command refuses before it
// serves, each error naming what to fix.
func TestAuthNodeCommandErrors(t *testing.T) {
	is := newTestIssuer(t)
	dir := t.TempDir()
	cfg := initNetwork(t, is, dir, 5)
	strange := filepath.Join(dir, "stranger.key")
	if err := run(context.Background(), []string{"auth", "node", "key", "--key-file", strange}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"network": {"name": "sapphire_devnet", "nodes": []}, "verifiers": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"index out of range", []string{"--config", cfg, "--index", "6", "--data-dir", dir}, "--index 6: not a node"},
		{"another node's key", []string{"--config", cfg, "--index", "1", "--data-dir", dir, "--key-file", strange}, "network.nodes[0].publicKey"},
		{"no storage", []string{"--config", cfg, "--index", "1"}, "--data-dir"},
		{"bad network file", []string{"--config", bad, "--index", "1", "--data-dir", dir}, "network.nodes: empty"},
		{"init over a network", []string{"init", "--dir", dir, "--jwks-url", "http://127.0.0.1:1/", "--issuer", "i", "--audience", "a"}, "--force"},
		{"init without a verifier", []string{"init", "--dir", t.TempDir()}, "--jwks-url"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := run(ctx, append([]string{"auth", "node"}, tc.args...), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestAuthNodeDocCommands keeps docs/auth-keys.md true: its init command
// runs and prints exactly the node commands the page shows, and every
// `portico auth node` command on the page parses.
func TestAuthNodeDocCommands(t *testing.T) {
	doc, err := os.ReadFile("../../docs/auth-keys.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	i := strings.Index(section, "### Running the key network as processes")
	if i < 0 {
		t.Fatal("docs/auth-keys.md has no section \"Running the key network as processes\"")
	}
	section = section[i:]
	if j := strings.Index(section, "\n## "); j >= 0 {
		section = section[:j]
	}
	var cmds [][]string
	for _, line := range strings.Split(strings.ReplaceAll(section, "\\\n", " "), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) > 3 && f[0] == "portico" && f[1] == "auth" && f[2] == "node" {
			cmds = append(cmds, f[1:])
		}
	}
	if len(cmds) < 7 {
		t.Fatalf("found %d commands in the section:\n%q", len(cmds), cmds)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	var nodes []string
	for _, args := range cmds {
		switch args[2] {
		case "init":
			var out lockedBuffer
			if err := run(context.Background(), args, &out, io.Discard); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			for _, l := range strings.Split(out.String(), "\n") {
				if l = strings.TrimSpace(l); strings.HasPrefix(l, "portico auth node --config") {
					nodes = append(nodes, strings.ReplaceAll(l, dir+string(filepath.Separator), ""))
				}
			}
		default:
			var cli CLI
			parser, err := kong.New(&cli, kong.Name("portico"), cliVars(),
				kong.Exit(func(int) { t.Fatalf("%v: kong exited", args) }))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := parser.Parse(args); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
		}
	}
	var documented []string
	for _, args := range cmds {
		if args[2] == "--config" {
			documented = append(documented, "portico "+strings.Join(args, " "))
		}
	}
	if !slices.Equal(nodes, documented) {
		t.Fatalf("init prints\n%s\nthe page shows\n%s", strings.Join(nodes, "\n"), strings.Join(documented, "\n"))
	}
}

// TestAuthNodeListenPortZero runs a node in-process on port 0: it prints
// its real address, serves, and stops when its context ends.
func TestAuthNodeListenPortZero(t *testing.T) {
	is := newTestIssuer(t)
	dir := t.TempDir()
	cfg := initNetwork(t, is, dir, 3)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"auth", "node", "--config", cfg, "--index", "3", "--listen", "127.0.0.1:0",
			"--data-dir", filepath.Join(dir, "node3")}, stdout, stderr)
	}()
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; {
		if m := nodeReadyRE.FindStringSubmatch(strings.TrimSpace(stdout.String())); m != nil {
			if m[1] != "3" || m[2] != "3" || m[3] != "sapphire_devnet" {
				t.Fatalf("ready line %q", stdout)
			}
			addr = m[4]
		}
		select {
		case err := <-done:
			t.Fatalf("exited: %v\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready:\n%s", stderr)
		}
	}
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("ready line shows port 0: %s", addr)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
	if !strings.Contains(stderr.String(), "listens on another port than its URL") {
		t.Errorf("no warning that the node is not at its URL:\n%s", stderr)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stop: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("did not stop")
	}
}

// TestAuthNodeNewKey: a node started on a data directory without a key
// makes one, prints its public key and, since the network file does not
// list it, refuses to serve, naming the entry to fix.
func TestAuthNodeNewKey(t *testing.T) {
	is := newTestIssuer(t)
	dir := t.TempDir()
	cfg := initNetwork(t, is, dir, 3)
	var out lockedBuffer
	fresh := filepath.Join(dir, "fresh")
	err := run(context.Background(), []string{"auth", "node", "--config", cfg, "--index", "2", "--data-dir", fresh}, &out, io.Discard)
	m := regexp.MustCompile(`made a new node key (\S+); its public key is (04[0-9a-f]{128})`).FindStringSubmatch(out.String())
	if m == nil || m[1] != filepath.Join(fresh, keynet.NodeKeyFile) {
		t.Fatalf("no new key printed:\n%s", &out)
	}
	if err == nil || !strings.Contains(err.Error(), "network.nodes[1].publicKey") || !strings.Contains(err.Error(), m[2]) {
		t.Fatalf("got %v, want a refusal naming network.nodes[1].publicKey and the new public key", err)
	}
	var key lockedBuffer
	if err := run(context.Background(), []string{"auth", "node", "key", "--data-dir", fresh}, &key, io.Discard); err != nil || strings.TrimSpace(key.String()) != m[2] {
		t.Fatalf("portico auth node key: %q, %v", &key, err)
	}
}
