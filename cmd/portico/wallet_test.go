package main

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"

	"github.com/porticohq/portico/auth/wallet/transfer"
	"github.com/porticohq/portico/config"
	"github.com/porticohq/portico/families/starknet/starknettx"
	"github.com/porticohq/portico/internal/authtest"
)

// walletRun runs `portico wallet args…` and answers its code prompt with
// the newest code the SMTP server received for email after the call.
func walletRun(t *testing.T, mail *authtest.SMTPServer, email string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before := len(mail.Messages())
	in, feed := io.Pipe()
	go func() {
		for ctx.Err() == nil {
			if msgs := mail.Messages(); len(msgs) > before {
				fmt.Fprintln(feed, mail.LastCode(email))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer feed.Close()
	out, errs := &lockedBuffer{}, &lockedBuffer{}
	if err := runInput(ctx, append([]string{"wallet", "--email", email}, args...), in, out, errs); err != nil {
		t.Fatalf("portico wallet %s: %v\n%s\n%s", strings.Join(args, " "), err, out, errs)
	}
	return out.String()
}

var walletAddrRE = regexp.MustCompile(`(?m)^(evm|solana|starknet) address (\S+)$`)

func walletAddresses(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, a := range walletAddrRE.FindAllStringSubmatch(out, -1) {
		m[a[1]] = a[2]
	}
	if len(m) != 3 {
		t.Fatalf("addresses in:\n%s", out)
	}
	return m
}

// One login, three chains, end to end: the real auth pages log a user in
// through the SDK (the code mailed to the test's SMTP server); the
// example funds the three accounts from the devnets' faucets and sends a
// transfer on each family through the gateway; each balance moves by
// exactly the amount and the fee, which the test reads back from the
// chains itself. Logging in again on the same network gives the same
// addresses; another network gives others.
func TestWalletEndToEnd(t *testing.T) {
	mail := authtest.StartSMTP(t, "", "")
	host, port, _ := strings.Cut(mail.Addr, ":")
	loginCfg := filepath.Join(t.TempDir(), "login.json")
	if err := os.WriteFile(loginCfg, []byte(`{"passwordless": true, "smtp": {"host": "`+host+`", "port": `+port+
		`, "from": "login@portico.test", "tls": "none"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	authDir := t.TempDir()
	runOK(t, "auth", "clients", "add", DevClientID, "--redirect-url", "http://127.0.0.1/callback/", "--data-dir", authDir)
	authURL, _ := authServeLogged(t, "--data-dir", authDir, "--login-config", loginCfg, "--networks", "sapphire_devnet,sapphire_mainnet")

	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "wallet", Key: "wallet0123456789abcdef0123456789ab", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{
		{Name: "solana-devnet", Family: "solana", Devnet: config.Devnet{BlockPeriod: 40 * time.Millisecond}},
		{Name: "evm-devnet", Family: "evm", Devnet: config.Devnet{BlockPeriod: time.Second}},
		{Name: "starknet-devnet", Family: "starknet", Devnet: config.Devnet{BlockPeriod: time.Second}},
	}
	s := start(t, cfg)
	urls := []string{"--evm", s.url(t, "evm-devnet"), "--solana", s.url(t, "solana-devnet"), "--starknet", s.url(t, "starknet-devnet")}
	login := []string{"--auth", authURL, "--session", t.TempDir()}

	const email = "wallet@example.com"
	out := walletRun(t, mail, email, append(login, urls...)...)
	addrs := walletAddresses(t, out)
	lines := regexp.MustCompile(`(?m)^(evm|solana|starknet): before (\d+) after (\d+) sent (\d+) fee (\d+) \((\w+)\) tx (\S+)$`).FindAllStringSubmatch(out, -1)
	if len(lines) != 3 {
		t.Fatalf("want a line per family:\n%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, l := range lines {
		n := func(i int) *big.Int { v, _ := new(big.Int).SetString(l[i], 10); return v }
		before, after, sent, fee := n(2), n(3), n(4), n(5)
		if want := new(big.Int).Sub(before, new(big.Int).Add(sent, fee)); after.Cmp(want) != 0 || sent.Sign() <= 0 || fee.Sign() <= 0 {
			t.Errorf("%s: before %s, after %s, sent %s, fee %s", l[1], before, after, sent, fee)
		}
		// Read the fee and the balance back from the chain.
		var chainFee, balance *big.Int
		switch l[1] {
		case "evm":
			c, err := ethclient.DialContext(ctx, s.url(t, "evm-devnet"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := c.TransactionReceipt(ctx, common.HexToHash(l[7]))
			if err != nil {
				t.Fatal(err)
			}
			chainFee = new(big.Int).Mul(new(big.Int).SetUint64(r.GasUsed), r.EffectiveGasPrice)
			if balance, err = c.BalanceAt(ctx, common.HexToAddress(addrs["evm"]), r.BlockNumber); err != nil {
				t.Fatal(err)
			}
			c.Close()
		case "solana":
			c := rpc.New(s.url(t, "solana-devnet"))
			tx, err := c.GetTransaction(ctx, solana.MustSignatureFromBase58(l[7]), &rpc.GetTransactionOpts{Commitment: rpc.CommitmentFinalized})
			if err != nil {
				t.Fatal(err)
			}
			chainFee = new(big.Int).SetUint64(tx.Meta.Fee)
			balance = new(big.Int).SetUint64(tx.Meta.PostBalances[0])
			if got, err := c.GetBalance(ctx, solana.MustPublicKeyFromBase58(addrs["solana"]), rpc.CommitmentFinalized); err != nil || got.Value != balance.Uint64() {
				t.Errorf("solana balance now %v %v, after the transfer %s", got, err, balance)
			}
		case "starknet":
			c := &transfer.Client{URL: s.url(t, "starknet-devnet")}
			var rc struct {
				Fee struct {
					Amount string `json:"amount"`
				} `json:"actual_fee"`
				Events []struct {
					Keys []string `json:"keys"`
				} `json:"events"`
			}
			if err := c.Call(ctx, "starknet_getTransactionReceipt", []string{l[7]}, &rc); err != nil {
				t.Fatal(err)
			}
			chainFee, _ = new(big.Int).SetString(strings.TrimPrefix(rc.Fee.Amount, "0x"), 16)
			addr, err := starknettx.ParseFelt(addrs["starknet"])
			if err != nil {
				t.Fatal(err)
			}
			if balance, err = transfer.StarknetBalance(ctx, s.url(t, "starknet-devnet"), addr); err != nil {
				t.Fatal(err)
			}
			if len(rc.Events) != 2 {
				t.Errorf("starknet events %+v: want Transfer and the fee's", rc.Events)
			}
		}
		if chainFee.Cmp(fee) != 0 || balance.Cmp(after) != 0 {
			t.Errorf("%s: the chain says fee %s, balance %s; the example said %s, %s", l[1], chainFee, balance, fee, after)
		}
	}

	// The same user again, with a new session, on the same network: the
	// same three addresses; on another network, three others.
	again := walletAddresses(t, walletRun(t, mail, email, "--auth", authURL, "--session", t.TempDir(), "--addresses"))
	other := walletAddresses(t, walletRun(t, mail, email, "--auth", authURL, "--session", t.TempDir(), "--addresses", "--network", "sapphire_mainnet"))
	for _, fam := range []string{"evm", "solana", "starknet"} {
		if again[fam] != addrs[fam] {
			t.Errorf("%s: second login %s, first %s", fam, again[fam], addrs[fam])
		}
		if other[fam] == addrs[fam] {
			t.Errorf("%s: another network gave the same address %s", fam, other[fam])
		}
	}
}
