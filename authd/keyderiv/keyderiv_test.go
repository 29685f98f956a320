package keyderiv_test

import (
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/consensys/gnark-crypto/ecc/bn254/fr"
	"github.com/porticohq/portico/authd/keyderiv"
)

func el(t *testing.T, s string) fr.Element {
	t.Helper()
	x, ok := new(big.Int).SetString(strings.TrimPrefix(s, "0x"), 16)
	if !ok {
		t.Fatalf("bad test number %q", s)
	}
	return keyderiv.Element(x)
}

func hexOf(e fr.Element) string {
	b := e.Bytes()
	return hex.EncodeToString(b[:])
}

// bn254P is the BN254 scalar field modulus in hex.
const bn254P = "30644e72e131a029b85045b68181585d2833e84879b9709143e1f593f0000001"

func plus(s string, d int64) *big.Int {
	x, _ := new(big.Int).SetString(s, 16)
	return x.Add(x, big.NewInt(d))
}

// Published vectors: circomlibjs test/mimcsponge.js (multiHash [1,2] and
// [1,2,3,4], key 0, one output) and the iden3math mimc_sponge tests (three
// outputs, keyed, inputs at and above the modulus).
func TestMultiHashVectors(t *testing.T) {
	s := keyderiv.NewSponge()
	p := func(d int64) fr.Element { return keyderiv.Element(plus(bn254P, d)) }
	ff := el(t, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")
	tests := []struct {
		name string
		in   []fr.Element
		k    fr.Element
		want []string
	}{
		{"circomlibjs [1,2]", []fr.Element{el(t, "1"), el(t, "2")}, el(t, "0"),
			[]string{"2bcea035a1251603f1ceaf73cd4ae89427c47075bb8e3a944039ff1e3d6d2a6f"}},
		{"circomlibjs [1,2,3,4]", []fr.Element{el(t, "1"), el(t, "2"), el(t, "3"), el(t, "4")}, el(t, "0"),
			[]string{"03e86bdc4eac70bd601473c53d8233b145fe8fd8bf6ef25f0b217a1da305665c"}},
		{"iden3math [1,2] 3 outputs", []fr.Element{el(t, "1"), el(t, "2")}, el(t, "0"), []string{
			"2bcea035a1251603f1ceaf73cd4ae89427c47075bb8e3a944039ff1e3d6d2a6f",
			"2f7d340a3c24b8ef9899ab5f019b85b87354c7f6c965a19ca090321f7e5425e9",
			"0cf71423c39e70b9858eaa8e1dc3ac40a09c3927dc31d12014af16066f2bdcb6"}},
		{"iden3math key 9", []fr.Element{el(t, "1"), el(t, "2")}, el(t, "9"), []string{
			"1a18b5636f54e0268de295548e1ddc4ce94f930ccc7ca67422d21cfb43f70a77",
			"10c7e728e6219df6431c1e55c788e777d339815553bd8c2560a628288229286f",
			"1208620a5c351a5a88dfdb6d7386d1069081d21f4cccce630edb0cb7196009c1"}},
		{"iden3math p-1", []fr.Element{p(-1), p(-1)}, p(-1), []string{
			"12af600bcba99cb94f3720cdbf071d86b090bc3571bc9a91d58fc7213e444741",
			"25e469d12f79c571a2ba5c3aac42b32c1b83ff49afab33298abc2184148cac0e",
			"01dab6a98cca214537bf2ca607f3475ce2a5a64b9540dec4b14279b706060cdf"}},
		{"iden3math p, p+1, key p+2", []fr.Element{p(0), p(1)}, p(2), []string{
			"068fac99307e94389058d13efa9b1ff21aaa66fc6bf2fed373f5f1e32bffe2e5",
			"18aeef5dc576db758b5d2acac9a75ddcf0671862f6709f7f0eab822d02031166",
			"151770cf9b1209c4a3fe5fd5ef8f81dd4ab555787d7e5ae7c7e7d976a15763a3"}},
		{"iden3math 0xff..ff", []fr.Element{ff, ff}, ff, []string{
			"19f45c7a923c585cbc59505939367acd7960685fc90d661752b1fccd32ae6fd0",
			"0fa61f33087dfcc04b2d920826e744a85f42dee1f9e019d961cc2bf5342e9b0c",
			"17bfe4bdadbe239c72b96e97fd37f122169137fb1591242060ecac771f10a679"}},
		{"iden3math prime key, output 0", []fr.Element{p(0), p(0)}, p(0), []string{
			"2d9fea8398a61ea1997e7d748364c0fdb49412c4dbabc1578375ade642e85581"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := s.MultiHash(tc.in, tc.k, len(tc.want))
			for i := range tc.want {
				if hexOf(got[i]) != tc.want[i] {
					t.Errorf("output %d = %s, want %s", i, hexOf(got[i]), tc.want[i])
				}
			}
		})
	}
	// iden3math: 220 outputs from (p, p) key p; output 219.
	got := s.MultiHash([]fr.Element{p(0), p(0)}, p(0), 220)
	if want := "0b437ab068775e930f36c52caea8491e1aa1fc5260ce51c03aa261d4d51ff81c"; hexOf(got[219]) != want {
		t.Errorf("output 219 = %s, want %s", hexOf(got[219]), want)
	}
}

// The ed25519 vector is the v6 callback state in web3auth-swift-sdk's tests
// (privKey and ed25519PrivKey of one login).
func TestEd25519Key(t *testing.T) {
	tests := []struct{ name, key, want, err string }{
		{"swift sdk vector", "0baddffe6b63d4ef3bebf65dee3604a8aef702d6bc9cb3cab70844af38e9f6e4",
			"0baddffe6b63d4ef3bebf65dee3604a8aef702d6bc9cb3cab70844af38e9f6e4b135bdb0f9888f4517990b702bab4d4bf153d8e314be41ac7d692e6d0280d271", ""},
		{"unpadded input is padded", "baddffe6b63d4ef3bebf65dee3604a8aef702d6bc9cb3cab70844af38e9f6e4",
			"0baddffe6b63d4ef3bebf65dee3604a8aef702d6bc9cb3cab70844af38e9f6e4b135bdb0f9888f4517990b702bab4d4bf153d8e314be41ac7d692e6d0280d271", ""},
		{"0x prefix", "0x0baddffe6b63d4ef3bebf65dee3604a8aef702d6bc9cb3cab70844af38e9f6e4",
			"0baddffe6b63d4ef3bebf65dee3604a8aef702d6bc9cb3cab70844af38e9f6e4b135bdb0f9888f4517990b702bab4d4bf153d8e314be41ac7d692e6d0280d271", ""},
		{"too long", strings.Repeat("1", 65), "", "key"},
		{"not hex", "zz", "", "key"},
		{"empty", "", "", "key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keyderiv.Ed25519Key(tc.key)
			if tc.err != "" {
				var ie *keyderiv.InputError
				if !errors.As(err, &ie) || ie.Field != tc.err {
					t.Fatalf("err = %v, want InputError on %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// subkeyReference is the subkey written directly from its definition with
// math/big, independent of the fr type and of the sponge's multi-hash path.
func subkeyReference(t *testing.T, key string, clientID []byte) string {
	t.Helper()
	p, _ := new(big.Int).SetString(bn254P, 16)
	n, _ := new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)
	xL := big.NewInt(1)
	xR, _ := new(big.Int).SetString(key, 16)
	xR.Mod(xR, p)
	k := new(big.Int).Mod(new(big.Int).SetBytes(clientID), n)
	cs := referenceConstants(p)
	for i := range keyderiv.Rounds {
		tt := new(big.Int).Add(xL, k)
		tt.Add(tt, cs[i])
		tt.Exp(tt, big.NewInt(5), p)
		if i < keyderiv.Rounds-1 {
			xL, xR = tt.Add(tt, xR).Mod(tt, p), xL
		} else {
			xR = tt.Add(tt, xR).Mod(tt, p)
		}
	}
	return strings.Repeat("0", 64-len(xL.Text(16))) + xL.Text(16)
}

func TestSubkey(t *testing.T) {
	sponge := keyderiv.NewSponge()
	const core = "0baddffe6b63d4ef3bebf65dee3604a8aef702d6bc9cb3cab70844af38e9f6e4"
	// A real client id from the swift SDK's tests (URL-safe alphabet, a
	// 65-byte public key once decoded, so wider than n: it is reduced).
	const clientID = "BJYIrHuzluClBK0vvTBUJ7kQylV_Dj3NA-X1q4Qvxs2Ay3DySkacOpoOb83lDTHJRVY83bFlYtt4p8pQR-oCYtw"
	idBytes, err := keyderiv.ClientIDBytes(clientID)
	if err != nil || len(idBytes) != 65 || idBytes[0] != 0x04 {
		t.Fatalf("client id decoded to %d bytes (%x), %v", len(idBytes), idBytes, err)
	}
	tests := []struct {
		name, key, clientID, err string
	}{
		{"real client id", core, clientID, ""},
		{"standard alphabet and padding", core, "AQID", ""},
		{"short key padded", "1", "AQID", ""},
		{"key above the field", "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364140", clientID, ""},
		{"empty client id", core, "", "clientId"},
		{"bad client id", core, "a*b", "clientId"},
		{"bad key", "xyz", clientID, "coreKitKey"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := keyderiv.Subkey(sponge, tc.key, tc.clientID)
			if tc.err != "" {
				var ie *keyderiv.InputError
				if !errors.As(err, &ie) || ie.Field != tc.err {
					t.Fatalf("err = %v, want InputError on %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			id, _ := keyderiv.ClientIDBytes(tc.clientID)
			if want := subkeyReference(t, tc.key, id); got != want {
				t.Fatalf("subkey %s, reference %s", got, want)
			}
			if len(got) != 64 {
				t.Fatalf("subkey %q is not 64 hex characters", got)
			}
		})
	}
	a, _ := keyderiv.Subkey(sponge, core, "AQID")
	b, _ := keyderiv.Subkey(sponge, core, "AQIE")
	if a == b {
		t.Fatal("two client ids gave the same subkey")
	}
	if c, _ := keyderiv.Subkey(nil, core, "AQID"); c != a {
		t.Fatal("a nil sponge gave another subkey")
	}
}

func referenceConstants(p *big.Int) []*big.Int {
	cs := make([]*big.Int, keyderiv.Rounds)
	cs[0], cs[keyderiv.Rounds-1] = new(big.Int), new(big.Int)
	d := keccak([]byte("mimcsponge"))
	for i := 1; i < keyderiv.Rounds-1; i++ {
		d = keccak(d)
		cs[i] = new(big.Int).Mod(new(big.Int).SetBytes(d), p)
	}
	return cs
}

func TestDerive(t *testing.T) {
	const core = "baddffe6b63d4ef3bebf65dee3604a8aef702d6bc9cb3cab70844af38e9f6e4"
	k, err := keyderiv.Derive(nil, core, "AQID")
	if err != nil {
		t.Fatal(err)
	}
	if k.CoreKitKey != "0"+core {
		t.Errorf("CoreKitKey %s not padded", k.CoreKitKey)
	}
	if !strings.HasPrefix(k.CoreKitEd25519PrivKey, k.CoreKitKey) || !strings.HasSuffix(k.CoreKitEd25519PrivKey, "b135bdb0f9888f4517990b702bab4d4bf153d8e314be41ac7d692e6d0280d271") {
		t.Errorf("CoreKitEd25519PrivKey %s", k.CoreKitEd25519PrivKey)
	}
	if k.PrivKey == k.CoreKitKey || !strings.HasPrefix(k.Ed25519PrivKey, k.PrivKey) || len(k.Ed25519PrivKey) != 128 {
		t.Errorf("PrivKey %s / Ed25519PrivKey %s", k.PrivKey, k.Ed25519PrivKey)
	}
	for _, bad := range []string{"0", "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"} {
		if _, err := keyderiv.Derive(nil, bad, "AQID"); !errors.Is(err, keyderiv.ErrZeroKey) {
			t.Errorf("Derive(%s) err = %v, want ErrZeroKey", bad, err)
		}
	}
}
