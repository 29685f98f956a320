package admin

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/porticohq/portico/store"
)

// Webhooks is what the API needs of the webhook manager: a spec's check
// before it is stored, and a poke once it is, so that its delivery starts
// at once. *webhook.Manager is one.
type Webhooks interface {
	Check(spec store.WebhookSpec) error
	Poke()
}

// WebhookRequest is the body of POST /admin/v1/keys/{name}/webhooks.
type WebhookRequest struct {
	Network string `json:"network"`
	// Event is newHeads, logs or address.
	Event string `json:"event"`
	// Filter is the event's filter: a logs filter, {"address": "0x…"}.
	Filter json.RawMessage `json:"filter,omitempty"`
	URL    string          `json:"url"`
	// Secret signs the deliveries; it is never shown again.
	Secret string `json:"secret"`
}

// WebhookJSON is a webhook as the API shows it: everything but its
// secret.
type WebhookJSON struct {
	ID           string          `json:"id"`
	Key          string          `json:"key"`
	Network      string          `json:"network"`
	Event        string          `json:"event"`
	Filter       json.RawMessage `json:"filter,omitempty"`
	URL          string          `json:"url"`
	State        string          `json:"state"`
	PausedReason string          `json:"paused_reason,omitempty"`
	// Cursor is the block of the last acknowledged delivery.
	Cursor    *CursorJSON `json:"cursor,omitempty"`
	Delivered int64       `json:"delivered"`
	// Pending counts the deliveries written and not acknowledged yet:
	// what a receiver that is slow or down has to catch up.
	Pending int64 `json:"pending"`
	// Instance is the instance delivering the webhook (its lease), if
	// any.
	Instance  string    `json:"instance,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// CursorJSON is a webhook's last acknowledged block.
type CursorJSON struct {
	Number int64  `json:"number"`
	Hash   string `json:"hash"`
}

func webhookJSON(w store.Webhook) WebhookJSON {
	j := WebhookJSON{ID: w.ID, Key: w.KeyName, Network: w.Network, Event: w.Event, URL: w.URL, State: w.State,
		PausedReason: w.PausedReason, Delivered: w.Delivered, Pending: w.Pending, Instance: w.LeaseOwner, CreatedAt: w.CreatedAt}
	if w.Filter != "" {
		j.Filter = json.RawMessage(w.Filter)
	}
	if w.Cursor.Hash != "" {
		j.Cursor = &CursorJSON{Number: w.Cursor.Number, Hash: w.Cursor.Hash}
	}
	return j
}

// routeWebhooks adds the webhook routes.
func (a *API) routeWebhooks() {
	a.mux.HandleFunc("GET /admin/v1/webhooks", a.listWebhooks)
	a.mux.HandleFunc("GET /admin/v1/keys/{name}/webhooks", a.listWebhooks)
	a.mux.HandleFunc("POST /admin/v1/keys/{name}/webhooks", a.createWebhook)
	a.mux.HandleFunc("DELETE /admin/v1/keys/{name}/webhooks/{id}", a.deleteWebhook)
	a.mux.HandleFunc("POST /admin/v1/keys/{name}/webhooks/{id}/resume", a.resumeWebhook)
}

// listWebhooks lists a key's webhooks, or every active key's.
func (a *API) listWebhooks(w http.ResponseWriter, r *http.Request) {
	list, err := a.cfg.Store.Webhooks(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	out := make([]WebhookJSON, 0, len(list))
	for _, wh := range list {
		out = append(out, webhookJSON(wh))
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *API) createWebhook(w http.ResponseWriter, r *http.Request) {
	var req WebhookRequest
	if err := decode(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	spec := store.WebhookSpec{Network: req.Network, Event: req.Event, Filter: string(req.Filter), URL: req.URL, Secret: req.Secret}
	if spec.Filter == "null" {
		spec.Filter = ""
	}
	if a.cfg.Webhooks != nil {
		if err := a.cfg.Webhooks.Check(spec); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
	}
	wh, err := a.cfg.Store.CreateWebhook(r.Context(), r.PathValue("name"), spec)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	if a.cfg.Webhooks != nil {
		a.cfg.Webhooks.Poke()
	}
	a.cfg.Logger.Info("admin: webhook created", "name", wh.KeyName, "webhook", wh.ID, "network", wh.Network, "event", wh.Event)
	writeJSON(w, http.StatusCreated, webhookJSON(wh))
}

func (a *API) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	if err := a.cfg.Store.DeleteWebhook(r.Context(), r.PathValue("name"), r.PathValue("id")); err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	if a.cfg.Webhooks != nil {
		a.cfg.Webhooks.Poke()
	}
	a.cfg.Logger.Info("admin: webhook deleted", "name", r.PathValue("name"), "webhook", r.PathValue("id"))
	writeJSON(w, http.StatusOK, map[string]bool{"deleted": true})
}

// resumeWebhook makes a paused webhook active again: its outbox is
// delivered from where it stopped.
func (a *API) resumeWebhook(w http.ResponseWriter, r *http.Request) {
	wh, err := a.cfg.Store.Webhook(r.Context(), r.PathValue("id"))
	if err == nil && wh.KeyName != r.PathValue("name") {
		err = store.ErrWebhookNotFound
	}
	if err == nil {
		err = a.cfg.Store.SetWebhookState(r.Context(), wh.ID, store.WebhookActive, "")
	}
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	if a.cfg.Webhooks != nil {
		a.cfg.Webhooks.Poke()
	}
	wh, err = a.cfg.Store.Webhook(r.Context(), wh.ID)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	writeJSON(w, http.StatusOK, webhookJSON(wh))
}
