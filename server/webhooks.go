package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families"
	"github.com/porticohq/portico/gateway/webhook"
)

// startWebhooks runs the webhook manager (docs/webhooks.md) over the
// store and the gateway; Close stops it before the gateway.
func (m *Server) startWebhooks() error {
	cfg := &m.Config
	owner, err := m.webhookOwner()
	if err != nil {
		return err
	}
	mgr, err := webhook.New(webhook.Config{
		Store:    m.Store,
		Source:   m.gw,
		Families: m.webhookFamily,
		Sender: webhook.NewSender(webhook.SenderConfig{AllowPrivate: cfg.Webhooks.AllowPrivateURLs,
			Timeout: cfg.Webhooks.Timeout}),
		Instance: owner,
		LeaseFor: cfg.Webhooks.LeaseFor,
		RetryFor: cfg.Webhooks.RetryFor,
		Logger:   m.log,
	})
	if err != nil {
		return err
	}
	m.webhooks = mgr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); mgr.Run(ctx) }()
	m.stopWebhooks = func() { cancel(); <-done }
	return nil
}

// webhookOwner names this instance as a webhook lease owner: its
// metering instance name when it has a data directory (a restarted
// instance takes its own leases back at once), else a name of its own.
func (m *Server) webhookOwner() (string, error) {
	if m.Config.DataDir != "" {
		return instanceName(&m.Config)
	}
	host, _ := os.Hostname()
	var r [6]byte
	_, _ = rand.Read(r[:])
	return host + "-" + hex.EncodeToString(r[:]), nil
}

// webhookFamily is the family part of the webhooks of a served network.
func (m *Server) webhookFamily(network string) (portico.Webhooks, bool) {
	cur := m.cur.Load()
	if cur == nil {
		return nil, false
	}
	n := cur.byName[network]
	if n == nil {
		return nil, false
	}
	f, err := families.Get(n.cfg.Family)
	if err != nil || f.Webhooks == nil {
		return nil, false
	}
	return f.Webhooks, true
}
