package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/porticohq/portico/store"
)

// The webhook contract: create, list, lease (one owner at a time, taken
// over once past its deadline), an outbox in order that drops an event
// seen again, acknowledgements that move the cursor, and a delete.
func TestWebhooks(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	clock := base
	now := func() time.Time { return clock }
	contract(t, "lifecycle", func(t *testing.T, s *store.Store) {
		clock = base
		if _, _, err := s.Create(ctx, store.KeySpec{Name: "alice", DailyCredits: 100}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CreateWebhook(ctx, "bob", store.WebhookSpec{Network: "n", Event: "newHeads", URL: "https://x", Secret: "s"}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("webhook of an unknown key: %v", err)
		}
		var in *store.InputError
		if _, err := s.CreateWebhook(ctx, "alice", store.WebhookSpec{Network: "n", Event: "newHeads", URL: "https://x"}); !errors.As(err, &in) || in.Field != "secret" {
			t.Fatalf("no secret: %v", err)
		}
		w, err := s.CreateWebhook(ctx, "alice", store.WebhookSpec{Network: "n", Event: "newHeads", URL: "https://x", Secret: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if w.State != store.WebhookActive || w.KeyName != "alice" || w.Secret != "s" || w.Cursor.Hash != "" {
			t.Fatalf("created %+v", w)
		}
		list, err := s.Webhooks(ctx, "alice")
		if err != nil || len(list) != 1 || list[0].ID != w.ID {
			t.Fatalf("list %+v %v", list, err)
		}

		// The lease: one owner until its deadline.
		for _, c := range []struct {
			owner string
			at    time.Time
			want  bool
		}{
			{"a", clock, true},
			{"b", clock, false},
			{"a", clock.Add(time.Second), true},
			{"b", clock.Add(time.Minute), true},
			{"a", clock.Add(time.Minute), false},
		} {
			clock = c.at
			got, err := s.LeaseWebhook(ctx, w.ID, c.owner, clock.Add(10*time.Second))
			if err != nil || got != c.want {
				t.Fatalf("lease %s at %v = %v %v, want %v", c.owner, c.at, got, err, c.want)
			}
		}
		// a lost it: it writes nothing.
		d := func(n int64, removed bool) store.Delivery {
			return store.Delivery{ID: fmt.Sprintf("d%d-%v", n, removed), Removed: removed,
				Block: store.BlockRef{Number: n, Hash: fmt.Sprintf("0x%02x", n), ParentHash: fmt.Sprintf("0x%02x", n-1)}, Body: []byte(`{"n":1}`)}
		}
		if _, err := s.Enqueue(ctx, w.ID, "a", []store.Delivery{d(1, false)}, 64); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("enqueue without the lease: %v", err)
		}
		added, err := s.Enqueue(ctx, w.ID, "b", []store.Delivery{d(1, false), d(2, false), d(3, false)}, 64)
		if err != nil || len(added) != 3 || added[2].Seq != 3 {
			t.Fatalf("enqueue: %+v %v", added, err)
		}
		// Seen again (a restart): left out; a reorg takes 3 back.
		added, err = s.Enqueue(ctx, w.ID, "b", []store.Delivery{d(2, false), d(3, false), d(3, true)}, 64)
		if err != nil || len(added) != 1 || added[0].Seq != 4 || !added[0].Removed {
			t.Fatalf("enqueue again: %+v %v", added, err)
		}
		sent, err := s.SentBlocks(ctx, w.ID)
		if err != nil || len(sent) != 2 || sent[1].Hash != "0x02" {
			t.Fatalf("sent blocks %+v %v", sent, err)
		}
		pending, err := s.Pending(ctx, w.ID, 10)
		if err != nil || len(pending) != 4 || string(pending[0].Body) != `{"n":1}` {
			t.Fatalf("pending %+v %v", pending, err)
		}
		if err := s.Ack(ctx, w.ID, "b", pending[0], 64); err != nil {
			t.Fatal(err)
		}
		if err := s.Ack(ctx, w.ID, "a", pending[1], 64); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("ack without the lease: %v", err)
		}
		pending, _ = s.Pending(ctx, w.ID, 10)
		w, _ = s.Webhook(ctx, w.ID)
		if len(pending) != 3 || pending[0].Seq != 2 || w.Cursor.Number != 1 || w.Delivered != 1 {
			t.Fatalf("after ack: pending %d, webhook %+v", len(pending), w)
		}
		// Acknowledged, the id is still known.
		if added, _ := s.Enqueue(ctx, w.ID, "b", []store.Delivery{d(1, false)}, 64); len(added) != 0 {
			t.Fatalf("acknowledged delivery enqueued again: %+v", added)
		}

		if err := s.SetWebhookState(ctx, w.ID, store.WebhookPaused, "receiver down"); err != nil {
			t.Fatal(err)
		}
		if ok, _ := s.LeaseWebhook(ctx, w.ID, "b", clock.Add(time.Hour)); ok {
			t.Fatal("a paused webhook was leased")
		}
		w, _ = s.Webhook(ctx, w.ID)
		if w.State != store.WebhookPaused || w.PausedReason != "receiver down" {
			t.Fatalf("paused: %+v", w)
		}
		if err := s.DeleteWebhook(ctx, "bob", w.ID); !errors.Is(err, store.ErrWebhookNotFound) {
			t.Fatalf("delete as another key: %v", err)
		}
		if err := s.DeleteWebhook(ctx, "alice", w.ID); err != nil {
			t.Fatal(err)
		}
		if list, _ := s.Webhooks(ctx, ""); len(list) != 0 {
			t.Fatalf("after delete: %+v", list)
		}
	}, store.WithClock(now))
}

// LeaseWebhooks renews an owner's leases and takes free or expired ones,
// at most take at a time.
func TestLeaseWebhooks(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	clock := base
	contract(t, "leases", func(t *testing.T, s *store.Store) {
		clock = base
		if _, _, err := s.Create(ctx, store.KeySpec{Name: "alice", DailyCredits: 100}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := s.CreateWebhook(ctx, "alice", store.WebhookSpec{Network: "n", Event: "newHeads", URL: "https://x", Secret: "s"}); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			owner string
			at    time.Duration
			take  int
			want  int
		}{
			{"a", 0, 2, 2},                        // two of three, until 10s
			{"b", time.Second, 5, 1},              // the one left, until 11s
			{"a", 2 * time.Second, 5, 2},          // renews its two, until 12s
			{"b", 11500 * time.Millisecond, 5, 1}, // its own expired at 11s: taken back; none of a's
			{"b", 13 * time.Second, 5, 3},         // a's expired at 12s
		} {
			clock = base.Add(c.at)
			ids, err := s.LeaseWebhooks(ctx, c.owner, clock.Add(10*time.Second), c.take)
			if err != nil || len(ids) != c.want {
				t.Fatalf("%s at %v: %v %v, want %d", c.owner, c.at, ids, err, c.want)
			}
		}
	}, store.WithClock(func() time.Time { return clock }))
}
