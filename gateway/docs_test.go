package gateway_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/porticohq/portico/gateway"
)

// TestErrorsDoc keeps docs/errors.md in step with the codes the gateway
// answers with: every code constant has a row with its HTTP status.
func TestErrorsDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		code   int
		status string
	}{
		{gateway.CodeUnauthorized, "401"},
		{gateway.CodeLimitExceeded, "429"},
		{gateway.CodeForbidden, "403"},
		{gateway.CodeMeteringDown, "503"},
		{gateway.CodeBodyTooLarge, "413"},
		{gateway.CodeBatchTooLarge, "413"},
		{gateway.CodeTooManyConns, "503"},
		{gateway.CodeUpstreamDown, "502"},
		{gateway.CodeUpstreamTimeout, "504"},
		{gateway.CodeClientTimeout, "408"},
		{gateway.CodeNetworkUnknown, "404"},
		{gateway.CodeWrongContentType, "415"},
		{gateway.CodeMethodNotAllowed, "405"},
		{gateway.CodeWSMessageTooLarge, "—"},
		{gateway.CodeHeadersTooLarge, "431"},
	}
	for _, r := range rows {
		if row := fmt.Sprintf("| %d | %s |", r.code, r.status); !strings.Contains(string(doc), row) {
			t.Errorf("docs/errors.md has no row %q", row)
		}
	}
}
