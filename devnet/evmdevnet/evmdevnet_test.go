package evmdevnet_test

import (
	"bufio"
	"context"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/go-json-experiment/json/jsontext"
	"io"
	"net/http"

	"github.com/porticohq/portico/devnet/evmdevnet"
)

func start(t *testing.T, cfg evmdevnet.Config) *evmdevnet.Devnet {
	t.Helper()
	d, err := evmdevnet.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestEveryTransactionType sends a round of traffic, seals it and finds one
// transaction of each type 0 to 4 and the storage contract in the chain.
func TestEveryTransactionType(t *testing.T) {
	d := start(t, evmdevnet.Config{BlockPeriod: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hashes, err := d.SendTraffic(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	ec, err := ethclient.DialContext(ctx, d.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	seen := map[uint8]bool{}
	for _, h := range hashes {
		tx, pending, err := ec.TransactionByHash(ctx, h)
		if err != nil || pending {
			t.Fatalf("tx %s: pending %v, %v", h, pending, err)
		}
		rc, err := ec.TransactionReceipt(ctx, h)
		if err != nil || rc.Status != 1 {
			t.Fatalf("receipt %s: %+v %v", h, rc, err)
		}
		seen[tx.Type()] = true
	}
	for ty := uint8(0); ty <= 4; ty++ {
		if !seen[ty] {
			t.Errorf("no transaction of type %d", ty)
		}
	}
	v, err := ec.StorageAt(ctx, d.StorageContract(), common.Hash{}, nil)
	if err != nil || new(big.Int).SetBytes(v).Int64() != 42 {
		t.Fatalf("slot 0 = %x, %v", v, err)
	}
	// A second round works too (nonces advance, the contract is not
	// deployed twice).
	if _, err := d.SendTraffic(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestImportConformanceChain starts from the Ethereum conformance suite's
// genesis and chain and replays the recorded eth_getProof and
// eth_getTransactionByBlockHashAndIndex exchanges against the node.
func TestImportConformanceChain(t *testing.T) {
	dir := "../../testdata/fixtures/evm"
	d := start(t, evmdevnet.Config{
		BlockPeriod: -1,
		GenesisFile: filepath.Join(dir, "genesis.json"),
		ChainRLP:    filepath.Join(dir, "chain.rlp"),
	})
	files, _ := filepath.Glob(filepath.Join(dir, "tests", "eth_get*", "*.io"))
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		var req string
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, ">> ") {
				req = line[3:]
			}
			if strings.HasPrefix(line, "<< ") {
				resp, err := http.Post(d.HTTPURL(), "application/json", strings.NewReader(req))
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if canon(got) != canon([]byte(line[3:])) {
					t.Errorf("%s:\nrequest %s\n got %.400s\nwant %.400s", filepath.Base(f), req, got, line[3:])
				}
			}
		}
		fh.Close()
	}
}

// TestDataDirPersists closes a devnet and reopens its data directory.
func TestDataDirPersists(t *testing.T) {
	dir := t.TempDir()
	d1, err := evmdevnet.New(evmdevnet.Config{DataDir: dir, BlockPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := d1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h1, err := d1.Commit()
	if err != nil {
		t.Fatal(err)
	}
	d1.Close()
	d2 := start(t, evmdevnet.Config{DataDir: dir, BlockPeriod: -1})
	ec, err := ethclient.Dial(d2.HTTPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	head, err := ec.HeaderByNumber(context.Background(), nil)
	if err != nil || head.Hash() != h1 {
		t.Fatalf("head %v after restart, want %s (%v)", head.Hash(), h1, err)
	}
}

func canon(b []byte) string {
	v := jsontext.Value(append([]byte(nil), b...))
	if err := v.Canonicalize(); err != nil {
		return "invalid: " + string(b)
	}
	return string(v)
}
