package keynet_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/auth/eccrypto"
	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/keynet"
)

// testFile is a valid network file of n nodes and the nodes' keys.
func testFile(t *testing.T, n int) (keynet.NetworkFile, []string) {
	t.Helper()
	f := keynet.NetworkFile{
		Network: keynet.NetworkConfig{Name: "sapphire_devnet"},
		Verifiers: []idtoken.Config{{Verifier: "portico-jwt", TypeOfLogin: "jwt", JWKSURL: "https://issuer.test/jwks.json",
			Issuer: "https://issuer.test", Audience: []string{"portico-app"}, Leeway: 60, VerifierIDField: "email"}},
		DKGTimeout: keynet.Duration(20 * time.Second),
	}
	var keys []string
	for i := 1; i <= n; i++ {
		k, err := eccrypto.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, eccrypto.PrivateKeyHex(k))
		f.Network.Nodes = append(f.Network.Nodes, keynet.Peer{Index: i, URL: "http://127.0.0.1:" + string(rune('0'+i)) + "000/", PublicKey: keynet.NodePublicKeyHex(k)})
	}
	return f, keys
}

func TestNetworkFileRoundTrip(t *testing.T) {
	f, keys := testFile(t, 5)
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"dkgTimeout": "20s"`) || strings.Contains(string(b), "commitmentTTL") {
		t.Fatalf("durations are not written as strings, or zero ones are written:\n%s", b)
	}
	got, err := keynet.ParseNetworkFile(b, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	key, _ := eccrypto.ParsePrivateKeyHex(keys[2])
	cfg := got.NodeConfig(3, key)
	if cfg.Index != 3 || cfg.SigningKey != keys[2] || cfg.DKGTimeout != 20*time.Second || len(cfg.Verifiers) != 1 || len(cfg.Network.Nodes) != 5 {
		t.Fatalf("node config: %+v", cfg)
	}
	st, err := keynet.OpenSQLite(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := keynet.NewNode(cfg, st, keynet.NodeOptions{})
	if err != nil {
		t.Fatalf("a node from the file: %v", err)
	}
	_ = n.Close()
}

func TestNetworkFileEnv(t *testing.T) {
	src := `{"network": {"name": "${NET}", "nodes": []}, "verifiers": []}`
	_, err := keynet.ParseNetworkFile([]byte(src), func(string) (string, bool) { return "", false })
	var ce *keynet.ConfigError
	if !errors.As(err, &ce) || ce.Field != "${NET}" {
		t.Fatalf("unset variable: %v", err)
	}
	f, _ := testFile(t, 3)
	f.Verifiers[0].JWKSURL = "${JWKS}"
	b, _ := f.Marshal()
	got, err := keynet.ParseNetworkFile(b, func(name string) (string, bool) { return "https://keys.test/a\"b", name == "JWKS" })
	if err != nil {
		t.Fatal(err)
	}
	if got.Verifiers[0].JWKSURL != `https://keys.test/a"b` {
		t.Fatalf("expanded to %q", got.Verifiers[0].JWKSURL)
	}
}

