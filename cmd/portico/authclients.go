package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/porticohq/portico/authd"
	"github.com/porticohq/portico/authd/clients"
)

// AuthClientsCmd manages the auth server's client registry: which client
// ids may log users in and the redirect URLs each may return to.
type AuthClientsCmd struct {
	Add    AuthClientsAddCmd    `cmd:"" help:"Register a client id (or replace its redirect URLs and origins)."`
	List   AuthClientsListCmd   `cmd:"" help:"List the registered client ids."`
	Remove AuthClientsRemoveCmd `cmd:"" help:"Remove a client id: logins for it are refused from then on."`
}

// authStore says where the auth server keeps its state: the flags of
// `portico auth serve`.
type authStore struct {
	DataDir  string `help:"The auth server's data directory (its SQLite database auth-sessions.db)." type:"path" env:"PORTICO_DATA_DIR"`
	Postgres string `help:"The auth server's PostgreSQL URL, instead of --data-dir." env:"PORTICO_AUTH_POSTGRES"`
}

func (s authStore) open(ctx context.Context) (*clients.DB, error) {
	return authd.OpenClients(ctx, s.DataDir, s.Postgres)
}

// AuthClientsAddCmd registers a client.
type AuthClientsAddCmd struct {
	authStore
	ID          string   `arg:"" help:"The client id (InitParams.clientId)."`
	RedirectURL []string `name:"redirect-url" sep:"none" required:"" help:"A redirect URL logins may return to (repeat the flag for more). Exact match; a loopback http URL (127.0.0.1, [::1], localhost) matches any port, and one whose path ends in / also the paths below it."`
	Origin      []string `sep:"none" help:"A web origin the app's pages run on (scheme://host[:port]); whiteLabel.appUrl must be on one."`
	Name        string   `help:"A label for operators."`
}

// Run registers the client.
func (c *AuthClientsAddCmd) Run(ctx context.Context, s *Streams) error {
	db, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	cl := clients.Client{ID: c.ID, Name: c.Name, RedirectURLs: c.RedirectURL, Origins: c.Origin}
	if err := db.Put(ctx, cl); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "registered client %s: redirects %s\n", c.ID, strings.Join(c.RedirectURL, " "))
	return nil
}

// AuthClientsListCmd lists the clients.
type AuthClientsListCmd struct {
	authStore
}

// Run prints one line per client.
func (c *AuthClientsListCmd) Run(ctx context.Context, s *Streams) error {
	db, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	all, err := db.List(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(s.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT ID\tNAME\tREDIRECT URLS\tORIGINS")
	for _, cl := range all {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cl.ID, cl.Name, strings.Join(cl.RedirectURLs, " "), strings.Join(cl.Origins, " "))
	}
	return tw.Flush()
}

// AuthClientsRemoveCmd removes a client.
type AuthClientsRemoveCmd struct {
	authStore
	ID string `arg:"" help:"The client id."`
}

// Run removes the client.
func (c *AuthClientsRemoveCmd) Run(ctx context.Context, s *Streams) error {
	db, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Delete(ctx, c.ID); err != nil {
		return fmt.Errorf("%s: %w", c.ID, err)
	}
	fmt.Fprintf(s.Out, "removed client %s\n", c.ID)
	return nil
}
