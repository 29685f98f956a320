package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/internal/fixturenode"
)

// TestMaxResultBytes: limits.max_result_bytes reaches the nodes. With a
// bound of 64 KiB a recorded 192 KB getBlock is refused with -32056 (and
// HTTP 502) naming the bound, while a 14 KB one passes.
func TestMaxResultBytes(t *testing.T) {
	fx, err := fixturenode.New(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	node := httptest.NewServer(fx)
	t.Cleanup(node.Close)
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "test", Key: "test0123456789abcdef0123456789ab"}}
	cfg.Limits.MaxResultBytes = 64 << 10
	cfg.Networks = []config.Network{{Name: "solana", Family: "solana", Upstreams: []config.Upstream{{URL: node.URL + "/secret-sol"}}}}
	s := start(t, cfg)
	status, body := post(t, s.url(t, "solana"), `{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[147078735,{"encoding":"jsonParsed","maxSupportedTransactionVersion":0,"rewards":false,"commitment":"finalized"}]}`)
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32056,"message":"result too large: the node's answer passes the limit of 65536 bytes"}}`
	if status != http.StatusBadGateway || strings.TrimSpace(body) != want {
		t.Fatalf("getBlock: %d %s", status, body)
	}
	// A smaller block (14 KB) passes, whole.
	status, body = post(t, s.url(t, "solana"), fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"getBlock","params":[%d,{"encoding":"json","maxSupportedTransactionVersion":0,"commitment":"finalized"}]}`, fixturenode.SlotVersioned))
	if res := fx.Block(fixturenode.SlotVersioned, "json"); status != http.StatusOK || !strings.Contains(body, string(res)) || len(res) < 8<<10 {
		t.Fatalf("a smaller block: %d %.200s", status, body)
	}
}
