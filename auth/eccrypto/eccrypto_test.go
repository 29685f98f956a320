package eccrypto

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
)

// The signing vectors of the Swift session manager's tests
// (session-manager-swift Tests/SessionManagerTests/SessionManagementTest.swift).
func TestSignSwiftVectors(t *testing.T) {
	cases := []struct {
		name, priv, msg, r, s string
	}{
		{
			name: "test data",
			priv: "bce6550a433b2e38067501222f9e75a2d4c5a433a6d27ec90cd81fbd4194cc2b",
			msg:  "test data",
			r:    "d7736799107d8e6308af995d827dc8772993cd8ccab5c230fe8277cecb02f31a",
			s:    "4df631a4059f45d8cb0e8889ff1b8096243796189ec00440883b1c0271a19e80",
		},
		{
			name: "ecies json",
			priv: "dda863b615ac6de27fb680b5563db3c19176a6f42cc1dee1768e220983385e3e",
			msg:  `{"iv":"693407372626b11017d0ec30acd29e6a","ciphertext":"cbe09442851a0463b3e34e2f912c6aee","ephemPublicKey":"0477e20c5d9e3281a4eca7d07c1c4cc9765522ea7966cd7ea8f552da42049778d4fcf44b35b59e84eddb1fa3266350e4f2d69d62da82819d51f107550e03852661","mac":"96d358f46ef371982af600829c101e78f6c5d5f960bd96fdd2ca52763ee50f65"}`,
			r:    "b0161b8abbd66da28734d105e28455bf9a48a33ee1dfde71f96e2e9197175650",
			s:    "4d53303ec05596ca6784cff1d25eb0e764f70ff5e1ce16a896ec58255b25b5ff",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			priv, err := ParsePrivateKeyHex(c.priv)
			if err != nil {
				t.Fatal(err)
			}
			sig := Sign(priv, []byte(c.msg))
			if got := hex.EncodeToString(sig.R[:]); got != c.r {
				t.Errorf("r = %s, want %s", got, c.r)
			}
			if got := hex.EncodeToString(sig.S[:]); got != c.s {
				t.Errorf("s = %s, want %s", got, c.s)
			}
			if !Verify(priv.PubKey(), []byte(c.msg), sig) {
				t.Error("Verify rejects the vector")
			}
			if Verify(priv.PubKey(), []byte(c.msg+"x"), sig) {
				t.Error("Verify accepts another message")
			}
			// go-ethereum signs the same digest with the same RFC 6979 nonce.
			ethSig, err := crypto.Sign(Keccak256([]byte(c.msg)), priv.ToECDSA())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ethSig[:32], sig.R[:]) || !bytes.Equal(ethSig[32:64], sig.S[:]) {
				t.Errorf("go-ethereum signature %x differs", ethSig[:64])
			}
		})
	}
}

