package deploy

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The ready lines of `portico serve` on its built-in networks, as
// cmd/portico/readme_test.go reads them: the shared listener's line, then
// one line per network in config order, the rollup's last.
var (
	sharedReadyRE  = regexp.MustCompile(`(?m)^portico ready on (\S+) `)
	networkReadyRE = regexp.MustCompile(`(?m)^(solana-devnet|evm-devnet|starknet-devnet) +(http://\S+)`)
	lastReadyRE    = regexp.MustCompile(`(?m)^starknet-devnet +http://\S+`)
)

// served is a `portico serve` process that printed its ready lines.
type served struct {
	cmd      *exec.Cmd
	shared   string            // host:port of the shared listener
	networks map[string]string // network name to its HTTP URL with the key
	out      *lines
	done     chan struct{}
	err      error // of Wait, once done is closed
}

// lines collects a process's output and says when a pattern appears.
type lines struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newLines() *lines { return &lines{changed: make(chan struct{})} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

// snapshot returns the text so far and a channel closed on the next write.
func (l *lines) snapshot() (string, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String(), l.changed
}

func (l *lines) String() string { s, _ := l.snapshot(); return s }

// startServe starts cmd (a `portico serve` on the built-in networks, stdout
// and stderr not set) and waits for its last ready line, or for it to exit.
// The command's context bounds the wait.
func startServe(t *testing.T, cmd *exec.Cmd) *served {
	t.Helper()
	s := &served{cmd: cmd, out: newLines(), done: make(chan struct{}), networks: map[string]string{}}
	stderr := newLines()
	cmd.Stdout = s.out
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
	})
	for {
		text, changed := s.out.snapshot()
		if lastReadyRE.MatchString(text) {
			break
		}
		select {
		case <-changed:
		case <-s.done:
			t.Fatalf("%v exited before its ready lines: %v\nstdout:\n%s\nstderr:\n%s", cmd.Args, s.err, s.out, stderr)
		}
	}
	text := s.out.String()
	s.shared = sharedReadyRE.FindStringSubmatch(text)[1]
	for _, m := range networkReadyRE.FindAllStringSubmatch(text, -1) {
		s.networks[m[1]] = m[2]
	}
	if len(s.networks) != 3 {
		t.Fatalf("ready lines for %d networks:\n%s", len(s.networks), text)
	}
	return s
}

// checkServes probes the shared listener as an orchestrator would and makes
// one call through the gateway to the EVM devnet.
func (s *served) checkServes(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path string) (int, string) {
		resp, err := client.Get("http://" + s.shared + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}
	code, body := get("/readyz")
	var ready struct {
		Ready  bool              `json:"ready"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal([]byte(body), &ready); code != http.StatusOK || err != nil || !ready.Ready {
		t.Errorf("/readyz: %d %s (%v)", code, body, err)
	}
	resp, err := client.Post(s.networks["evm-devnet"], "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var call struct {
		Result string          `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&call); err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(call.Result, "0x") {
		t.Errorf("eth_chainId through the gateway: %d %+v (%v)", resp.StatusCode, call, err)
	}
}

// stop sends SIGTERM, as an orchestrator does, and wants exit status 0.
func (s *served) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-s.done
	if s.err != nil {
		t.Errorf("portico serve after SIGTERM: %v\n%s", s.err, s.out)
	}
}

// elfStatic fails for an ELF file with a program interpreter or needed
// shared libraries.
func elfStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s has a program interpreter: not static", path)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("%s needs shared libraries %v: not static", path, libs)
	}
	return nil
}