// TestNetworkFileErrors: each bad file is refused with the path of the
// field to fix.
func TestNetworkFileErrors(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(m map[string]any)
		raw   string
		field string
	}{
		{name: "empty file", raw: "", field: "file"},
		{name: "syntax", raw: "{\n  \"network\": {,\n}", field: "line 2 column 15"},
		{name: "trailing data", raw: "{} {}", field: "file"},
		{name: "unknown field", edit: func(m map[string]any) { m["signingKey"] = "00" }, field: "file"},
		{name: "wrong type", edit: func(m map[string]any) { m["verifiers"] = "x" }, field: "verifiers"},
		{name: "bad duration", edit: func(m map[string]any) { m["dkgTimeout"] = "soon" }, field: "file"},
		{name: "negative duration", edit: func(m map[string]any) { m["tokenMemory"] = "-1s" }, field: "tokenMemory"},
		{name: "no name", edit: func(m map[string]any) { netOf(m)["name"] = "" }, field: "network.name"},
		{name: "unknown network", edit: func(m map[string]any) { netOf(m)["name"] = "moon" }, field: "network.name"},
		{name: "no nodes", edit: func(m map[string]any) { netOf(m)["nodes"] = []any{} }, field: "network.nodes"},
		{name: "index twice", edit: func(m map[string]any) { nodeOf(m, 1)["index"] = 1.0 }, field: "network.nodes[1].index"},
		{name: "bad url", edit: func(m map[string]any) { nodeOf(m, 2)["url"] = "ftp://x" }, field: "network.nodes[2].url"},
		{name: "url twice", edit: func(m map[string]any) { nodeOf(m, 2)["url"] = nodeOf(m, 0)["url"] }, field: "network.nodes[2].url"},
		{name: "bad public key", edit: func(m map[string]any) { nodeOf(m, 0)["publicKey"] = "04zz" }, field: "network.nodes[0].publicKey"},
		{name: "public key twice", edit: func(m map[string]any) { nodeOf(m, 1)["publicKey"] = nodeOf(m, 0)["publicKey"] }, field: "network.nodes[1].publicKey"},
		{name: "no verifiers", edit: func(m map[string]any) { m["verifiers"] = []any{} }, field: "verifiers"},
		{name: "verifier without issuer", edit: func(m map[string]any) { verifierOf(m)["issuer"] = "" }, field: "verifiers[0].issuer"},
		{name: "verifier leeway", edit: func(m map[string]any) { verifierOf(m)["leeway"] = 7200.0 }, field: "verifiers[0].leeway"},
		{name: "verifier twice", edit: func(m map[string]any) {
			m["verifiers"] = append(m["verifiers"].([]any), verifierOf(m))
		}, field: "verifiers[1].verifier"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := []byte(tc.raw)
			if tc.edit != nil {
				f, _ := testFile(t, 3)
				b, _ := f.Marshal()
				var m map[string]any
				if err := json.Unmarshal(b, &m); err != nil {
					t.Fatal(err)
				}
				tc.edit(m)
				raw, _ = json.Marshal(m)
			}
			_, err := keynet.ParseNetworkFile(raw, func(string) (string, bool) { return "", false })
			var ce *keynet.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("got %v, want an error naming %q", err, tc.field)
			}
		})
	}
}

func netOf(m map[string]any) map[string]any { return m["network"].(map[string]any) }

func nodeOf(m map[string]any, i int) map[string]any {
	return netOf(m)["nodes"].([]any)[i].(map[string]any)
}

func verifierOf(m map[string]any) map[string]any { return m["verifiers"].([]any)[0].(map[string]any) }

func TestNodeKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "node1", keynet.NodeKeyFile)
	k, created, err := keynet.LoadOrCreateNodeKey(path)
	if err != nil || !created {
		t.Fatalf("create: %v, created %v", err, created)
	}
	fi, err := os.Stat(path)
	if err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600) {
		t.Fatalf("key file mode: %v %v", fi.Mode(), err)
	}
	again, created, err := keynet.LoadOrCreateNodeKey(path)
	if err != nil || created || !again.PubKey().IsEqual(k.PubKey()) {
		t.Fatalf("reload: %v, created %v", err, created)
	}
	if err := keynet.WriteNodeKey(path, k); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("overwrite: %v", err)
	}
	if runtime.GOOS != "windows" {
		if err := os.Chmod(path, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := keynet.ReadNodeKey(path); !errors.Is(err, keynet.ErrKeyFileMode) {
			t.Fatalf("a world-readable key: %v", err)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.key")
	if err := os.WriteFile(bad, []byte("secret-but-not-hex\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := keynet.ReadNodeKey(bad); err == nil || strings.Contains(err.Error(), "secret-but-not-hex") {
		t.Fatalf("bad key: %v", err)
	}
}

func TestWithCommitmentQuorum(t *testing.T) {
	f, _ := testFile(t, 5)
	c, err := keynet.NewClient(f.Network, nil)
	if err != nil {
		t.Fatal(err)
	}
	for q, ok := range map[int]bool{2: false, 3: true, 5: true, 6: false} {
		if _, err := c.WithCommitmentQuorum(q); (err == nil) != ok {
			t.Errorf("quorum %d: %v", q, err)
		}
	}
}
