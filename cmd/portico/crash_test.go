package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/store"
)

// TestMain lets a test run this binary as `portico` in a child process
// (for kill -9), without building it again.
func TestMain(m *testing.M) {
	if args := os.Getenv("PORTICO_TEST_RUN_MAIN"); args != "" {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Args = append([]string{"portico"}, argv...)
		main()
		os.Exit(0)
	}
	code := m.Run()
	removeSharedBin()
	os.Exit(code)
}

// child is portico serve running as a separate process.
type child struct {
	cmd  *exec.Cmd
	addr string
	logs *lockedBuffer
}

var readyAddrRE = regexp.MustCompile(`portico ready on (\S+)`)

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	argv, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PORTICO_TEST_RUN_MAIN="+string(argv))
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, logs: logs}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := readyAddrRE.FindStringSubmatch(sc.Text()); m != nil {
				ready <- m[1]
			}
		}
		close(ready)
	}()
	select {
	case addr, ok := <-ready:
		if !ok {
			t.Fatalf("portico exited before it was ready:\n%s", logs)
		}
		c.addr = addr
	case <-time.After(time.Minute):
		t.Fatalf("portico not ready after a minute:\n%s", logs)
	}
	return c
}

// TestCrashLosesNoCredit kills portico with SIGKILL under load, restarts it
// on the same data directory and checks that no key and no settled credit
// was lost: every answered call is in the usage history, and at most the
// calls in flight at the kill were charged without an answer (the bound
// docs/metering.md gives).
func TestCrashLosesNoCredit(t *testing.T) {
	node := httptest.NewServer(&okNode{})
	defer node.Close()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "portico.yaml")
	cfg := fmt.Sprintf("networks:\n  - name: evm\n    family: evm\n    listen: \"off\"\n    upstreams:\n      - url: %s\nmetering:\n  flush_interval: 200ms\n", node.URL)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"keys", "create", "--data-dir", dir, "--name", "crash", "--daily-credits", "1000000000"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	key := lines[len(lines)-1]

	args := []string{"serve", "--config", cfgPath, "--data-dir", dir, "--listen", "127.0.0.1:0"}
	c := startChild(t, args...)
	url := "http://" + c.addr + "/v3/" + key
	const clients = 32
	var (
		answered atomic.Int64 // credits of calls answered 200
		calls    atomic.Int64
		wg       sync.WaitGroup
	)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	for range clients {
		wg.Go(func() {
			for i := 0; ; i++ {
				req, _ := http.NewRequest("POST", url, strings.NewReader(fmt.Sprintf(txByIndex, i)))
				req.Header.Set("Content-Type", "application/json")
				req.Host = "evm.localhost"
				resp, err := client.Do(req)
				if err != nil {
					return // the server is gone
				}
				_, rerr := io.ReadAll(resp.Body)
				resp.Body.Close()
				if rerr != nil {
					return
				}
				if resp.StatusCode != 200 {
					t.Errorf("status %d", resp.StatusCode)
					return
				}
				used, _ := strconv.ParseInt(resp.Header.Get("X-Credits-Used"), 10, 64)
				answered.Add(used)
				calls.Add(1)
			}
		})
	}
	// Let load run across a few flushes, then kill mid-stream.
	for calls.Load() < 3000 {
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.cmd.Wait()
	wg.Wait()

	// The restart replays the journal into the store.
	c2 := startChild(t, args...)
	req, _ := http.NewRequest("POST", "http://"+c2.addr+"/v3/"+key, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"eth_gasPrice"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Host = "evm.localhost"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the key does not work after the crash: %d\n%s", resp.StatusCode, c2.logs)
	}
	_ = c2.cmd.Process.Signal(syscall.SIGTERM)
	_ = c2.cmd.Wait()

	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, "portico.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	k, err := st.Get(context.Background(), "crash")
	if err != nil {
		t.Fatal(err)
	}
	day, _ := metering.BillingDay(time.Now())
	stored, err := st.Spent(context.Background(), k.ID, day)
	if err != nil {
		t.Fatal(err)
	}
	stored -= 80 // the eth_gasPrice after the restart
	inflight := int64(clients * 150)
	t.Logf("%d calls answered before the kill for %d credits; the store holds %d", calls.Load(), answered.Load(), stored)
	if stored < answered.Load() {
		t.Fatalf("lost settled credits: store holds %d, answered calls cost %d", stored, answered.Load())
	}
	if stored > answered.Load()+inflight {
		t.Fatalf("store holds %d, more than answered (%d) plus the calls in flight (%d)", stored, answered.Load(), inflight)
	}
}
