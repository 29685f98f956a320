package authd

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/authd/clients"
	"github.com/porticohq/portico/authd/mailer"
	"github.com/porticohq/portico/internal/authtest"
)

// Issue 19 (7): without the dev-only flag the codes are mailed through a
// real SMTP client (here to a real SMTP server on 127.0.0.1) and neither
// the code nor the address is logged; with no way to deliver codes, the
// passwordless provider is off.
func TestPasswordlessCodesByMail(t *testing.T) {
	mail := authtest.StartSMTP(t, "", "")
	host, p, _ := net.SplitHostPort(mail.Addr)
	port, _ := strconv.Atoi(p)
	log := &logBuffer{}
	const app = "http://127.0.0.1:1/mail-app/cb"
	s, url := serve(t, Config{Networks: []string{"sapphire_devnet"}, Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Login:   LoginFile{SMTP: &mailer.SMTPConfig{Host: host, Port: port, From: "login@auth.example", TLS: mailer.TLSNone}},
		Clients: []clients.Client{{ID: "mail-app", RedirectURLs: []string{app}}}})
	_ = s
	ctx := context.Background()
	sdk, err := auth.New(ctx, auth.InitParams{ClientID: "mail-app", Network: auth.SapphireDevnet, SDKURL: url},
		auth.WithStorage(&auth.FileStorage{Dir: t.TempDir()}))
	if err != nil {
		t.Fatal(err)
	}
	pl, err := sdk.LoginURL(ctx, auth.LoginParams{LoginProvider: auth.EmailPasswordless, RedirectURL: app, MfaLevel: auth.MFANone})
	if err != nil {
		t.Fatal(err)
	}
	b := authtest.NewBrowser(app)
	cb, err := b.Passwordless(pl.URL, "Mia@Example.com", func(string) string { return mail.LastCode("mia@example.com") })
	if err != nil {
		t.Fatalf("%v\n%s", err, b.Page)
	}
	st, err := sdk.CompleteLogin(ctx, cb)
	if err != nil || st.UserInfo.VerifierID != "mia@example.com" {
		t.Fatalf("%+v %v", st, err)
	}
	code := mail.LastCode("mia@example.com")
	if strings.Contains(log.String(), code) || strings.Contains(log.String(), "mia@example.com") || strings.Contains(log.String(), "DEV ONLY") {
		t.Fatalf("the code or the address is in the log:\n%s", log)
	}
	if strings.Contains(b.Page, "server log") {
		t.Error("the code page still says codes are logged")
	}

	// No SMTP and no dev flag: passwordless is off.
	_, url2 := serve(t, Config{Networks: []string{"sapphire_devnet"}})
	if _, page := get(t, url2+"/"); strings.Contains(page, "<code>email_passwordless</code>") {
		t.Error("passwordless offered without a way to send codes")
	}
	if _, err := New(ctx, Config{PublicURL: "http://x", Networks: []string{"sapphire_devnet"}, Login: LoginFile{Passwordless: ptr(true)}}); err == nil ||
		!strings.Contains(err.Error(), "needs smtp") {
		t.Fatalf("passwordless: true without smtp: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
