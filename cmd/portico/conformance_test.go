package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/config"
)

// TestEVMConformanceFixtures starts the embedded devnet from the Ethereum
// conformance suite's genesis and chain (54 blocks), and replays the
// suite's recorded requests through the gateway over HTTP and WebSocket:
// every answer must equal the one geth gave when the suite was recorded.
func TestEVMConformanceFixtures(t *testing.T) {
	evmDir := filepath.Join(fixtures, "evm")
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "test", Key: "test0123456789abcdef0123456789ab"}}
	traffic := false
	cfg.Networks = []config.Network{{Name: "evm", Family: "evm", Devnet: config.Devnet{
		Genesis: filepath.Join(evmDir, "genesis.json"), ChainRLP: filepath.Join(evmDir, "chain.rlp"),
		BlockPeriod: time.Hour, Traffic: &traffic,
	}}}
	s := start(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, s.wsURL(t, "evm"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)

	files, _ := filepath.Glob(filepath.Join(evmDir, "tests", "*", "*.io"))
	if len(files) < 10 {
		t.Fatalf("found %d fixtures", len(files))
	}
	for _, file := range files {
		name := filepath.Base(filepath.Dir(file)) + "/" + strings.TrimSuffix(filepath.Base(file), ".io")
		t.Run(name, func(t *testing.T) {
			for _, ex := range readIO(t, file) {
				_, got := post(t, s.url(t, "evm"), ex.request)
				if !sameJSON(t, got, ex.response) {
					t.Fatalf("http\nrequest %s\n got %.600s\nwant %.600s", ex.request, got, ex.response)
				}
				if err := ws.Write(ctx, websocket.MessageText, []byte(ex.request)); err != nil {
					t.Fatal(err)
				}
				_, msg, err := ws.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if string(msg) != got {
					t.Fatalf("websocket differs from http:\n ws %.300s\nhttp %.300s", msg, got)
				}
			}
		})
	}
}

type exchange struct{ request, response string }

// readIO reads a conformance file: ">> request" and "<< response" lines.
func readIO(t *testing.T, path string) []exchange {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []exchange
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ">> "):
			out = append(out, exchange{request: line[3:]})
		case strings.HasPrefix(line, "<< "):
			out[len(out)-1].response = line[3:]
		}
	}
	return out
}

// sameJSON compares two JSON texts as values.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	canon := func(s string) string {
		v := jsontext.Value(s)
		if err := v.Canonicalize(); err != nil {
			return "invalid: " + s
		}
		return string(v)
	}
	return canon(a) == canon(b)
}
