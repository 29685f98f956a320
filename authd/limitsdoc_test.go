package authd

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico/auth/sessionapi"
	"github.com/porticohq/portico/authd/login"
	"github.com/porticohq/portico/authd/sessionserver"
)

// human writes a default as the docs table does.
func human(v any) string {
	switch x := v.(type) {
	case time.Duration:
		switch {
		case x%time.Hour == 0:
			return fmt.Sprintf("%d h", x/time.Hour)
		case x%time.Minute == 0:
			return fmt.Sprintf("%d min", x/time.Minute)
		}
		return x.String()
	case bytesize:
		switch {
		case x%(1<<20) == 0:
			return fmt.Sprintf("%d MiB", x>>20)
		case x%(1<<10) == 0:
			return fmt.Sprintf("%d KiB", x>>10)
		}
		return fmt.Sprint(int64(x))
	case seconds:
		return fmt.Sprintf("%d s", x)
	}
	return fmt.Sprint(v)
}

type (
	bytesize int64
	seconds  int
)

// The table of limits in docs/auth.md lists every limit with the default
// the code has, and nothing else.
func TestLimitsTableDocumented(t *testing.T) {
	l, sl := login.DefaultLimits(), sessionserver.DefaultLimits()
	want := map[string]any{
		"login.Config.MaxFlows":            login.DefaultMaxFlows,
		"login.Config.FlowTTL":             login.DefaultFlowTTL,
		"login.Limits.FlowsPerClient":      l.FlowsPerClient,
		"login.Limits.StartsPerClient":     l.StartsPerClient,
		"login.Limits.Window":              l.Window,
		"login.Limits.CodesPerEmail":       l.CodesPerEmail,
		"login.Limits.CodesCeiling":        l.CodesCeiling,
		"login.Limits.CodesPerClient":      l.CodesPerClient,
		"login.Limits.CodeFailures":        l.CodeFailures,
		"login.Limits.CodeFailuresCeiling": l.CodeFailuresCeiling,
		"login.Limits.PasswordFailures":    l.PasswordFailures,
		"login.Limits.BackoffBase":         l.BackoffBase,
		"login.Limits.BackoffMax":          l.BackoffMax,
		"login.Limits.KDFConcurrency":      l.KDFConcurrency,
		"login.Limits.MaxTracked":          l.MaxTracked,
		"login.Passwordless.CodeTTL":       login.DefaultCodeTTL,
		"login.Passwordless.MaxAttempts":   login.DefaultMaxAttempts,
		"sessionserver.Limits.Window":      sl.Window,
		"sessionserver.Limits.Writes":      sl.Writes,
		"sessionserver.Limits.Reads":       sl.Reads,
		"sessionserver.Limits.StoredBytes": bytesize(sl.StoredBytes),
		"sessionserver.Limits.MaxClients":  sl.MaxClients,
		"sessionapi.MaxBodyBytes":          bytesize(sessionapi.MaxBodyBytes),
		"sessionapi.MaxDataBytes":          bytesize(sessionapi.MaxDataBytes),
		"sessionapi.MaxTimeout":            seconds(sessionapi.MaxTimeout),
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "auth.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### Limits and their defaults")
	section, _, _ = strings.Cut(section, "\n### ")
	if !ok {
		t.Fatal("docs/auth.md: no section \"Limits and their defaults\"")
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z.]+)` \\| ([^|]+) \\|")
	seen := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		name, got := m[1], strings.TrimSpace(m[2])
		v, ok := want[name]
		if !ok {
			t.Errorf("docs/auth.md lists %s, which is not a limit", name)
			continue
		}
		seen[name] = true
		if h := human(v); h != got {
			t.Errorf("docs/auth.md: %s = %s, the code's default is %s", name, got, h)
		}
	}
	for name, v := range want {
		if !seen[name] {
			t.Errorf("docs/auth.md lacks the row | `%s` | %s |", name, human(v))
		}
	}
}
