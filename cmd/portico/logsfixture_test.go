//go:build portico_fixtures

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common/hexutil"
)

// TestLogsChainFixture writes logsFixture again from a chain built anew:
//
//	go test -tags portico_fixtures ./cmd/portico -run TestLogsChainFixture
func TestLogsChainFixture(t *testing.T) {
	node, _ := buildLogsChain(t)
	// anvil_dumpState answers the state anvil --load-state reads, as
	// gzip in hex.
	var dump hexutil.Bytes
	if err := logsRPC(node.URL(), "anvil_dumpState", `[]`, &dump); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(logsFixture), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logsFixture, dump, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d bytes", logsFixture, len(dump))
}
