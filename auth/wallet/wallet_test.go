package wallet_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/wallet"
)

// Printing or logging a wallet or any account shows addresses, never a
// key (in any of the forms a key takes: hex, the Stark key, base58).
func TestNoKeyInOutput(t *testing.T) {
	priv, ed := keysOf(interopKeys[0])
	w, err := wallet.FromState(&auth.State{PrivKey: priv, Ed25519PrivKey: ed})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, v := range []any{w, *w, w.EVM, w.Solana, w.Starknet} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
	}
	log := slog.New(slog.NewJSONHandler(&out, nil))
	log.Info("wallet", "w", w, "evm", w.EVM, "sol", w.Solana, "stark", w.Starknet)
	slog.New(slog.NewTextHandler(&out, nil)).Info("wallet", "w", w)
	stark, _ := wallet.GrindKey(mustHex(t, priv))
	for _, secret := range []string{priv, ed, ed[:64], stark.Text(16), stark.String()} {
		if strings.Contains(strings.ToLower(out.String()), secret) {
			t.Fatalf("output holds a key (%.8s…):\n%s", secret, out.String())
		}
	}
	for _, addr := range []string{w.EVM.Address().Hex(), w.Solana.PublicKey().String(), w.Starknet.String()} {
		if !strings.Contains(out.String(), addr) {
			t.Errorf("output lacks the address %s", addr)
		}
	}
}

func TestBadKeys(t *testing.T) {
	priv, ed := keysOf(interopKeys[0])
	other := strings.Repeat("11", 32) + ed[64:]
	cases := []struct {
		name     string
		st       *auth.State
		field    string
		sentinel error
	}{
		{"no state", nil, "", wallet.ErrNoKey},
		{"empty", &auth.State{}, "", wallet.ErrNoKey},
		{"privKey not hex", &auth.State{PrivKey: strings.Repeat("zz", 32), Ed25519PrivKey: ed}, "privKey", nil},
		{"privKey too long", &auth.State{PrivKey: priv + "00", Ed25519PrivKey: ed}, "privKey", nil},
		{"privKey zero", &auth.State{PrivKey: strings.Repeat("0", 64), Ed25519PrivKey: ed}, "privKey", nil},
		{"ed25519 short", &auth.State{PrivKey: priv, Ed25519PrivKey: ed[:64]}, "ed25519PrivKey", nil},
		{"ed25519 public key not the seed's", &auth.State{PrivKey: priv, Ed25519PrivKey: other}, "ed25519PrivKey", nil},
	}
	for _, c := range cases {
		_, err := wallet.FromState(c.st)
		var ke *wallet.KeyError
		switch {
		case c.sentinel != nil:
			if !errors.Is(err, c.sentinel) {
				t.Errorf("%s: %v, want %v", c.name, err, c.sentinel)
			}
		case !errors.As(err, &ke) || ke.Field != c.field:
			t.Errorf("%s: %v, want a KeyError on %s", c.name, err, c.field)
		case strings.Contains(err.Error(), priv[:16]):
			t.Errorf("%s: the error shows the key: %v", c.name, err)
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hexDecode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
