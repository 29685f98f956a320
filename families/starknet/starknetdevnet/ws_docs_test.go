package starknetdevnet

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// docTable returns the rows of the first Markdown table after heading in
// the text, as cells.
func docTable(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, heading)
	if !ok {
		t.Fatalf("no %q in the doc", heading)
	}
	var rows [][]string
	for _, line := range strings.Split(rest, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		rows = append(rows, cells)
	}
	return rows[1:] // without the header row
}

// TestWSDocs keeps docs/starknet-devnet.md's WebSocket tables and the code
// in step: the methods with their notifications, and the errors with their
// codes and messages.
func TestWSDocs(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/starknet-devnet.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)

	var documented, served []string
	notifications := map[string]string{
		"starknet_subscribeNewHeads":            notifyNewHeads,
		"starknet_subscribeEvents":              notifyEvents,
		"starknet_subscribeTransactionStatus":   notifyTxStatus,
		"starknet_subscribePendingTransactions": notifyPendingTx,
		"starknet_unsubscribe":                  "",
	}
	for _, row := range docTable(t, doc, "## WebSocket subscriptions") {
		m, n := strings.Trim(row[0], "`"), strings.Trim(row[2], "`")
		documented = append(documented, m)
		if want, ok := notifications[m]; !ok || n != want {
			t.Errorf("doc: %s sends %q, the code %q", m, n, want)
		}
	}
	for m := range methods {
		if strings.HasPrefix(m, "starknet_subscribe") || m == "starknet_unsubscribe" {
			served = append(served, m)
		}
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("doc lists %v, the devnet serves %v", documented, served)
	}

	want := map[int]string{}
	for _, e := range []*SpecError{ErrBlockNotFound, ErrTooManyKeys, ErrInvalidSubscriptionID, ErrTooManyAddresses, ErrTooManyBlocksBack} {
		want[e.Code] = e.Message
	}
	for _, err := range []error{jsonrpc.ErrNoConnection, &portico.LimitError{Limit: portico.LimitSubscriptions, Max: int64(connLimits.MaxSubscriptions)}} {
		e, _, _ := jsonrpc.ErrorFor(err)
		want[e.Code] = e.Message
	}
	got := map[int]string{}
	_, rest, _ := strings.Cut(doc, "## WebSocket subscriptions")
	for _, row := range docTable(t, rest, "Errors:") {
		code, err := strconv.Atoi(row[0])
		if err != nil {
			t.Fatalf("error row %v", row)
		}
		got[code] = row[1]
	}
	for code, msg := range want {
		if got[code] != msg {
			t.Errorf("doc: %d is %q, the code says %q", code, got[code], msg)
		}
	}
	for code := range got {
		if _, ok := want[code]; !ok {
			t.Errorf("doc lists %d, which the WebSocket API does not return", code)
		}
	}
}
