package webhook

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/store"
)

// noSource is a Source with nothing to stream: the tests here drive a
// worker's outbox by hand.
type noSource struct{}

func (noSource) Stream(context.Context, apikey.Identity, string, []byte, func(json.RawMessage) error) error {
	return nil
}
func (noSource) Call(context.Context, apikey.Identity, string, []byte) ([]byte, error) {
	return nil, nil
}
func (noSource) KeyMemory(string) *membudget.Budget { return nil }

// TestHandOverWhileReadingOutbox: a delivery written while the delivery
// goroutine reads the outbox (after the read, before it goes back to
// what the stream hands over in memory) is posted next; the deliveries
// the read found are not posted twice.
func TestHandOverWhileReadingOutbox(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "portico.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.Create(ctx, store.KeySpec{Name: "k", DailyCredits: 1000}); err != nil {
		t.Fatal(err)
	}
	w, err := st.CreateWebhook(ctx, "k", store.WebhookSpec{Network: "n", Event: EventNewHeads, URL: "https://example.com/hook", Secret: "s0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.LeaseWebhook(ctx, w.ID, "me", time.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatalf("lease: %v %v", ok, err)
	}
	m := &Manager{cfg: Config{Store: st, Source: noSource{}, Instance: "me", Keep: 64}, out: newOutbox(st)}
	stop := make(chan struct{})
	defer close(stop)
	go m.out.run(stop)
	k := &worker{m: m, w: w, wake: make(chan struct{}, 1), fromStore: true}
	block := func(n uint64) store.Delivery {
		h := "0x" + strconv.FormatUint(n, 16)
		return store.Delivery{ID: "d" + h, Block: store.BlockRef{Number: int64(n), Hash: h, ParentHash: "0x" + strconv.FormatUint(n-1, 16)}, Body: []byte(`{}`)}
	}
	if err := k.enqueue(ctx, []store.Delivery{block(1)}, nil); err != nil {
		t.Fatal(err)
	}
	// The outbox read finds block 1; block 2 is written right after it.
	k.readOutbox = func(ctx context.Context) ([]store.Delivery, error) {
		p, err := st.Pending(ctx, w.ID, pendingBatch)
		if err == nil {
			err = k.enqueue(ctx, []store.Delivery{block(2)}, nil)
		}
		return p, err
	}
	got, err := k.next(ctx)
	if err != nil || len(got) != 1 || got[0].Block.Number != 1 {
		t.Fatalf("the outbox read: %+v, %v; want block 1", got, err)
	}
	k.posted = got[0].Seq
	got, err = k.next(ctx)
	if err != nil || len(got) != 1 || got[0].Block.Number != 2 {
		t.Fatalf("after the read: %+v, %v; want block 2, once", got, err)
	}
	if got, _ = k.next(ctx); len(got) != 0 {
		t.Fatalf("then: %+v, want nothing", got)
	}
}
