package evmverify_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

var update = flag.Bool("update", false, "rewrite the recorded node answers in testdata/")

// goldenBlocks are the fixture chain's blocks whose answers are
// recorded: block 5 (legacy transactions with logs) and block 45
// (transactions of types 0, 2, 3 and 4). Fuzz targets and benchmarks
// start from them without a node.
var goldenBlocks = []int{5, 45}

func goldenPath(kind string, n int) string {
	return filepath.Join("testdata", fmt.Sprintf("%s%d.json", kind, n))
}

// TestRecordedAnswers keeps the recorded answers equal to what the node
// answers now (-update rewrites them).
func TestRecordedAnswers(t *testing.T) {
	fc := loadFixture(t)
	node := fixtureNode(t)
	answers := map[string][]byte{}
	for _, n := range goldenBlocks {
		b := fc.blocks[n-1]
		answers[goldenPath("block", n)] = call(t, node, "eth_getBlockByHash", b.Hash(), true)
		answers[goldenPath("receipts", n)] = call(t, node, "eth_getBlockReceipts", b.Hash())
	}
	for path, raw := range answers {
		if *update {
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(want) != string(raw) {
			t.Fatalf("%s differs from the node's answer (go test -run RecordedAnswers -update)", path)
		}
	}
}

// readGolden returns the recorded block and receipts of block n.
func readGolden(t testing.TB, n int) (block, receipts []byte, hash common.Hash) {
	t.Helper()
	block, err := os.ReadFile(goldenPath("block", n))
	if err != nil {
		t.Fatal(err)
	}
	receipts, err = os.ReadFile(goldenPath("receipts", n))
	if err != nil {
		t.Fatal(err)
	}
	return block, receipts, loadFixture(t).blocks[n-1].Hash()
}
