package authd

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDevClient: `portico serve` registers a dev client that takes the
// SDK's loopback callbacks on any port and nothing else.
func TestDevClient(t *testing.T) {
	c := DevClient()
	if c.ID != DevClientID || c.Validate() != nil || !(&c).AllowsRedirect("http://127.0.0.1:40123/callback/0a1b") || (&c).AllowsRedirect("https://evil.example/cb") {
		t.Fatalf("dev client %+v", c)
	}
}

// TestNodeKeyDirBeside: the node keys go beside the data directory, not
// in it; a given directory wins; keys at the old place inside the data
// directory are moved out, or left (with a warning) when the new place
// already has keys.
func TestNodeKeyDirBeside(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if got, err := NodeKeyDirBeside("", "", log); got != "" || err != nil {
		t.Fatalf("no data dir: %q %v", got, err)
	}
	if got, err := NodeKeyDirBeside(t.TempDir(), "/keys", log); got != "/keys" || err != nil {
		t.Fatalf("given: %q %v", got, err)
	}
	data := filepath.Join(t.TempDir(), "data")
	old := filepath.Join(data, "auth.node-keys")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "k"), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := NodeKeyDirBeside(data, "", log)
	if err != nil || got != data+".node-keys" {
		t.Fatalf("beside: %q %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(got, "k")); err != nil || string(b) != "key" {
		t.Fatalf("the old keys were not moved: %q %v", b, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("the old place is still there: %v", err)
	}
	// Both places: the new one is used, the old one left alone.
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if again, err := NodeKeyDirBeside(data, "", log); err != nil || again != got {
		t.Fatalf("both: %q %v", again, err)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("the old place was touched: %v", err)
	}
}

// TestOpenClients: the registry needs a place; in a data directory it is
// the auth server's own database.
func TestOpenClients(t *testing.T) {
	ctx := context.Background()
	if _, err := OpenClients(ctx, "", ""); err == nil || !strings.Contains(err.Error(), "--data-dir or --postgres") {
		t.Fatalf("no place: %v", err)
	}
	dir := t.TempDir()
	db, err := OpenClients(ctx, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := os.Stat(filepath.Join(dir, DatabaseFile)); err != nil {
		t.Fatal(err)
	}
}

// TestListenBesideGateway: beside a gateway on port 0 the auth server
// takes port 0 too, keeps its state under the data directory's auth/,
// serves its front page, and closes.
func TestListenBesideGateway(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	a, err := ListenBesideGateway(context.Background(), BesideGateway{GatewayListen: "127.0.0.1:0", DataDir: data}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(a.URL, ":8550") {
		t.Errorf("listens on %s, want a free port", a.URL)
	}
	resp, err := http.Get(a.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("front page: %s", resp.Status)
	}
	if _, err := os.Stat(filepath.Join(data, "auth", DatabaseFile)); err != nil {
		t.Errorf("state not under auth/: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Wait(ctx); err != nil {
		t.Fatalf("Wait once ctx ended: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(a.URL + "/"); err == nil {
		t.Fatal("still serving after Close")
	}
}
