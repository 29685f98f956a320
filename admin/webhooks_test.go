package admin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/porticohq/portico/store"
)

// The webhook routes: create (201 with the id, never the secret back),
// list per key and for all keys, resume, delete; another key's webhook
// is not found; a body with an unknown field is refused.
func TestAdminWebhooks(t *testing.T) {
	srv, st, _ := setup(t)
	ctx := context.Background()
	for _, name := range []string{"alice", "bob"} {
		if _, _, err := st.Create(ctx, store.KeySpec{Name: name, DailyCredits: 10}); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "webhook-secret-0123456789"
	code, body := do(t, srv, "POST", "/admin/v1/keys/alice/webhooks",
		`{"network":"evm-devnet","event":"logs","filter":{"address":"0x00000000000000000000000000000000000000aa"},"url":"https://hooks.example.com/x","secret":"`+secret+`"}`, token)
	var made struct {
		ID     string
		State  string
		Filter json.RawMessage
	}
	if code != 201 || json.Unmarshal([]byte(body), &made) != nil || !strings.HasPrefix(made.ID, "wh_") || made.State != "active" ||
		strings.Contains(body, secret) || !strings.Contains(string(made.Filter), "0x00000000000000000000000000000000000000aa") {
		t.Fatalf("create: %d %s", code, body)
	}
	if code, body := do(t, srv, "POST", "/admin/v1/keys/alice/webhooks", `{"network":"n","nope":1}`, token); code != 400 || !strings.Contains(body, "nope") {
		t.Fatalf("unknown field: %d %s", code, body)
	}
	if code, _ := do(t, srv, "POST", "/admin/v1/keys/carol/webhooks", `{"network":"n","event":"newHeads","url":"https://x","secret":"s"}`, token); code != 404 {
		t.Fatalf("unknown key: %d", code)
	}
	for _, path := range []string{"/admin/v1/keys/alice/webhooks", "/admin/v1/webhooks"} {
		code, body := do(t, srv, "GET", path, "", token)
		if code != 200 || !strings.Contains(body, made.ID) || strings.Contains(body, secret) {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
	}
	if code, body := do(t, srv, "GET", "/admin/v1/keys/bob/webhooks", "", token); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("bob's: %d %s", code, body)
	}
	if err := st.SetWebhookState(ctx, made.ID, store.WebhookPaused, "receiver answered 500"); err != nil {
		t.Fatal(err)
	}
	if code, body := do(t, srv, "GET", "/admin/v1/keys/alice/webhooks", "", token); !strings.Contains(body, `"paused_reason":"receiver answered 500"`) {
		t.Fatalf("paused: %d %s", code, body)
	}
	if code, _ := do(t, srv, "POST", "/admin/v1/keys/bob/webhooks/"+made.ID+"/resume", "", token); code != 404 {
		t.Fatalf("resume as bob: %d", code)
	}
	if code, body := do(t, srv, "POST", "/admin/v1/keys/alice/webhooks/"+made.ID+"/resume", "", token); code != 200 || !strings.Contains(body, `"state":"active"`) {
		t.Fatalf("resume: %d %s", code, body)
	}
	if code, _ := do(t, srv, "DELETE", "/admin/v1/keys/bob/webhooks/"+made.ID, "", token); code != 404 {
		t.Fatalf("delete as bob: %d", code)
	}
	if code, _ := do(t, srv, "DELETE", "/admin/v1/keys/alice/webhooks/"+made.ID, "", token); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := do(t, srv, "GET", "/admin/v1/webhooks", "", ""); code != 401 {
		t.Fatalf("without the token: %d", code)
	}
}
