package admin_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"

	"github.com/porticohq/portico/admin"
	"github.com/porticohq/portico/metering/apikey"
)

// TestKeyRulesAPI: the admin API creates a key with a secret (shown once),
// edits its JWT keys, allowlists, bounds and log limits, and rotates and
// drops its secret.
func TestKeyRulesAPI(t *testing.T) {
	srv, st, _ := setup(t)
	status, body := do(t, srv, "POST", "/admin/v1/keys", `{"name":"dapp","with_secret":true,"allow_addresses":["0x1111111111111111111111111111111111111111"],
		"allow_user_agents":["viem/"],"max_concurrent":8,"requests_per_second":100,"logs":{"max_block_range":500}}`, token)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	var k admin.KeyJSON
	if err := json.Unmarshal([]byte(body), &k); err != nil {
		t.Fatal(err)
	}
	if len(k.Secret) != apikey.SecretLength || !k.HasSecret || k.MaxConcurrent != 8 || k.RequestsPerSecond != 100 || k.Logs == nil || k.Logs.MaxBlockRange != 500 {
		t.Fatalf("created %+v", k)
	}
	// Shown once: reads never hold it.
	status, body = do(t, srv, "GET", "/admin/v1/keys/dapp", "", token)
	if status != 200 || strings.Contains(body, k.Secret) || strings.Contains(body, `"secret"`) || !strings.Contains(body, `"has_secret":true`) {
		t.Fatalf("show: %d %s", status, body)
	}
	stored, _ := st.Get(t.Context(), "dapp")
	if stored.Rules.SecretHash != apikey.SumSecret(k.Secret).String() {
		t.Fatal("the secret's digest is not what was stored")
	}

	pemText := strings.ReplaceAll(ecPEM(t), "\n", `\n`)
	status, body = do(t, srv, "PATCH", "/admin/v1/keys/dapp", `{"jwt_keys":[{"name":"ops","pem":"`+pemText+`"}],"jwt_max_lifetime_seconds":600,"allow_user_agents":[]}`, token)
	if status != 200 || !strings.Contains(body, `"jwt_keys":[{"name":"ops"`) || strings.Contains(body, "allow_user_agents") || !strings.Contains(body, `"jwt_max_lifetime_seconds":600`) {
		t.Fatalf("patch: %d %s", status, body)
	}
	for _, bad := range []string{
		`{"jwt_keys":[{"name":"ops","pem":"not a key"}]}`,
		`{"allow_addresses":["0x12"]}`,
		`{"requests_per_second":-1}`,
		`{"with_secret":true}`,
	} {
		if status, body := do(t, srv, "PATCH", "/admin/v1/keys/dapp", bad, token); status != 400 {
			t.Errorf("%s: %d %s", bad, status, body)
		}
	}

	status, body = do(t, srv, "POST", "/admin/v1/keys/dapp/secret", `{"grace_seconds":3600}`, token)
	var rot admin.KeyJSON
	if status != 200 || json.Unmarshal([]byte(body), &rot) != nil || rot.Secret == "" || rot.Secret == k.Secret || rot.PrevSecretUntil.IsZero() {
		t.Fatalf("rotate: %d %s", status, body)
	}
	status, body = do(t, srv, "DELETE", "/admin/v1/keys/dapp/secret", "", token)
	if status != 200 || !strings.Contains(body, `"has_secret":false`) {
		t.Fatalf("remove secret: %d %s", status, body)
	}
}

func ecPEM(t *testing.T) string {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}
