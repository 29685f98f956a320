// Package mailer sends the login pages' one-time codes by email through an
// SMTP server, with github.com/wneessen/go-mail as the client.
package mailer

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"time"

	gomail "github.com/wneessen/go-mail"

	"github.com/porticohq/portico/auth/authwire"
)

// TLS modes of SMTPConfig.TLS.
const (
	// TLSStartTLS requires STARTTLS (the default, port 587).
	TLSStartTLS = "starttls"
	// TLSImplicit speaks TLS from the start (SMTPS, port 465).
	TLSImplicit = "implicit"
	// TLSOpportunistic uses STARTTLS when the server offers it.
	TLSOpportunistic = "opportunistic"
	// TLSNone never encrypts: only for a relay on the same host.
	TLSNone = "none"
)

// SMTPConfig is the SMTP server the codes are sent through (the "smtp"
// object of the login config file).
type SMTPConfig struct {
	// Host is the SMTP server's host name (required).
	Host string `json:"host"`
	// Port is its port; 587, or 465 with TLS implicit, if zero.
	Port int `json:"port,omitempty"`
	// Username and Password, if set, authenticate (SMTP AUTH PLAIN).
	Username string `json:"username,omitempty"`
	// Password is the SMTP password; use ${NAME} in the file.
	Password string `json:"password,omitempty"`
	// From is the sender address (required).
	From string `json:"from"`
	// TLS is starttls (default), implicit, opportunistic or none.
	TLS string `json:"tls,omitempty"`
	// Timeout bounds one delivery; 30 s if zero.
	Timeout time.Duration `json:"-"`
}

// Mailer sends codes. It implements login.Mailer.
type Mailer struct {
	cfg  SMTPConfig
	opts []gomail.Option
}

// New checks cfg and makes a Mailer; it connects to nothing until a code
// is sent.
func New(cfg SMTPConfig) (*Mailer, error) {
	if cfg.Host == "" {
		return nil, errors.New("smtp.host: required")
	}
	if _, err := mail.ParseAddress(cfg.From); err != nil {
		return nil, fmt.Errorf("smtp.from: %q is not an email address", cfg.From)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	opts := []gomail.Option{gomail.WithTimeout(cfg.Timeout)}
	switch cfg.TLS {
	case "", TLSStartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL())
		if cfg.Port == 0 {
			cfg.Port = 465
		}
	case TLSOpportunistic:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		return nil, fmt.Errorf("smtp.tls: %q is not starttls, implicit, opportunistic or none", cfg.TLS)
	}
	if cfg.Port == 0 {
		cfg.Port = 587
	}
	opts = append(opts, gomail.WithPort(cfg.Port))
	if cfg.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthPlain), gomail.WithUsername(cfg.Username), gomail.WithPassword(cfg.Password))
	}
	return &Mailer{cfg: cfg, opts: opts}, nil
}

// SendCode mails a one-time code. The message is plain text, in English
// whatever the login's language.
func (m *Mailer) SendCode(ctx context.Context, to, code string, _ authwire.Language) error {
	msg := gomail.NewMsg()
	if err := msg.From(m.cfg.From); err != nil {
		return fmt.Errorf("mailer: from: %w", err)
	}
	if err := msg.To(to); err != nil {
		return fmt.Errorf("mailer: to: %w", err)
	}
	msg.Subject("Your sign-in code: " + code)
	msg.SetBodyString(gomail.TypeTextPlain, "Your one-time sign-in code is "+code+".\r\n\r\n"+
		"It is valid for 10 minutes. If you did not try to sign in, ignore this message: nobody can sign in without the code.\r\n")
	c, err := gomail.NewClient(m.cfg.Host, m.opts...)
	if err != nil {
		return fmt.Errorf("mailer: %w", err)
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		return fmt.Errorf("mailer: send: %w", err)
	}
	return nil
}