func TestSignatureJSON(t *testing.T) {
	priv, _ := ParsePrivateKeyHex("bce6550a433b2e38067501222f9e75a2d4c5a433a6d27ec90cd81fbd4194cc2b")
	sig := Sign(priv, []byte("test data"))
	b, err := json.Marshal(sig)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"r":"d7736799107d8e6308af995d827dc8772993cd8ccab5c230fe8277cecb02f31a","s":"4df631a4059f45d8cb0e8889ff1b8096243796189ec00440883b1c0271a19e80"}`
	if string(b) != want {
		t.Fatalf("json = %s", b)
	}
	var back Signature
	if err := json.Unmarshal(b, &back); err != nil || back != sig {
		t.Fatalf("round trip: %v %v", back, err)
	}
	// Leading zeros may be dropped by other encoders.
	var short Signature
	if err := json.Unmarshal([]byte(`{"r":"1","s":"0a"}`), &short); err != nil || short.R[31] != 1 || short.S[31] != 10 {
		t.Fatalf("short hex: %v %v", short, err)
	}
	for _, bad := range []struct{ in, field string }{
		{`{"s":"01"}`, "r"},
		{`{"r":"01","s":"zz"}`, "s"},
		{`{"r":"` + hex.EncodeToString(make([]byte, 33)) + `","s":"01"}`, "r"},
	} {
		var s Signature
		var fe *FieldError
		if err := json.Unmarshal([]byte(bad.in), &s); !errors.As(err, &fe) || fe.Field != bad.field {
			t.Errorf("%s: err = %v, want field %s", bad.in, err, bad.field)
		}
	}
}

func TestVerifyRejects(t *testing.T) {
	priv, _ := GenerateKey()
	other, _ := GenerateKey()
	sig := Sign(priv, []byte("m"))
	if Verify(other.PubKey(), []byte("m"), sig) {
		t.Error("accepted another key")
	}
	if Verify(priv.PubKey(), []byte("m"), Signature{}) {
		t.Error("accepted a zero signature")
	}
	if Verify(nil, []byte("m"), sig) {
		t.Error("accepted a nil key")
	}
	var over Signature
	for i := range over.R {
		over.R[i], over.S[i] = 0xff, 0xff
	}
	if Verify(priv.PubKey(), []byte("m"), over) {
		t.Error("accepted scalars above the order")
	}
}

// ecies-node.json was made by testdata/nodevector.js with Node's crypto
// module, an implementation independent of this one.
func TestDecryptNodeVector(t *testing.T) {
	raw, err := os.ReadFile("testdata/ecies-node.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		PrivateKey string          `json:"privateKey"`
		Plaintext  string          `json:"plaintext"`
		Encrypted  json.RawMessage `json:"encrypted"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	priv, err := ParsePrivateKeyHex(v.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseEncrypted(string(v.Encrypted))
	if err != nil {
		t.Fatal(err)
	}
	pt, err := Decrypt(priv, e)
	if err != nil {
		t.Fatal(err)
	}
	if string(pt) != v.Plaintext {
		t.Fatalf("plaintext = %q, want %q", pt, v.Plaintext)
	}
}

func TestEncryptRoundTrip(t *testing.T) {
	priv, _ := GenerateKey()
	for _, n := range []int{0, 1, 15, 16, 17, 1000} {
		msg := bytes.Repeat([]byte{'a'}, n)
		e, err := Encrypt(priv.PubKey(), msg)
		if err != nil {
			t.Fatal(err)
		}
		if len(e.EphemPublicKey) != 65 || e.EphemPublicKey[0] != 4 || len(e.IV) != 16 || len(e.MAC) != 32 || len(e.Ciphertext) != (n/16+1)*16 {
			t.Fatalf("n=%d: shape %d %d %d %d", n, len(e.EphemPublicKey), len(e.IV), len(e.MAC), len(e.Ciphertext))
		}
		// Through the JSON string form the server stores.
		back, err := ParseEncrypted(e.String())
		if err != nil {
			t.Fatal(err)
		}
		pt, err := Decrypt(priv, back)
		if err != nil || !bytes.Equal(pt, msg) {
			t.Fatalf("n=%d: %q %v", n, pt, err)
		}
	}
}

