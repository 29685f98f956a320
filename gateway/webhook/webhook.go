// Package webhook delivers a key's webhooks (issue 38, docs/webhooks.md).
// A Manager takes the lease of each active webhook it can (one instance
// at a time delivers a webhook: the lease is a row of the store) and runs
// a worker for it. The worker reads the webhook's event from its network
// through a subscription in the process (Source: the gateway, as the
// webhook's key), resumed after the last block it was sent; writes each
// event to the webhook's outbox in the store before it is sent; and posts
// the outbox in order, signed, retried with backoff on any failure until
// RetryFor has passed, when the webhook is paused with the reason. A
// reorg is delivered as removed: true for what was sent before: a family
// whose events are blocks (newHeads) has its dropped blocks found here by
// parent hash; one whose events carry removed (logs) passes them on.
package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/metering/membudget"
	"github.com/porticohq/portico/store"
)

// Events a webhook can follow.
const (
	EventNewHeads = "newHeads"
	EventLogs     = "logs"
	EventAddress  = "address"
)

// Source is where webhooks read their events: the gateway, called in the
// process as the webhook's key.
type Source interface {
	// Stream subscribes on network as id with the subscribe call body
	// and calls each with every notification's result, in order, until
	// ctx ends or the stream does.
	Stream(ctx context.Context, id apikey.Identity, network string, body []byte, each func(result json.RawMessage) error) error
	// Call serves one JSON-RPC body on network as id.
	Call(ctx context.Context, id apikey.Identity, network string, body []byte) ([]byte, error)
	// KeyMemory is the key's memory budget (under the process's): the
	// outbox entries a worker holds are counted against it.
	KeyMemory(key string) *membudget.Budget
}

// Config configures a Manager.
type Config struct {
	// Store keeps the webhooks, their outboxes and leases; required.
	Store *store.Store
	// Source serves the events; required.
	Source Source
	// Families returns the family part of a network's webhooks; false
	// when the network is not served or its family has no webhooks.
	Families func(network string) (portico.Webhooks, bool)
	// Sender posts deliveries; nil makes one with SenderConfig{}.
	Sender *Sender
	// Instance names this instance as a lease owner; required, and
	// different for each instance sharing a store.
	Instance string
	// LeaseFor is how long a lease lasts unless renewed (it is renewed
	// every third of it); 0 means 15s. An instance that dies holds its
	// webhooks that long.
	LeaseFor time.Duration
	// RetryFor is how long a delivery is retried before its webhook is
	// paused; 0 means one hour.
	RetryFor time.Duration
	// MinBackoff and MaxBackoff bound the wait between attempts; 0 means
	// 500ms and 1 minute.
	MinBackoff, MaxBackoff time.Duration
	// Keep is how many sent blocks and acknowledged delivery ids each
	// webhook keeps to find reorgs and events seen again; 0 means 256.
	Keep int64
	// Logger receives the workers' events; keys and secrets never reach
	// it. Nil discards them.
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.Sender == nil {
		c.Sender = NewSender(SenderConfig{})
	}
	if c.LeaseFor <= 0 {
		c.LeaseFor = 15 * time.Second
	}
	if c.RetryFor <= 0 {
		c.RetryFor = time.Hour
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 500 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = time.Minute
	}
	if c.Keep <= 0 {
		c.Keep = 256
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// InputError is a webhook spec the manager refuses; Field names the field.
type InputError struct {
	Field  string
	Reason string
}

// Error names the field.
func (e *InputError) Error() string { return "webhook: " + e.Field + ": " + e.Reason }

// Check checks a webhook's spec before it is stored: a served network
// whose family has webhooks, an event and filter it takes, a URL of the
// right form (its address is checked at each delivery) and a secret.
func (m *Manager) Check(spec store.WebhookSpec) error {
	fam, ok := m.cfg.Families(spec.Network)
	return CheckSpec(spec, fam, ok)
}

// CheckSpec is Manager.Check with the network's family part given: fam,
// when ok.
func CheckSpec(spec store.WebhookSpec, fam portico.Webhooks, ok bool) error {
	if !ok {
		return &InputError{"network", fmt.Sprintf("%q is not served, or its family has no webhooks", spec.Network)}
	}
	switch spec.Event {
	case EventNewHeads, EventLogs, EventAddress:
	default:
		return &InputError{"event", "want newHeads, logs or address"}
	}
	if spec.Filter != "" && !json.Valid([]byte(spec.Filter)) {
		return &InputError{"filter", "is not JSON"}
	}
	if err := fam.Check(spec.Event, json.RawMessage(spec.Filter)); err != nil {
		return &InputError{"filter", err.Error()}
	}
	if err := CheckURL(spec.URL); err != nil {
		return &InputError{"url", err.Error()}
	}
	if len(spec.Secret) < 16 {
		return &InputError{"secret", "want at least 16 characters"}
	}
	return nil
}

// Payload is the JSON body of a delivery.
type Payload struct {
	Webhook string          `json:"webhook"`
	Network string          `json:"network"`
	Event   string          `json:"event"`
	Block   PayloadBlock    `json:"block"`
	Data    json.RawMessage `json:"data"`
}

// PayloadBlock is the block a delivery is about.
type PayloadBlock struct {
	Number     int64  `json:"number"`
	Hash       string `json:"hash"`
	ParentHash string `json:"parentHash,omitempty"`
	Removed    bool   `json:"removed"`
}

// deliveryID is a delivery's id: the same for the same event of the same
// webhook, so an event seen again after a restart is known.
func deliveryID(webhook string, ev portico.WebhookEvent) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%v\x00%s", webhook, ev.Hash, ev.Removed, ev.Item)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// delivery makes the outbox entry of ev.
func delivery(w *store.Webhook, ev portico.WebhookEvent) (store.Delivery, error) {
	data := ev.Data
	if data == nil {
		data = json.RawMessage("null")
	}
	body, err := json.Marshal(Payload{Webhook: w.ID, Network: w.Network, Event: w.Event,
		Block: PayloadBlock{Number: ev.Number, Hash: ev.Hash, ParentHash: ev.ParentHash, Removed: ev.Removed}, Data: data})
	if err != nil {
		return store.Delivery{}, err
	}
	if ev.Quiet {
		body = nil
	}
	return store.Delivery{ID: deliveryID(w.ID, ev), Removed: ev.Removed, Silent: ev.Quiet,
		Block: store.BlockRef{Number: ev.Number, Hash: ev.Hash, ParentHash: ev.ParentHash, Silent: ev.Quiet}, Body: body}, nil
}

// errPaused ends a worker whose webhook it paused.
var errPaused = errors.New("webhook: paused")
