package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/auth"
	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/internal/authtest"
	"github.com/porticohq/portico/internal/testsvc"
)

// authServe runs `portico auth serve args…` in-process until the test ends
// and returns its base URL.
func authServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"auth", "serve", "--listen", "127.0.0.1:0"}, args...), stdout, stderr)
	}()
	stop := func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("auth serve: %v\n%s", err, stderr)
			}
		case <-time.After(15 * time.Second):
			t.Error("auth serve did not stop")
		}
	}
	re := regexp.MustCompile(`serving the session server on (http://\S+)/`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			t.Cleanup(stop)
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("auth serve exited: %v\n%s", err, stderr)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("auth serve did not start\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A login through `portico auth serve` survives a restart of the server
// (the records are in the data directory or PostgreSQL).
func TestAuthServeLogin(t *testing.T) {
	dataDir := t.TempDir()
	backends := map[string]func() []string{
		"sqlite":   func() []string { return []string{"--data-dir", dataDir} },
		"postgres": func() []string { return []string{"--postgres", testsvc.Postgres(t), "--node-key-dir", t.TempDir()} },
	}
	for name, args := range backends {
		t.Run(name, func(t *testing.T) {
			a := args()
			base := authServe(t, a...)
			resp, err := http.Get(base + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("healthz %s", resp.Status)
			}
			storage := &auth.FileStorage{Dir: t.TempDir()}
			pages := &authtest.Pages{Sessions: &sessionapi.Client{BaseURL: base}}
			params := auth.InitParams{ClientID: "cG9ydGljbw", Network: auth.SapphireMainnet, SDKURL: base}
			ctx := context.Background()
			sdk, err := auth.New(ctx, params, auth.WithStorage(storage), auth.WithBrowser(pages.Open))
			if err != nil {
				t.Fatal(err)
			}
			st, err := sdk.Login(ctx, auth.LoginParams{LoginProvider: auth.Discord})
			if err != nil {
				t.Fatal(err)
			}

			// A second server on the same storage sees the session.
			base2 := authServe(t, a...)
			pages.Sessions.BaseURL = base2
			params.SDKURL = base2
			again, err := auth.New(ctx, params, auth.WithStorage(storage))
			if err != nil {
				t.Fatal(err)
			}
			if got := again.State(); got == nil || got.PrivKey != st.PrivKey {
				t.Fatalf("session not restored through a second server: %+v", got)
			}
			if err := again.Logout(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestAuthServeRejectsLongTimeout(t *testing.T) {
	base := authServe(t)
	body := `{"key":"04` + strings.Repeat("ab", 64) + `","data":"{}","signature":"{}","timeout":604801}`
	resp, err := http.Post(base+"/store/set", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("%s %s", resp.Status, b)
	}
}

func TestAuthMigrate(t *testing.T) {
	dir := filepath.Join("..", "..", "auth", "testdata", "migrate")
	inputs, _ := filepath.Glob(filepath.Join(dir, "*.v6.json"))
	if len(inputs) == 0 {
		t.Fatal("no inputs")
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(in, ".v6.json")
		t.Run(filepath.Base(name), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), []string{"auth", "migrate", in}, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			for file, got := range map[string][]byte{name + ".v7.json": stdout.Bytes(), name + ".report.txt": stderr.Bytes()} {
				want, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s:\n%s\nwant\n%s", file, got, want)
				}
			}
		})
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	_ = os.WriteFile(bad, []byte(`{"clientId":"c","network":"mainnet","whiteLabel":{"defaultLanguage":"it"}}`), 0o600)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"auth", "migrate", bad}, &stdout, &stderr)
	var me *auth.MigrationError
	if !errors.As(err, &me) || me.Field != "whiteLabel.defaultLanguage" || stdout.Len() != 0 {
		t.Fatalf("err = %v, stdout %q", err, stdout.String())
	}
}
