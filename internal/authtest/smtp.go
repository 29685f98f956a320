package authtest

import (
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// SMTPServer is a real SMTP server (github.com/emersion/go-smtp) on
// 127.0.0.1 that keeps what it receives, and wants AUTH PLAIN when user
// is set.
type SMTPServer struct {
	// Addr is the server's host:port.
	Addr       string
	user, pass string
	mu         sync.Mutex
	msgs       []Received
}

// Received is one message the SMTP server took.
type Received struct {
	From string
	To   []string
	Data string
}

// StartSMTP starts the server until the test ends.
func StartSMTP(t testing.TB, user, pass string) *SMTPServer {
	t.Helper()
	s := &SMTPServer{user: user, pass: pass}
	srv := smtp.NewServer(backend{s})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// Messages returns what was delivered.
func (s *SMTPServer) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.msgs...)
}

type backend struct{ s *SMTPServer }

func (b backend) NewSession(*smtp.Conn) (smtp.Session, error) { return &session{s: b.s}, nil }

type session struct {
	s      *SMTPServer
	authed bool
	msg    Received
}

// AuthMechanisms offers PLAIN.
func (se *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (se *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != se.s.user || pass != se.s.pass {
			return errors.New("bad credentials")
		}
		se.authed = true
		return nil
	}), nil
}

func (se *session) Mail(from string, _ *smtp.MailOptions) error {
	if se.s.user != "" && !se.authed {
		return smtp.ErrAuthRequired
	}
	se.msg.From = from
	return nil
}

func (se *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	se.msg.To = append(se.msg.To, to)
	return nil
}

func (se *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	se.msg.Data = string(b)
	se.s.mu.Lock()
	se.s.msgs = append(se.s.msgs, se.msg)
	se.s.mu.Unlock()
	return nil
}

func (se *session) Reset()        { se.msg = Received{} }
func (se *session) Logout() error { return nil }

// LastCode returns the newest 6-digit code mailed to addr, or "".
func (s *SMTPServer) LastCode(addr string) string {
	code := ""
	for _, m := range s.Messages() {
		if len(m.To) == 1 && strings.EqualFold(m.To[0], addr) {
			if c := mailedCode.FindStringSubmatch(m.Data); c != nil {
				code = c[1]
			}
		}
	}
	return code
}

var mailedCode = regexp.MustCompile(`code is (\d{6})`)
