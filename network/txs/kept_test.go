package txs

import (
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/metering/membudget"
)

// TestKeptBounds: a key keeps at most MaxKeyTxs transactions and
// MaxKeyBytes bytes, the memory budget bounds them all, a transaction is
// kept once, and letting one go gives its bytes back.
func TestKeptBounds(t *testing.T) {
	now := time.Unix(0, 0)
	params := jsontext.Value(`["0x` + strings.Repeat("ab", 100) + `"]`)
	size := int64(len(params)+len("h0")+len("send")) + keptOverhead
	tests := []struct {
		name    string
		limit   int64 // the process budget
		key     func(i int) string
		adds    int
		kept    int
		overKey bool
	}{
		{"one key up to its count", 0, func(int) string { return "a" }, MaxKeyTxs + 5, MaxKeyTxs, true},
		{"many keys, each under its bound", 0, func(i int) string { return string(rune('a' + i%26)) }, 52, 52, false},
		{"the memory budget", 10 * size, func(i int) string { return string(rune('a' + i%26)) }, 20, 10, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := membudget.New("process", tc.limit, nil)
			k := keptTxs{mem: membudget.New("transactions", 0, mem)}
			for i := range tc.adds {
				k.add(tc.key(i), "h"+string(rune('0'+i%10))+strings.Repeat("x", i/10), "send", params, now)
			}
			if k.len() != tc.kept {
				t.Errorf("kept %d, want %d", k.len(), tc.kept)
			}
			if kept, fresh := k.add(tc.key(0), "h0", "send", params, now); !kept || fresh {
				t.Errorf("a kept transaction again: kept %v fresh %v, want true false", kept, fresh)
			}
			_, expired := k.due(now.Add(KeepFor), time.Second)
			for _, h := range expired {
				k.remove(h)
			}
			if mem.Used() != 0 || k.len() != 0 {
				t.Errorf("after letting all go: %d bytes, %d kept", mem.Used(), k.len())
			}
		})
	}
}

// TestKeptDue: a transaction is due once it went unchecked for the
// resend period, and expired after KeepFor.
func TestKeptDue(t *testing.T) {
	now := time.Unix(0, 0)
	k := keptTxs{}
	k.add("a", "h1", "send", jsontext.Value(`["0x01"]`), now)
	if check, expired := k.due(now.Add(time.Second), 2*time.Second); len(check)+len(expired) != 0 {
		t.Errorf("due at once: %v %v", check, expired)
	}
	if check, _ := k.due(now.Add(3*time.Second), 2*time.Second); len(check) != 1 {
		t.Errorf("not due after the period: %v", check)
	}
	k.checked("h1", now.Add(3*time.Second), true)
	if check, _ := k.due(now.Add(4*time.Second), 2*time.Second); len(check) != 0 {
		t.Errorf("due again right after it was resent: %v", check)
	}
	if _, expired := k.due(now.Add(KeepFor), 2*time.Second); len(expired) != 1 {
		t.Errorf("not expired after KeepFor: %v", expired)
	}
}
