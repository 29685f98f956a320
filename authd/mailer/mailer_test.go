package mailer

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/porticohq/portico/internal/authtest"
)

func hostPort(t *testing.T, addr string) (string, int) {
	h, p, _ := net.SplitHostPort(addr)
	var port int
	for _, c := range p {
		port = port*10 + int(c-'0')
	}
	return h, port
}

func TestSendCode(t *testing.T) {
	srv := authtest.StartSMTP(t, "portico", "s3cret")
	host, port := hostPort(t, srv.Addr)
	m, err := New(SMTPConfig{Host: host, Port: port, Username: "portico", Password: "s3cret", From: "login@auth.example", TLS: TLSOpportunistic})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SendCode(context.Background(), "ann@example.com", "123456", "en"); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 || msgs[0].From != "login@auth.example" || len(msgs[0].To) != 1 || msgs[0].To[0] != "ann@example.com" ||
		!strings.Contains(msgs[0].Data, "123456") || !strings.Contains(msgs[0].Data, "Subject: Your sign-in code: 123456") {
		t.Fatalf("%+v", msgs)
	}
	// Wrong credentials: an error, nothing delivered.
	bad, _ := New(SMTPConfig{Host: host, Port: port, Username: "portico", Password: "nope", From: "login@auth.example", TLS: TLSOpportunistic})
	if err := bad.SendCode(context.Background(), "ann@example.com", "654321", "en"); err == nil {
		t.Fatal("sent with wrong credentials")
	}
	// STARTTLS required (the default) and the server has none: refused.
	strict, _ := New(SMTPConfig{Host: host, Port: port, From: "login@auth.example"})
	if err := strict.SendCode(context.Background(), "ann@example.com", "111111", "en"); err == nil {
		t.Fatal("sent without TLS under the default policy")
	}
	if n := len(srv.Messages()); n != 1 {
		t.Fatalf("%d messages", n)
	}
}

func TestNewRejects(t *testing.T) {
	for name, c := range map[string]SMTPConfig{
		"no host": {From: "a@b.example"}, "bad from": {Host: "h", From: "nope"}, "bad tls": {Host: "h", From: "a@b.example", TLS: "ssl"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
