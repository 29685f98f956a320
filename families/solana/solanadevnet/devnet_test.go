package solanadevnet

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/klauspost/compress/zstd.(*blockDec).startDecoder"))
}

// testConfig is a fast devnet with traffic.
func testConfig() Config {
	return Config{SlotPeriod: 20 * time.Millisecond, Traffic: true, Seed: 7, SlotsPerEpoch: 32, ConfirmDepth: 2, FinalizeDepth: 8, KeepSlots: 400}
}

// start starts a devnet and returns it with a solana-go client.
func start(t *testing.T, cfg Config) (*Devnet, *rpc.Client) {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	c := rpc.New(d.HTTPURL())
	t.Cleanup(func() { c.Close() })
	return d, c
}

// waitCtx bounds a wait generously; nothing asserts on timing.
func waitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// rpcCode extracts a JSON-RPC error code from a solana-go client error.
func rpcCode(err error) (int, string) {
	var e *jsonrpc.RPCError
	if errors.As(err, &e) {
		return e.Code, e.Message
	}
	return 0, ""
}

// rawCall posts a JSON-RPC call and returns the raw result or error.
func rawCall(t *testing.T, c *rpc.Client, method string, params ...any) (json.RawMessage, *jsonrpc.RPCError) {
	t.Helper()
	var out json.RawMessage
	err := c.RPCCallForInto(context.Background(), &out, method, params)
	if err != nil {
		var e *jsonrpc.RPCError
		if errors.As(err, &e) {
			return nil, e
		}
		t.Fatalf("%s: %v", method, err)
	}
	return out, nil
}

// finalizedBlockWith waits for a finalized block holding a transaction for
// which pred holds, and returns its slot.
func finalizedBlockWith(t *testing.T, d *Devnet, pred func(r *txRecord) bool) uint64 {
	t.Helper()
	ctx := waitCtx(t)
	for {
		d.mu.RLock()
		for s := d.led.first; s <= d.led.root.Slot; s++ {
			if b := d.led.blocks[s]; b != nil {
				for _, r := range b.Txs {
					if pred(r) {
						d.mu.RUnlock()
						return s
					}
				}
			}
		}
		next := d.led.root.Slot + 1
		d.mu.RUnlock()
		if err := d.WaitForSlot(ctx, "finalized", next); err != nil {
			t.Fatal("no finalized block with the transaction wanted:", err)
		}
	}
}

func isV0(r *txRecord) bool { return r.tx.Message.IsVersioned() }

func hasProgram(p solana.PublicKey) func(r *txRecord) bool {
	return func(r *txRecord) bool {
		for _, k := range r.tx.Message.AccountKeys {
			if k == p {
				return true
			}
		}
		return false
	}
}

func TestNewValidates(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"bad listen", Config{Listen: "nope"}, "Listen"},
		{"negative period", Config{SlotPeriod: -1}, "SlotPeriod"},
		{"keep below finalize", Config{KeepSlots: 10}, "KeepSlots"},
		{"confirm above finalize", Config{ConfirmDepth: 40}, "ConfirmDepth"},
		{"skip rate 1", Config{SkipRate: 1}, "SkipRate"},
		{"tiny epoch", Config{SlotsPerEpoch: 2}, "SlotsPerEpoch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
	d, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d.HTTPURL() != "" || d.Close() != nil {
		t.Fatal("a devnet that was never started has no URL and closes cleanly")
	}
}
