package keynet_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/authd/idtoken"
	"github.com/porticohq/portico/authd/keynet"
)

// testVerifier is a custom-JWT verifier the nodes can be built with.
func testVerifier() idtoken.Config {
	return idtoken.Config{Verifier: "test-jwt", TypeOfLogin: "jwt", JWKSURL: "http://127.0.0.1:1/jwks.json", Issuer: "https://issuer.test", Audience: []string{"test"}}
}

// TestHostPort: the address a node's URL names, or why there is none.
func TestHostPort(t *testing.T) {
	for raw, want := range map[string]string{"http://127.0.0.1:8561/": "127.0.0.1:8561", "https://[::1]:9/x": "[::1]:9"} {
		if got, err := keynet.HostPort(raw); got != want || err != nil {
			t.Errorf("%s: %q %v, want %s", raw, got, err, want)
		}
	}
	for _, raw := range []string{"https://node.example/", "not a url", ""} {
		if got, err := keynet.HostPort(raw); err == nil {
			t.Errorf("%s: %q, want an error", raw, got)
		}
	}
}

// TestInitNetwork: a network file with one key per node, node i on
// base-port+i-1, a valid file; refused again without Force, and refused
// without a verifier or with the wrong count of URLs.
func TestInitNetwork(t *testing.T) {
	dir := t.TempDir()
	c := keynet.InitConfig{Nodes: 3, Dir: dir, Network: "sapphire_devnet", Host: "127.0.0.1", BasePort: 8561, Verifier: testVerifier()}
	file, path, err := keynet.InitNetwork(c)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "network.json") || len(file.Network.Nodes) != 3 || file.Network.Nodes[2].URL != "http://127.0.0.1:8563/" {
		t.Fatalf("%s: %+v", path, file.Network)
	}
	loaded, err := keynet.LoadNetworkFile(path)
	if err != nil || loaded.Network.Nodes[1].PublicKey != file.Network.Nodes[1].PublicKey {
		t.Fatalf("load: %v", err)
	}
	if _, err := os.Stat(filepath.Join(keynet.InitNodeDir(dir, 2), keynet.NodeKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := keynet.InitNetwork(c); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("again: %v", err)
	}
	c.Force = true
	again, _, err := keynet.InitNetwork(c)
	if err != nil || again.Network.Nodes[0].PublicKey != file.Network.Nodes[0].PublicKey {
		t.Fatalf("forced: %v (the node keys must be kept)", err)
	}
	bad := c
	bad.Verifier = idtoken.Config{Verifier: "none"}
	if _, _, err := keynet.InitNetwork(bad); err == nil || !strings.Contains(err.Error(), "need a verifier") {
		t.Fatalf("no verifier: %v", err)
	}
	bad = c
	bad.URLs = []string{"http://127.0.0.1:1/"}
	if _, _, err := keynet.InitNetwork(bad); err == nil || !strings.Contains(err.Error(), "--url") {
		t.Fatalf("one URL for three nodes: %v", err)
	}
}

// TestStartProcess: a node of an initialised network serves its health
// check on its URL's port and stops when its context ends; a node whose
// key is not the file's is told of its new key and refused.
func TestStartProcess(t *testing.T) {
	dir := t.TempDir()
	_, path, err := keynet.InitNetwork(keynet.InitConfig{Nodes: 3, Dir: dir, Network: "sapphire_devnet", Host: "127.0.0.1", BasePort: 1, Verifier: testVerifier()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := keynet.StartProcess(ctx, keynet.ProcessConfig{File: path, Index: 2, Listen: "127.0.0.1:0", DataDir: keynet.InitNodeDir(dir, 2)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Wait(ctx) }()
	resp, err := http.Get("http://" + p.Addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok\n" {
		t.Fatalf("/healthz: %s %q", resp.Status, b)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("did not stop")
	}

	var made string
	fresh := filepath.Join(dir, "fresh")
	_, err = keynet.StartProcess(context.Background(), keynet.ProcessConfig{File: path, Index: 2, Listen: "127.0.0.1:0", DataDir: fresh,
		OnNewKey: func(path, pub string) { made = path }})
	if made != filepath.Join(fresh, keynet.NodeKeyFile) || err == nil || !strings.Contains(err.Error(), "network.nodes[1].publicKey") {
		t.Fatalf("new key %q, err %v", made, err)
	}
	if _, err := keynet.StartProcess(context.Background(), keynet.ProcessConfig{File: path, Index: 9, DataDir: fresh}); err == nil || !strings.Contains(err.Error(), "--index 9") {
		t.Fatalf("index 9: %v", err)
	}
}