func TestDecryptChecksMACFirst(t *testing.T) {
	priv, _ := GenerateKey()
	other, _ := GenerateKey()
	e, _ := Encrypt(priv.PubKey(), []byte("secret"))
	if _, err := Decrypt(other, e); !errors.Is(err, ErrMACMismatch) {
		t.Errorf("wrong key: %v", err)
	}
	for name, mutate := range map[string]func(*Encrypted){
		"iv":         func(e *Encrypted) { e.IV[0] ^= 1 },
		"ciphertext": func(e *Encrypted) { e.Ciphertext[0] ^= 1 },
		"mac":        func(e *Encrypted) { e.MAC[0] ^= 1 },
	} {
		c := *e
		c.IV, c.Ciphertext, c.MAC = bytes.Clone(e.IV), bytes.Clone(e.Ciphertext), bytes.Clone(e.MAC)
		mutate(&c)
		if _, err := Decrypt(priv, &c); !errors.Is(err, ErrMACMismatch) {
			t.Errorf("%s altered: %v", name, err)
		}
	}
	// The Swift vector's ciphertext is not for its signing key: MAC fails.
	swiftPriv, _ := ParsePrivateKeyHex("dda863b615ac6de27fb680b5563db3c19176a6f42cc1dee1768e220983385e3e")
	sw, err := ParseEncrypted(`{"iv":"693407372626b11017d0ec30acd29e6a","ciphertext":"cbe09442851a0463b3e34e2f912c6aee","ephemPublicKey":"0477e20c5d9e3281a4eca7d07c1c4cc9765522ea7966cd7ea8f552da42049778d4fcf44b35b59e84eddb1fa3266350e4f2d69d62da82819d51f107550e03852661","mac":"96d358f46ef371982af600829c101e78f6c5d5f960bd96fdd2ca52763ee50f65"}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decrypt(swiftPriv, sw); !errors.Is(err, ErrMACMismatch) {
		t.Errorf("swift vector: %v", err)
	}
}

func TestDecryptMalformed(t *testing.T) {
	priv, _ := GenerateKey()
	good, _ := Encrypt(priv.PubKey(), []byte("x"))
	cases := []struct {
		name, field string
		mutate      func(*Encrypted)
	}{
		{"short iv", "iv", func(e *Encrypted) { e.IV = e.IV[:8] }},
		{"empty ciphertext", "ciphertext", func(e *Encrypted) { e.Ciphertext = nil }},
		{"ragged ciphertext", "ciphertext", func(e *Encrypted) { e.Ciphertext = e.Ciphertext[:5] }},
		{"short mac", "mac", func(e *Encrypted) { e.MAC = e.MAC[:4] }},
		{"bad ephem", "ephemPublicKey", func(e *Encrypted) { e.EphemPublicKey = []byte{4, 1, 2} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := *good
			c.mutate(&e)
			var fe *FieldError
			if _, err := Decrypt(priv, &e); !errors.As(err, &fe) || fe.Field != c.field {
				t.Fatalf("err = %v, want field %s", err, c.field)
			}
		})
	}
	for _, bad := range []struct{ in, field string }{
		{`{"iv":"00","ephemPublicKey":"00","ciphertext":"00"}`, "mac"},
		{`{"iv":"zz","ephemPublicKey":"00","ciphertext":"00","mac":"00"}`, "iv"},
		{`{"iv":"00","ephemPublicKey":1,"ciphertext":"00","mac":"00"}`, "ephemPublicKey"},
	} {
		var fe *FieldError
		if _, err := ParseEncrypted(bad.in); !errors.As(err, &fe) || fe.Field != bad.field {
			t.Errorf("%s: %v", bad.in, err)
		}
	}
}

func TestKeys(t *testing.T) {
	for _, bad := range []string{"", "00", "zz", "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", "0x" + hex.EncodeToString(make([]byte, 33))} {
		if _, err := ParsePrivateKeyHex(bad); err == nil {
			t.Errorf("ParsePrivateKeyHex(%q) accepted", bad)
		}
	}
	k, err := ParsePrivateKeyHex("0x1")
	if err != nil || PrivateKeyHex(k) != "0000000000000000000000000000000000000000000000000000000000000001" {
		t.Fatalf("short key: %v", err)
	}
	pubHex := PublicKeyHex(k.PubKey())
	if len(pubHex) != 130 || pubHex[:2] != "04" {
		t.Fatalf("pub hex %s", pubHex)
	}
	p, err := ParsePublicKeyHex(pubHex)
	if err != nil || !p.IsEqual(k.PubKey()) {
		t.Fatalf("parse pub: %v", err)
	}
	if _, err := ParsePublicKeyHex("04zz"); err == nil {
		t.Error("bad pub accepted")
	}
}

func FuzzParseEncrypted(f *testing.F) {
	f.Add(`{"iv":"00","ephemPublicKey":"04","ciphertext":"00","mac":"00"}`)
	priv, _ := GenerateKey()
	e, _ := Encrypt(priv.PubKey(), []byte("x"))
	f.Add(e.String())
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEncrypted(s)
		if err != nil {
			return
		}
		_, _ = Decrypt(priv, e)
	})
}
