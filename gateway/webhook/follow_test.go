package webhook

import (
	"fmt"
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/store"
)

// follow places block events on the sent chain: the next block is taken
// as is; one seen before is a duplicate; a block at or below the tip, or
// whose parent is not the tip, takes back the blocks it replaces, newest
// first, a silent one included but marked quiet; a block that does not
// link to what is left (the stream skipped blocks: after a reorg, the new
// branch's head alone) is a gap, and nothing is sent for it.
func TestFollow(t *testing.T) {
	b := func(n int64, hash, parent string) store.BlockRef {
		return store.BlockRef{Number: n, Hash: hash, ParentHash: parent}
	}
	chain := []store.BlockRef{b(1, "a1", "a0"), b(2, "a2", "a1"), b(3, "a3", "a2")}
	for _, c := range []struct {
		name    string
		sent    []store.BlockRef
		ev      portico.WebhookEvent
		want    string // the events out, as "hash" or "-hash" for removed
		dup     bool
		gap     bool
		tipHash string
	}{
		{"next", chain, portico.WebhookEvent{Number: 4, Hash: "a4", ParentHash: "a3"}, "a4", false, false, "a4"},
		{"first", nil, portico.WebhookEvent{Number: 9, Hash: "x9", ParentHash: "x8"}, "x9", false, false, "x9"},
		{"seen", chain, portico.WebhookEvent{Number: 2, Hash: "a2", ParentHash: "a1"}, "", true, false, "a3"},
		{"same height", chain, portico.WebhookEvent{Number: 3, Hash: "b3", ParentHash: "a2"}, "-a3 b3", false, false, "b3"},
		{"two back", chain, portico.WebhookEvent{Number: 2, Hash: "b2", ParentHash: "a1"}, "-a3 -a2 b2", false, false, "b2"},
		{"new branch head alone", chain, portico.WebhookEvent{Number: 4, Hash: "b4", ParentHash: "b3"}, "", false, true, ""},
		{"gap", chain, portico.WebhookEvent{Number: 6, Hash: "a6", ParentHash: "a5"}, "", false, true, ""},
		{"silent tip", []store.BlockRef{b(1, "a1", "a0"), {Number: 2, Hash: "a2", ParentHash: "a1", Silent: true}},
			portico.WebhookEvent{Number: 2, Hash: "b2", ParentHash: "a1"}, "-a2(quiet) b2", false, false, "b2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := &worker{sent: append([]store.BlockRef(nil), c.sent...)}
			out, dup, gap := k.follow(c.ev)
			got := ""
			for i, e := range out {
				if i > 0 {
					got += " "
				}
				if e.Removed {
					got += "-"
				}
				got += e.Hash
				if e.Quiet {
					got += "(quiet)"
				}
			}
			if got != c.want || dup != c.dup || gap != c.gap {
				t.Fatalf("follow = %q dup %v gap %v, want %q dup %v gap %v", got, dup, gap, c.want, c.dup, c.gap)
			}
			if gap {
				return // k.sent is read again from the store
			}
			if tip := k.sent[len(k.sent)-1].Hash; tip != c.tipHash {
				t.Fatalf("tip %s, want %s (%s)", tip, c.tipHash, fmt.Sprint(k.sent))
			}
		})
	}
}

// resumePoint: after the last block sent; for logs, after the one
// before it, whose logs were all written.
func TestResumePoint(t *testing.T) {
	sent := []store.BlockRef{{Number: 1, Hash: "a1"}, {Number: 2, Hash: "a2"}}
	for _, c := range []struct {
		event string
		sent  []store.BlockRef
		want  string
	}{
		{EventNewHeads, nil, ""},
		{EventNewHeads, sent, "a2"},
		{EventAddress, sent, "a2"},
		{EventLogs, sent, "a1"},
		{EventLogs, sent[:1], "a1"},
	} {
		k := &worker{w: store.Webhook{WebhookSpec: store.WebhookSpec{Event: c.event}}, sent: c.sent}
		if got := k.resumePoint(); got != c.want {
			t.Errorf("%s after %d blocks: %q, want %q", c.event, len(c.sent), got, c.want)
		}
	}
}

// The delivery id is the same for the same event and differs for its
// removal and for another item of the block.
func TestDeliveryID(t *testing.T) {
	ev := portico.WebhookEvent{Number: 1, Hash: "0xa", Item: "0x0"}
	rm := ev
	rm.Removed = true
	other := ev
	other.Item = "0x1"
	if deliveryID("wh", ev) != deliveryID("wh", ev) || deliveryID("wh", ev) == deliveryID("wh", rm) ||
		deliveryID("wh", ev) == deliveryID("wh", other) || deliveryID("wh", ev) == deliveryID("wh2", ev) {
		t.Fatal("delivery ids")
	}
}
