package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/wallet"
	"github.com/porticohq/portico/auth/wallet/transfer"
)

// WalletCmd is the example of one login on three chains: it logs a user
// in with the auth SDK, turns the login into an account per family
// (package wallet), funds them from the devnets' faucets, sends one
// transfer on each family through the gateway, waits for each through a
// subscription, and prints the balances before and after. It runs against
// `make run` with no flags.
type WalletCmd struct {
	Auth      string `help:"Base URL of the auth server's login pages (the SDK's sdkUrl)." default:"http://127.0.0.1:8550"`
	ClientID  string `help:"The SDK's client id; portico serve registers portico-dev for loopback callbacks." default:"portico-dev"`
	Network   string `help:"The auth network (key network) to log in on; each gives the user other keys." default:"sapphire_devnet"`
	Email     string `help:"Log in with this email address from the terminal: the code mailed to it (printed in portico's log by the dev setup) is read from standard input. Without it the SDK opens the browser."`
	Session   string `help:"Directory the SDK keeps the session in (a file store); default the OS keyring, or a file store where there is none. A saved session is used without logging in again." type:"path"`
	DataDir   string `help:"portico serve's data directory, where the dev API key is." default:"portico-data" type:"path"`
	Key       string `help:"API key; default the dev key in --data-dir." env:"PORTICO_KEY"`
	EVM       string `help:"The EVM network's URL; default http://127.0.0.1:8702/v3/<key>." name:"evm"`
	Solana    string `help:"The slot chain's URL; default http://127.0.0.1:8701/v3/<key>."`
	Starknet  string `help:"The rollup's URL; default http://127.0.0.1:8703/v3/<key>."`
	Addresses bool   `help:"Log in, print the three addresses and stop."`
}

// Run logs in and runs the three transfers.
func (c *WalletCmd) Run(ctx context.Context, s *Streams) error {
	st, err := c.login(ctx, s)
	if err != nil {
		return err
	}
	w, err := wallet.FromState(st)
	if err != nil {
		return err
	}
	who := ""
	if st.UserInfo != nil {
		who = st.UserInfo.VerifierID
	}
	fmt.Fprintf(s.Out, "logged in as %s on %s\n", who, c.Network)
	fmt.Fprintf(s.Out, "evm address %s\nsolana address %s\nstarknet address %s\n", w.EVM, w.Solana, w.Starknet)
	if c.Addresses {
		return nil
	}
	urls, err := c.networkURLs()
	if err != nil {
		return err
	}
	return transfer.Run(ctx, s.Out, w, transfer.URLs{EVM: urls[0], Solana: urls[1], Starknet: urls[2]})
}

// networkURLs returns the EVM, slot-chain and rollup URLs.
func (c *WalletCmd) networkURLs() ([3]string, error) {
	urls := [3]string{c.EVM, c.Solana, c.Starknet}
	if urls[0] != "" && urls[1] != "" && urls[2] != "" {
		return urls, nil
	}
	key := c.Key
	if key == "" {
		b, err := os.ReadFile(filepath.Join(c.DataDir, "dev-key"))
		if err != nil {
			return urls, fmt.Errorf("no --key and no dev key in %s (run make run first): %w", c.DataDir, err)
		}
		key = strings.TrimSpace(string(b))
	}
	for i, port := range []string{"8702", "8701", "8703"} {
		if urls[i] == "" {
			urls[i] = "http://127.0.0.1:" + port + "/v3/" + key
		}
	}
	return urls, nil
}

// login returns the saved session's state, or logs in: from the terminal
// with --email, else in the browser.
func (c *WalletCmd) login(ctx context.Context, s *Streams) (*auth.State, error) {
	opts := []auth.Option{}
	if c.Session != "" {
		opts = append(opts, auth.WithStorage(&auth.FileStorage{Dir: c.Session}))
	}
	sdk, err := auth.New(ctx, auth.InitParams{ClientID: c.ClientID, Network: auth.Network(c.Network), SDKURL: c.Auth}, opts...)
	if err != nil {
		return nil, err
	}
	if st := sdk.State(); st != nil {
		fmt.Fprintln(s.Out, "using the saved session (log out with the SDK's Logout to log in as someone else)")
		return st, nil
	}
	params := auth.LoginParams{LoginProvider: auth.EmailPasswordless, MfaLevel: auth.MFANone}
	if c.Email == "" {
		fmt.Fprintln(s.Out, "opening the login pages in the browser…")
		return sdk.Login(ctx, params)
	}
	return transfer.TerminalLogin(ctx, sdk, params, c.Email, s.in(), s.Out)
}

// in is the input stream, standard input unless a test set one.
func (s *Streams) in() io.Reader {
	if s.In != nil {
		return s.In
	}
	return os.Stdin
}
