package tkey_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/keynet"
	"github.com/porticohq/portico/authd/keynet/sss"
	"github.com/porticohq/portico/authd/tkey"
)

func TestWordList(t *testing.T) {
	b, err := os.ReadFile("english.txt")
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != "2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda" {
		t.Fatal("english.txt is not the BIP-39 English list")
	}
}

// Vectors from the BIP-39 reference test vectors (trezor/python-mnemonic
// vectors.json, English).
func TestMnemonicVectors(t *testing.T) {
	tests := []struct{ entropy, phrase string }{
		{"00000000000000000000000000000000", "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"},
		{"7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f", "legal winner thank year wave sausage worth useful legal winner thank yellow"},
		{"0000000000000000000000000000000000000000000000000000000000000000", strings.Repeat("abandon ", 23) + "art"},
		{"7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f", "legal winner thank year wave sausage worth useful legal winner thank year wave sausage worth useful legal winner thank year wave sausage worth title"},
		{"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", strings.Repeat("zoo ", 23) + "vote"},
		{"8080808080808080808080808080808080808080808080808080808080808080", "letter advice cage absurd amount doctor acoustic avoid letter advice cage absurd amount doctor acoustic avoid letter advice cage absurd amount doctor acoustic bless"},
	}
	for _, tc := range tests {
		e, _ := hex.DecodeString(tc.entropy)
		got, err := tkey.Mnemonic(e)
		if err != nil || got != tc.phrase {
			t.Fatalf("%s: got %q, %v", tc.entropy, got, err)
		}
		back, err := tkey.MnemonicEntropy(strings.ToUpper(tc.phrase))
		if err != nil || hex.EncodeToString(back) != tc.entropy {
			t.Fatalf("%s: decoded %x, %v", tc.entropy, back, err)
		}
	}
	for _, bad := range []string{
		strings.Repeat("abandon ", 24),         // bad checksum
		strings.Repeat("abandon ", 23) + "zzz", // not a word
		"abandon abandon abandon",              // too short
	} {
		if _, err := tkey.MnemonicEntropy(bad); !errors.Is(err, tkey.ErrPhrase) {
			t.Fatalf("%q: err = %v", bad, err)
		}
	}
}

func fastKDF() tkey.KDF { return tkey.KDF{Time: 1, Memory: 1024, Threads: 1} }

func TestAnyTwoShares(t *testing.T) {
	network, _ := eccrypto.GenerateKey()
	social, _ := eccrypto.GenerateKey()
	st, err := tkey.Enable(network, tkey.Options{Password: "correct horse", KDF: fastKDF(), SocialBackup: social.PubKey()})
	if err != nil {
		t.Fatal(err)
	}
	md := st.Metadata
	// The metadata travels as JSON through the network.
	raw, _ := md.Marshal()
	if strings.Contains(raw, eccrypto.PrivateKeyHex(st.FinalKey)) || strings.Contains(raw, eccrypto.PrivateKeyHex(network)) {
		t.Fatal("the metadata holds a key")
	}
	if md, err = tkey.ParseMetadata(raw); err != nil {
		t.Fatal(err)
	}
	shares := map[string]sss.Share{}
	var e error
	if shares["network"], e = md.NetworkShare(network); e != nil {
		t.Fatal(e)
	}
	shares["device"] = st.DeviceShare
	if shares["backup"], e = md.BackupShare(st.BackupPhrase); e != nil {
		t.Fatal(e)
	}
	if shares["password"], e = md.PasswordShare("correct horse"); e != nil {
		t.Fatal(e)
	}
	if shares["social"], e = md.SocialShare(social); e != nil {
		t.Fatal(e)
	}
	want := eccrypto.PrivateKeyHex(st.FinalKey)
	names := []string{"network", "device", "backup", "password", "social"}
	for i, a := range names {
		// One share alone never gives the key.
		if _, err := md.Reconstruct(shares[a]); !errors.Is(err, tkey.ErrNotEnoughShares) {
			t.Fatalf("%s alone: err = %v", a, err)
		}
		if _, err := md.Reconstruct(shares[a], shares[a]); !errors.Is(err, tkey.ErrNotEnoughShares) {
			t.Fatalf("%s twice: err = %v", a, err)
		}
		for _, b := range names[i+1:] {
			k, err := md.Reconstruct(shares[a], shares[b])
			if err != nil || eccrypto.PrivateKeyHex(k) != want {
				t.Fatalf("%s+%s: %v", a, b, err)
			}
		}
	}
	// The network's key is a share, not the final key.
	if eccrypto.PrivateKeyHex(network) == want {
		t.Fatal("the network key is the final key")
	}
	if _, err := md.PasswordShare("wrong"); !errors.Is(err, tkey.ErrWrongPassword) {
		t.Fatalf("wrong password: %v", err)
	}
	other, _ := eccrypto.GenerateKey()
	if _, err := md.NetworkShare(other); !errors.Is(err, tkey.ErrBadShare) {
		t.Fatalf("another network key: %v", err)
	}
	if _, err := md.SocialShare(other); !errors.Is(err, tkey.ErrBadShare) {
		t.Fatalf("another social key: %v", err)
	}
	bad := shares["device"]
	var one secp256k1.ModNScalar
	one.SetInt(1)
	bad.Value.Add(&one)
	if _, err := md.Reconstruct(bad, shares["backup"]); !errors.Is(err, tkey.ErrBadShare) {
		t.Fatalf("corrupted device share: %v", err)
	}
}

func TestMetadataOnTheNetwork(t *testing.T) {
	e, err := keynet.StartEmbedded(context.Background(), keynet.EmbeddedOptions{Networks: []string{"sapphire_devnet"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c, _ := e.Client("sapphire_devnet", nil)
	defer c.CloseIdleConnections()
	ctx := context.Background()
	network, _ := eccrypto.GenerateKey()
	if _, _, err := c.GetMetadata(ctx, network.PubKey()); !errors.Is(err, keynet.ErrNotFound) {
		t.Fatalf("before MFA: %v", err)
	}
	st, err := tkey.Enable(network, tkey.Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := st.Metadata.Marshal()
	if err := c.SetMetadata(ctx, network, 1, raw); err != nil {
		t.Fatal(err)
	}
	// Someone else cannot overwrite it: the nodes check the owner's signature.
	mallory, _ := eccrypto.GenerateKey()
	sig := eccrypto.Sign(mallory, keynet.MetadataSigningBytes("sapphire_devnet", 2, "{}"))
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": keynet.MethodSetMetadata, "params": keynet.MetadataParams{
		Owner: eccrypto.PublicKeyHex(network.PubKey()), Version: 2, Data: "{}", Signature: &sig}})
	nc, _ := e.Network("sapphire_devnet")
	resp, err := http.Post(nc.Nodes[0].URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Error *keynet.RPCError }
	_ = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if out.Error == nil || out.Error.Code != keynet.CodeBadSignature {
		t.Fatalf("forged metadata: %+v", out.Error)
	}
	// An old version is not taken back.
	if err := c.SetMetadata(ctx, network, 1, "{}"); err == nil {
		t.Fatal("a replayed version was stored")
	}
	v, got, err := c.GetMetadata(ctx, network.PubKey())
	if err != nil || v != 1 || got != raw {
		t.Fatalf("read back %d %v", v, err)
	}
	md, _ := tkey.ParseMetadata(got)
	ns, _ := md.NetworkShare(network)
	k, err := md.Reconstruct(ns, st.DeviceShare)
	if err != nil || !k.PubKey().IsEqual(st.FinalKey.PubKey()) {
		t.Fatalf("network + device after a round trip: %v", err)
	}
}
