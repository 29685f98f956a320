package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/internal/rpccompat"
)

const executionAPIs = "../../internal/testdata/execution-apis"

// TestRPCCompat replays the Ethereum conformance corpus (execution-apis'
// rpc-compat tests, testdata/execution-apis) through Portico's default
// configuration in front of the embedded go-ethereum devnet loaded with the
// corpus's chain (imported once; its head is safe and finalized, as the
// corpus's forkchoice says), and sends each request to the node directly
// as well:
//
//   - every answer through Portico is the node's, byte for byte (results
//     and errors), over HTTP and over a WebSocket;
//   - every case the node passes (judged as hive judges) passes through
//     Portico: eth_ and net_ cases on the default network, debug_ and
//     txpool_ cases on a network that enables those groups (a second
//     Portico in front of the same node);
//   - testing_ methods are refused with -32601, saying Portico answered;
//   - a second pass, answered from the cache where the rules allow,
//     changes nothing, and the cache did answer; a third, from a client
//     that puts spaces in its params, gets the same hits.
func TestRPCCompat(t *testing.T) {
	cases, err := rpccompat.Load(filepath.Join(executionAPIs, "tests"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := rpccompat.LoadSpec(filepath.Join(executionAPIs, "openrpc.json"))
	if err != nil {
		t.Fatal(err)
	}
	key := "test0123456789abcdef0123456789ab"
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "test", Key: key}}
	traffic := false
	cfg.Networks = []config.Network{{Name: "evm", Family: "evm", Devnet: config.Devnet{
		Genesis: filepath.Join(executionAPIs, "tests", "genesis.json"), ChainRLP: filepath.Join(executionAPIs, "tests", "chain.rlp"),
		BlockPeriod: time.Hour, Traffic: &traffic,
	}}}
	s := start(t, cfg)
	node := s.m.Devnets["evm"]
	debugCfg := config.DefaultConfig()
	debugCfg.Keys = cfg.Keys
	debugCfg.Networks = []config.Network{{Name: "evm-debug", Family: "evm", Upstreams: []config.Upstream{{Name: "devnet", URL: node.HTTPURL()}},
		Enable: []string{"debug", "txpool"}}}
	sd := start(t, debugCfg)
	urls := map[string]string{"evm": s.url(t, "evm"), "evm-debug": sd.url(t, "evm-debug")}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, s.wsURL(t, "evm"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)

	type answered struct {
		network string
		request []byte
		answer  []byte
	}
	var reads []answered
	passed, nodePassed := 0, 0
	for _, c := range cases {
		caseOK, nodeOK := true, true
		for i, ex := range c.Exchanges {
			network := "evm"
			switch ns, _, _ := strings.Cut(ex.Method, "_"); ns {
			case "debug", "txpool":
				network = "evm-debug"
			case "testing":
				_, via := postBytes(t, urls[network], ex.Request)
				if !bytes.Contains(via, []byte(`"code":-32601`)) || !bytes.Contains(via, []byte(`"data":{"source":"portico"}`)) {
					t.Errorf("%s: %s is served by default: %.200s", c.Name, ex.Method, via)
				}
				caseOK, nodeOK = false, false
				continue
			}
			write := ex.Method == "eth_sendRawTransaction"
			var direct []byte
			if !write { // a transaction is sent once, through Portico
				_, direct = postBytes(t, node.HTTPURL(), ex.Request)
				if c.Judge(spec, i, direct) != nil {
					nodeOK = false
				}
			}
			_, via := postBytes(t, urls[network], ex.Request)
			if err := c.Judge(spec, i, via); err != nil {
				caseOK = false
				if direct == nil || c.Judge(spec, i, direct) == nil {
					t.Errorf("%s: the node passes, Portico does not: %v\n got %.300s\nwant %.300s", c.Name, err, via, ex.Response)
				}
			}
			if direct != nil && !bytes.Equal(via, direct) {
				t.Errorf("%s: Portico's answer is not the node's\nportico %.300s\n   node %.300s", c.Name, via, direct)
			}
			if network == "evm" && !write {
				if err := ws.Write(ctx, websocket.MessageText, ex.Request); err != nil {
					t.Fatal(err)
				}
				_, msg, err := ws.Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(msg, via) {
					t.Errorf("%s: the WebSocket answer differs from HTTP's\n   ws %.300s\n http %.300s", c.Name, msg, via)
				}
			}
			if !write {
				reads = append(reads, answered{network, ex.Request, via})
			}
		}
		if caseOK {
			passed++
		}
		if nodeOK {
			nodePassed++
		}
	}
	t.Logf("%d cases: %d pass through Portico, %d pass on the node directly", len(cases), passed, nodePassed)

	// The second pass: the same reads, some from the cache.
	hits := 0
	for _, r := range reads {
		h, via := postBytes(t, urls[r.network], r.request)
		if h.Get("X-Cache") == "HIT" {
			hits++
		}
		if !bytes.Equal(via, r.answer) {
			t.Errorf("second pass of %s changed the answer\n first %.300s\nsecond %.300s", r.request, r.answer, via)
		}
	}
	if hits == 0 {
		t.Error("no answer of the second pass came from the cache")
	}
	t.Logf("second pass: %d of %d reads from the cache", hits, len(reads))

	// The third pass: the same reads from a client whose encoder puts a
	// space after every comma and colon. They share the cache's keys.
	spacedHits := 0
	for _, r := range reads {
		v := jsontext.Value(bytes.Clone(r.request))
		if err := v.Format(jsontext.SpaceAfterComma(true), jsontext.SpaceAfterColon(true)); err != nil {
			t.Fatal(err)
		}
		h, via := postBytes(t, urls[r.network], v)
		if h.Get("X-Cache") == "HIT" {
			spacedHits++
		}
		if !bytes.Equal(via, r.answer) {
			t.Errorf("spaced %s changed the answer\n first %.300s\nspaced %.300s", v, r.answer, via)
		}
	}
	if spacedHits != hits {
		t.Errorf("spaced params: %d of %d reads from the cache, compact ones %d", spacedHits, len(reads), hits)
	}

	// A checksummed address is the same account: the cache answers.
	balance := `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x7dcd17433742f4c0ca53122ab541d0ba67fc27df","0xa38f2a6f7d276298d8e7a9bfa28625e4dc8948021f5a7369d0a04571879e98d2"]}`
	_, first := postBytes(t, urls["evm"], []byte(balance))
	h, again := postBytes(t, urls["evm"], []byte(strings.Replace(balance, "0x7dcd17433742f4c0ca53122ab541d0ba67fc27df", "0x7dcd17433742f4C0cA53122Ab541D0Ba67fC27dF", 1)))
	if h.Get("X-Cache") != "HIT" || !bytes.Equal(first, again) || !bytes.Contains(first, []byte(`"result":"0x56"`)) {
		t.Errorf("checksummed address: %s %s, lower-case %s", h.Get("X-Cache"), again, first)
	}
}

// postBytes sends a body and returns the headers and the trimmed answer.
func postBytes(t *testing.T, url string, body []byte) (http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header, bytes.TrimSpace(b)
}
