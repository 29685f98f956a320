package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/gateway/webhook"
	"github.com/porticohq/portico/store"
)

// KeysWebhooksCmd manages a key's webhooks (docs/webhooks.md).
type KeysWebhooksCmd struct {
	Add    KeysWebhooksAddCmd    `cmd:"" help:"Add a webhook to a key; its id is printed alone on the last line."`
	List   KeysWebhooksListCmd   `cmd:"" help:"List a key's webhooks, their state and why they are paused."`
	Delete KeysWebhooksDeleteCmd `cmd:"" help:"Delete a webhook."`
	Resume KeysWebhooksResumeCmd `cmd:"" help:"Make a paused webhook active again; it goes on from where it stopped."`
}

// KeysWebhooksAddCmd adds a webhook.
type KeysWebhooksAddCmd struct {
	StoreFlags
	Name    string `arg:"" help:"Key name."`
	Network string `required:"" help:"Network, as the config names it."`
	Event   string `required:"" enum:"newHeads,logs,address" help:"newHeads, logs or address (an address's transactions and logs)."`
	Filter  string `help:"The event's filter as JSON: a logs filter, or {\"address\":\"0x…\"} for address."`
	URL     string `required:"" name:"url" help:"Where deliveries are posted (https://…)."`
	Secret  string `required:"" env:"PORTICO_WEBHOOK_SECRET" help:"Signs each delivery (X-Portico-Signature); at least 16 characters."`
}

// Run checks and stores the webhook; a running server starts delivering
// it at its next look at the store (a third of webhooks.lease_for).
func (c *KeysWebhooksAddCmd) Run(ctx context.Context, s *Streams) error {
	st, cfg, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	spec := store.WebhookSpec{Network: c.Network, Event: c.Event, Filter: c.Filter, URL: c.URL, Secret: c.Secret}
	fam, ok := webhookFamily(cfg, c.Network)
	if err := webhook.CheckSpec(spec, fam, ok); err != nil {
		return err
	}
	w, err := st.CreateWebhook(ctx, c.Name, spec)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "webhook for %s: %s %s to %s\n%s\n", w.KeyName, w.Network, w.Event, w.URL, w.ID)
	return nil
}

// webhookFamily is the family part of the webhooks of a network of cfg
// (the built-in networks when cfg names none).
func webhookFamily(cfg *config.Config, network string) (portico.Webhooks, bool) {
	var fam portico.Family
	for _, n := range cfg.Networks {
		if n.Name == network {
			fam = n.Family
		}
	}
	if len(cfg.Networks) == 0 {
		for _, f := range families.All() {
			if f.Network == network {
				fam = f.Name
			}
		}
	}
	f, err := families.Get(fam)
	if err != nil || f.Webhooks == nil {
		return nil, false
	}
	return f.Webhooks, true
}

// KeysWebhooksListCmd lists a key's webhooks.
type KeysWebhooksListCmd struct {
	StoreFlags
	Name string `arg:"" help:"Key name."`
}

// Run prints the webhooks; never their secrets.
func (c *KeysWebhooksListCmd) Run(ctx context.Context, s *Streams) error {
	st, _, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	list, err := st.Webhooks(ctx, c.Name)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNETWORK\tEVENT\tURL\tDELIVERED\tLAST BLOCK\tSTATE")
	for _, w := range list {
		state := w.State
		if w.PausedReason != "" {
			state += ": " + w.PausedReason
		}
		last := "-"
		if w.Cursor.Hash != "" {
			last = fmt.Sprintf("%d %s", w.Cursor.Number, w.Cursor.Hash)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", w.ID, w.Network, w.Event, w.URL, w.Delivered, last, state)
	}
	return tw.Flush()
}

// KeysWebhooksDeleteCmd deletes a webhook.
type KeysWebhooksDeleteCmd struct {
	StoreFlags
	Name string `arg:"" help:"Key name."`
	ID   string `arg:"" help:"Webhook id."`
}

// Run deletes the webhook with its outbox.
func (c *KeysWebhooksDeleteCmd) Run(ctx context.Context, s *Streams) error {
	st, _, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.DeleteWebhook(ctx, c.Name, c.ID); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "deleted webhook %s of %s\n", c.ID, c.Name)
	return nil
}

// KeysWebhooksResumeCmd makes a paused webhook active again.
type KeysWebhooksResumeCmd struct {
	StoreFlags
	Name string `arg:"" help:"Key name."`
	ID   string `arg:"" help:"Webhook id."`
}

// Run resumes the webhook.
func (c *KeysWebhooksResumeCmd) Run(ctx context.Context, s *Streams) error {
	st, _, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	w, err := st.Webhook(ctx, c.ID)
	if err != nil {
		return err
	}
	if w.KeyName != c.Name {
		return fmt.Errorf("%w: %q", store.ErrWebhookNotFound, c.ID)
	}
	if err := st.SetWebhookState(ctx, c.ID, store.WebhookActive, ""); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "resumed webhook %s of %s\n", c.ID, c.Name)
	return nil
}
