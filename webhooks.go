package portico

import (
	"context"
	"encoding/json"
)

// Webhooks is a family's part of webhooks (issue 38, docs/webhooks.md):
// which events it serves, the subscribe call each is read through, and
// how a notification becomes the events a webhook delivers. Package
// webhook does the rest (the store, ordering, reorgs, retries) for every
// family alike.
type Webhooks interface {
	// Check checks an event's name and filter; its error names the field.
	Check(event string, filter json.RawMessage) error
	// Subscribe returns the JSON-RPC subscribe call of event with filter,
	// resuming after the block whose hash is resumeFrom ("" for live
	// only). PerBlock says that each notification is one block of the
	// served chain, whose reorgs package webhook finds by parent hash;
	// otherwise notifications carry their own removed flag (logs).
	Subscribe(event string, filter json.RawMessage, resumeFrom string) (body []byte, perBlock bool, err error)
	// Read turns one notification's result into the events to deliver
	// (none when it has nothing for the webhook); call serves a JSON-RPC
	// body on the webhook's network as its key, for events that need
	// more than the notification.
	Read(ctx context.Context, call WebhookCaller, event string, filter, result json.RawMessage) ([]WebhookEvent, error)
}

// WebhookCaller serves a JSON-RPC body and returns the answer.
type WebhookCaller func(ctx context.Context, body []byte) ([]byte, error)

// WebhookEvent is one event a webhook delivers: a block of the chain, or
// an item of it (a log), with its data.
type WebhookEvent struct {
	Number     int64
	Hash       string
	ParentHash string
	Removed    bool
	// Item tells apart the events of one block (a log's index); "" for a
	// block's one event.
	Item string
	Data json.RawMessage
	// Quiet marks a block event with nothing for the webhook (an address
	// without activity in it): it is followed, so that a reorg is seen,
	// but not delivered.
	Quiet bool
}
