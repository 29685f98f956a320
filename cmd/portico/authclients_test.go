package main

import (
	"context"
	"strings"
	"testing"

	"github.com/porticohq/portico/internal/testsvc"
)

// runOK runs a portico command in-process and returns its stdout.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	if err := run(context.Background(), args, stdout, stderr); err != nil {
		t.Fatalf("portico %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout.String()
}

// `portico auth clients add|list|remove` manage the registry in the auth
// server's own database, SQLite or PostgreSQL.
func TestAuthClientsCommands(t *testing.T) {
	for name, where := range map[string][]string{
		"sqlite":   {"--data-dir", t.TempDir()},
		"postgres": {"--postgres", testsvc.Postgres(t)},
	} {
		t.Run(name, func(t *testing.T) {
			out := runOK(t, append([]string{"auth", "clients", "add", "my-app", "--redirect-url", "https://app.example/cb",
				"--redirect-url", "http://127.0.0.1/callback/", "--origin", "https://app.example", "--name", "My app"}, where...)...)
			if !strings.Contains(out, "registered client my-app") {
				t.Fatalf("add: %s", out)
			}
			out = runOK(t, append([]string{"auth", "clients", "list"}, where...)...)
			if !strings.Contains(out, "my-app") || !strings.Contains(out, "https://app.example/cb http://127.0.0.1/callback/") {
				t.Fatalf("list: %s", out)
			}
			runOK(t, append([]string{"auth", "clients", "remove", "my-app"}, where...)...)
			if out := runOK(t, append([]string{"auth", "clients", "list"}, where...)...); strings.Contains(out, "my-app") {
				t.Fatalf("after remove: %s", out)
			}
			stderr := &lockedBuffer{}
			err := run(context.Background(), append([]string{"auth", "clients", "add", "bad", "--redirect-url", "javascript:alert(1)"}, where...), &lockedBuffer{}, stderr)
			if err == nil || !strings.Contains(err.Error(), "redirectUrls[0]") {
				t.Fatalf("a script redirect was registered: %v", err)
			}
		})
	}
	if err := run(context.Background(), []string{"auth", "clients", "list"}, &lockedBuffer{}, &lockedBuffer{}); err == nil || !strings.Contains(err.Error(), "--data-dir or --postgres") {
		t.Fatalf("without a store: %v", err)
	}
}
