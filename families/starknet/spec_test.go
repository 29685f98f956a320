package starknet_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/porticohq/portico/families/starknet"
	"github.com/porticohq/portico/gateway"
)

// specDir holds the rollup spec of the version the family serves.
const specDir = "../../internal/testdata/specs/starknet-0.8.1"

// TestSpecMethods: every method of the spec's read, write, trace,
// WebSocket and executables APIs is served by default, with a cost; the
// subscription notifications are the gateway's to send, and the table
// names no method the spec lacks.
func TestSpecMethods(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(specDir, "*.json"))
	if len(files) != 5 {
		t.Fatalf("%d spec files in %s, want 5", len(files), specDir)
	}
	tb := starknet.Table()
	m, err := gateway.NewMethods(tb, gateway.MethodsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	notifications, unsubscribe := map[string]bool{}, map[string]bool{}
	for _, s := range tb.Subscriptions.Methods {
		notifications[s.Notification] = true
		for _, n := range s.Also {
			notifications[n] = true
		}
		unsubscribe[s.Unsubscribe] = true
	}
	inSpec := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Info    struct{ Version string }
			Methods []struct{ Name string }
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(doc.Info.Version, "0.8") {
			t.Errorf("%s is spec %s", f, doc.Info.Version)
		}
		for _, method := range doc.Methods {
			name := method.Name
			inSpec[name] = true
			switch {
			case notifications[name], unsubscribe[name]:
			case m.Subscription(name) != nil:
				if m.Subscription(name).Cost <= 0 {
					t.Errorf("%s costs nothing", name)
				}
			case m.Lookup(name) == nil:
				t.Errorf("%s (%s) is not served by default", name, filepath.Base(f))
			case m.Lookup(name).Cost <= 0:
				t.Errorf("%s costs nothing", name)
			}
		}
	}
	for _, name := range m.Names() {
		if !inSpec[name] {
			t.Errorf("%s is served but not in the spec", name)
		}
	}
	for _, w := range tb.Writes {
		if !slices.Contains(tb.DefaultAllow, w) {
			t.Errorf("write %s is not in the list", w)
		}
	}
}
