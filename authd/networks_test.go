package authd

import (
	"context"
	"log/slog"
	"testing"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/authd/clients"
	"github.com/porticohq/portico/authd/keynet"
	"github.com/porticohq/portico/authd/login"
	"github.com/porticohq/portico/internal/authtest"
)

// The same user and app get a different key on every network: checked
// for every pair of the seven networks, not only two of them.
func TestKeysDifferPerNetwork(t *testing.T) {
	logs := &logBuffer{}
	const app = "http://127.0.0.1:1/nets/cb"
	_, url := serve(t, Config{DevLogCodes: true, Limits: login.Limits{CodesPerEmail: 10}, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Clients: []clients.Client{{ID: "bmV0cw", RedirectURLs: []string{app}}}})
	code := func(email string) string {
		c := ""
		for _, m := range devCode.FindAllStringSubmatch(logs.String(), -1) {
			if m[1] == email {
				c = m[2]
			}
		}
		return c
	}
	ctx := context.Background()
	type keys struct{ core, priv string }
	got := map[string]keys{}
	for _, n := range keynet.Networks() {
		sdk, err := auth.New(ctx, auth.InitParams{ClientID: "bmV0cw", Network: auth.Network(n), SDKURL: url}, auth.WithStorage(&auth.FileStorage{Dir: t.TempDir()}))
		if err != nil {
			t.Fatal(err)
		}
		p, err := sdk.LoginURL(ctx, auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: app, MfaLevel: auth.MFANone})
		if err != nil {
			t.Fatal(err)
		}
		cb, err := authtest.NewBrowser(app).Passwordless(p.URL, "nina@example.com", code)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		st, err := sdk.CompleteLogin(ctx, cb)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		got[n] = keys{st.CoreKitKey, st.PrivKey}
	}
	nets := keynet.Networks()
	if len(nets) != 7 {
		t.Fatalf("%d networks", len(nets))
	}
	for i, a := range nets {
		for _, b := range nets[i+1:] {
			if got[a].core == got[b].core || got[a].priv == got[b].priv {
				t.Errorf("%s and %s give the same key", a, b)
			}
		}
	}
}
