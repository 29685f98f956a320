package solanadevnet

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go/rpc"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestNotificationGolden pins the exact bytes of one notification of each
// kind (testdata/notifications/*.json), so that their shapes stay agave's:
// a deterministic devnet (seed, clock, slots stepped by hand), one
// transfer, five slots. Run with -update to rewrite them.
func TestNotificationGolden(t *testing.T) {
	cfg := subConfig()
	cfg.Now = func() time.Time { return time.Unix(1_750_000_000, 0) }
	d, c := manual(t, cfg)
	w := dialRaw(t, d)
	ctx := context.Background()
	bob := testKey("bob").PublicKey().String()
	bh, err := c.GetLatestBlockhash(ctx, rpc.CommitmentProcessed)
	if err != nil {
		t.Fatal(err)
	}
	tx := signedTransfer(t, d.Faucet(), testKey("bob").PublicKey(), 4_000_000, bh.Value.Blockhash)
	blockOpts := `{"commitment":"processed","encoding":"json","transactionDetails":"full","showRewards":true,"maxSupportedTransactionVersion":0}`
	subs := []struct{ kind, method, params string }{
		{"slot", "slotSubscribe", `[]`},
		{"root", "rootSubscribe", `[]`},
		{"account", "accountSubscribe", `["` + bob + `",{"commitment":"processed","encoding":"base64"}]`},
		{"program", "programSubscribe", `["` + systemProgram.String() + `",{"commitment":"processed","encoding":"base58"}]`},
		{"logs", "logsSubscribe", `[{"mentions":["` + bob + `"]},{"commitment":"processed"}]`},
		{"signature", "signatureSubscribe", `["` + tx.Signatures[0].String() + `",{"commitment":"processed"}]`},
		{"block", "blockSubscribe", `["all",` + blockOpts + `]`},
	}
	for i, s := range subs {
		if id, e := w.call(s.method, s.params); e != nil || id != itoa(uint64(i)) {
			t.Fatalf("%s: %s %+v", s.method, id, e)
		}
	}
	waitJoined(t, d, len(subs))
	if _, err := c.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	steps(d, 5) // the transfer lands in slot 1, which slot 5 roots
	first := map[string]string{}
	for len(first) < len(subs) {
		msg := w.next()
		var m struct{ Method string }
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			t.Fatal(err)
		}
		kind := strings.TrimSuffix(m.Method, "Notification")
		if _, seen := first[kind]; !seen {
			first[kind] = msg
		}
	}
	for _, s := range subs {
		golden(t, filepath.Join("testdata", "notifications", s.kind+".json"), first[s.kind])
	}

	// The block inside blockNotification is getBlock's answer, byte for
	// byte.
	raw, rerr := rawCall(t, c, "getBlock", 1, jsonValue(strings.Replace(blockOpts, `"showRewards"`, `"rewards"`, 1)))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if !strings.Contains(first["block"], `"block":`+string(raw)+`,"err":null}`) {
		t.Fatalf("the block differs from getBlock's:\n%s\n%s", first["block"], raw)
	}
}

// golden compares got with a golden file, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if !bytes.Equal(bytes.TrimSuffix(want, []byte("\n")), []byte(got)) {
		t.Errorf("%s:\n got  %s\n want %s", path, got, want)
	}
}
