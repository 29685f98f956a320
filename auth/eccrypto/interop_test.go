package eccrypto

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha512"
	"encoding/hex"
	"testing"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// encryptUnpadded encrypts as the JavaScript eccrypto's encrypt does: the
// ECDH x coordinate is hashed without its leading zero bytes.
func encryptUnpadded(t *testing.T, ephem *secp256k1.PrivateKey, pub *secp256k1.PublicKey, plaintext []byte) *Encrypted {
	t.Helper()
	shared := secp256k1.GenerateSharedSecret(ephem, pub)
	for len(shared) > 0 && shared[0] == 0 {
		shared = shared[1:]
	}
	h := sha512.Sum512(shared)
	iv := make([]byte, aes.BlockSize)
	_, _ = rand.Read(iv)
	block, _ := aes.NewCipher(h[:32])
	pad := aes.BlockSize - len(plaintext)%aes.BlockSize
	ct := append(append([]byte{}, plaintext...), make([]byte, pad)...)
	for i := len(plaintext); i < len(ct); i++ {
		ct[i] = byte(pad)
	}
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, ct)
	e := &Encrypted{IV: iv, EphemPublicKey: ephem.PubKey().SerializeUncompressed(), Ciphertext: ct}
	e.MAC = mac(h[32:], e)
	return e
}

// TestDecryptUnpaddedSharedSecret: about 1 in 256 messages the JavaScript
// library encrypts have an x coordinate with a leading zero byte, which it
// hashes unpadded. Decrypt must accept both forms.
func TestDecryptUnpaddedSharedSecret(t *testing.T) {
	recipient, _ := GenerateKey()
	var ephem *secp256k1.PrivateKey
	for range 100000 {
		k, _ := GenerateKey()
		if secp256k1.GenerateSharedSecret(k, recipient.PubKey())[0] == 0 {
			ephem = k
			break
		}
	}
	if ephem == nil {
		t.Fatal("no ephemeral key with a leading zero byte found")
	}
	for _, msg := range [][]byte{nil, []byte("{}"), []byte(`{"privKey":"00"}`)} {
		e := encryptUnpadded(t, ephem, recipient.PubKey(), msg)
		got, err := Decrypt(recipient, e)
		if err != nil || string(got) != string(msg) {
			t.Fatalf("Decrypt(%q) = %q, %v", msg, got, err)
		}
	}
	// A wrong key still fails with a MAC mismatch.
	other, _ := GenerateKey()
	if _, err := Decrypt(other, encryptUnpadded(t, ephem, recipient.PubKey(), []byte("x"))); err != ErrMACMismatch {
		t.Fatalf("wrong key: %v", err)
	}
}

// TestParseSignatureForms: the Swift SDK sends {"r","s"} JSON; the
// JavaScript session managers send a DER signature in hex.
func TestParseSignatureForms(t *testing.T) {
	priv, _ := GenerateKey()
	msg := []byte(`{"iv":"00"}`)
	sig := Sign(priv, msg)
	var r, s secp256k1.ModNScalar
	r.SetBytes(&sig.R)
	s.SetBytes(&sig.S)
	der := hex.EncodeToString(ecdsa.NewSignature(&r, &s).Serialize())
	cases := []struct {
		name, in string
		ok       bool
	}{
		{"json", sig.String(), true},
		{"der hex", der, true},
		{"der 0x hex", "0x" + der, true},
		{"der upper hex", "0x" + hexUpper(der), true},
		{"empty", "", false},
		{"not hex", "zz", false},
		{"truncated der", der[:20], false},
		{"json without s", `{"r":"01"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSignature(c.in)
			if (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok %v", err, c.ok)
			}
			if c.ok && !Verify(priv.PubKey(), msg, got) {
				t.Fatal("parsed signature does not verify")
			}
		})
	}
}

func hexUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'f' {
			b[i] = c - 32
		}
	}
	return string(b)
}
