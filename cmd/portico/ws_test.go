package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/config"
)

// TestWSCommand: portico ws subscribes in one command: the answer with the
// subscription id, then notifications, then it stops at --count; bad
// arguments are refused with the argument named.
func TestWSCommand(t *testing.T) {
	cfg := config.DefaultConfig()
	cfg.Networks = []config.Network{{Name: "evm-devnet", Family: "evm", Devnet: config.Devnet{BlockPeriod: 200 * time.Millisecond}}}
	s := start(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	args := []string{"ws", s.wsURL(t, "evm-devnet"), `{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`, "--count", "3"}
	if err := run(ctx, args, &out, &errOut); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got:\n%s", out.String())
	}
	var answer struct {
		ID     int    `json:"id"`
		Result string `json:"result"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &answer); err != nil || answer.ID != 1 || !strings.HasPrefix(answer.Result, "0x") {
		t.Fatalf("answer %q: %v", lines[0], err)
	}
	for _, l := range lines[1:] {
		var n struct {
			Method string `json:"method"`
			Params struct {
				Subscription string `json:"subscription"`
				Result       struct {
					Number string `json:"number"`
				} `json:"result"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(l), &n); err != nil || n.Method != "eth_subscription" || n.Params.Subscription != answer.Result || n.Params.Result.Number == "" {
			t.Fatalf("notification %q: %v", l, err)
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ws", "http://127.0.0.1:1/ws"}, `ws: "http://127.0.0.1:1/ws" is not a ws:// or wss:// URL`},
		{[]string{"ws", s.wsURL(t, "evm-devnet"), "--count=-1"}, "ws: --count must not be negative"},
	} {
		if err := run(ctx, c.args, io.Discard, io.Discard); err == nil || err.Error() != c.want {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
