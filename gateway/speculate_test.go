package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
)

// refusingMeter injects the fault Speculate exists to survive: it lets
// calls run while their charge is in flight, and the charge then fails.
type refusingMeter struct {
	speculate bool
	charges   atomic.Int64
}

func (m *refusingMeter) Charge(ctx context.Context, id apikey.Identity, items []metering.Item) (metering.Bill, error) {
	m.charges.Add(1)
	time.Sleep(20 * time.Millisecond) // the node answers first
	return metering.Bill{}, &portico.QuotaError{Limit: portico.QuotaDaily, Key: id.Name, Cost: 1, Daily: 100, ResetAt: time.Now().Add(time.Hour)}
}

func (m *refusingMeter) Refund(context.Context, *metering.Bill, metering.Item) error { return nil }

func (m *refusingMeter) Balance(context.Context, apikey.Identity) (metering.Bill, error) {
	return metering.Bill{}, nil
}

func (m *refusingMeter) Speculate(apikey.Identity, int64) bool { return m.speculate }

// TestSpeculativeChargeRefused: whether or not the call ran upstream while
// its charge was in flight, a refused charge means the caller gets -32005
// and never the node's answer.
func TestSpeculativeChargeRefused(t *testing.T) {
	for _, speculate := range []bool{false, true} {
		m := &refusingMeter{speculate: speculate}
		e := newEnv(t, options{meter: m})
		var forwarded atomic.Int64
		e.node.setReply(func(w http.ResponseWriter, req map[string]jsontext.Value) {
			forwarded.Add(1)
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req["id"]) + `,"result":"the node's answer"}`))
		})
		code, body := e.post(t, testKey, `{"jsonrpc":"2.0","id":7,"method":"real_echo","params":[1]}`)
		if code != http.StatusTooManyRequests || !strings.Contains(body, "-32005") || strings.Contains(body, "the node's answer") {
			t.Fatalf("speculate=%v: %d %s", speculate, code, body)
		}
		if m.charges.Load() != 1 {
			t.Fatalf("speculate=%v: %d charges", speculate, m.charges.Load())
		}
		if want := map[bool]int64{false: 0, true: 1}[speculate]; forwarded.Load() != want {
			t.Fatalf("speculate=%v: forwarded %d times, want %d", speculate, forwarded.Load(), want)
		}
	}
}
