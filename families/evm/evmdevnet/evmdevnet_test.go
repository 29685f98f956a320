package evmdevnet_test

import (
	"bufio"
	"context"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/go-json-experiment/json/jsontext"
	"go.uber.org/goleak"

	"github.com/porticohq/portico/families/evm/evmdevnet"
)

// fixtures is the Ethereum conformance suite's chain (a copy of
// shared/fixtures/evm kept in the repository).
const fixtures = "../../../internal/testdata/fixtures/evm"

// fixtureHead is the hash of block 54, the head of the fixture chain.
var fixtureHead = common.HexToHash("0xd226371d0b1551adb03fb52b71f08e3e11247fe9b1af994768af8cdaa8e7dcd7")

// TestMain fails the package if a devnet leaves a goroutine behind. Two are
// not ours to stop: go-ethereum's process-wide sender cache, and goleveldb's
// pool drainer, which lingers up to a second after its database (the p2p
// node database) is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/ethereum/go-ethereum/core.(*txSenderCacher).cache"),
		goleak.IgnoreTopFunction("github.com/syndtr/goleveldb/leveldb.(*DB).mpoolDrain"),
	)
}

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

func dial(t *testing.T, url string) *ethclient.Client {
	t.Helper()
	ec, err := ethclient.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ec.Close)
	return ec
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
	ec := dial(t, d.HTTPURL())
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

// TestTrafficLoop runs the devnet as `portico serve` does, sealing on a
// timer with traffic on, and watches new heads over WebSocket until blocks
// have carried every transaction type.
func TestTrafficLoop(t *testing.T) {
	d := start(t, evmdevnet.Config{BlockPeriod: time.Second, Traffic: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ec := dial(t, d.WSURL())
	heads := make(chan *types.Header, 16)
	sub, err := ec.SubscribeNewHead(ctx, heads)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	seen := map[uint8]bool{}
	for len(seen) < 5 {
		select {
		case h := <-heads:
			b, err := ec.BlockByHash(ctx, h.Hash())
			if err != nil {
				t.Fatal(err)
			}
			for _, tx := range b.Transactions() {
				seen[tx.Type()] = true
			}
		case err := <-sub.Err():
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatalf("saw only transaction types %v", seen)
		}
	}
}

// TestImportConformanceChain starts from the conformance suite's genesis and
// chain, replays the recorded exchanges of the eth_get* methods against the
// node, then seals a block on top of the imported head.
func TestImportConformanceChain(t *testing.T) {
	d := start(t, evmdevnet.Config{
		BlockPeriod: -1,
		GenesisFile: filepath.Join(fixtures, "genesis.json"),
		ChainRLP:    filepath.Join(fixtures, "chain.rlp"),
	})
	files, _ := filepath.Glob(filepath.Join(fixtures, "tests", "eth_get*", "*.io"))
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			replay(t, d.HTTPURL(), f)
		})
	}

	ec := dial(t, d.HTTPURL())
	ctx := context.Background()
	head, err := ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if head.Hash() != fixtureHead {
		t.Fatalf("head %s, want %s", head.Hash(), fixtureHead)
	}
	h, err := d.Commit()
	if err != nil {
		t.Fatal(err)
	}
	next, err := ec.HeaderByHash(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if next.ParentHash != fixtureHead || next.Number.Uint64() != 55 {
		t.Fatalf("sealed block %d on %s, want 55 on the fixture head", next.Number, next.ParentHash)
	}
}

// replay sends each ">> " request line of an .io file and compares the
// response with the "<< " line that follows, as JSON values.
func replay(t *testing.T, url, file string) {
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	var req string
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, ">> ") {
			req = line[3:]
		}
		if !strings.HasPrefix(line, "<< ") {
			continue
		}
		resp, err := http.Post(url, "application/json", strings.NewReader(req))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if canon(got) != canon([]byte(line[3:])) {
			t.Errorf("request %s\n got %.400s\nwant %.400s", req, got, line[3:])
		}
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
	if err := d1.Close(); err != nil {
		t.Fatal(err)
	}
	d2 := start(t, evmdevnet.Config{DataDir: dir, BlockPeriod: -1})
	head, err := dial(t, d2.HTTPURL()).HeaderByNumber(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if head.Hash() != h1 {
		t.Fatalf("head %s after restart, want %s", head.Hash(), h1)
	}
}

// TestImportRestart imports the fixture chain into a data directory, then
// reopens it with the same configuration: the blocks already there are
// skipped and the head is kept.
func TestImportRestart(t *testing.T) {
	cfg := evmdevnet.Config{
		DataDir:     t.TempDir(),
		BlockPeriod: -1,
		GenesisFile: filepath.Join(fixtures, "genesis.json"),
		ChainRLP:    filepath.Join(fixtures, "chain.rlp"),
	}
	for i := range 2 {
		d, err := evmdevnet.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Start(context.Background()); err != nil {
			d.Close()
			t.Fatalf("start %d: %v", i, err)
		}
		ec, err := ethclient.Dial(d.HTTPURL())
		if err != nil {
			t.Fatal(err)
		}
		head, err := ec.HeaderByNumber(context.Background(), nil)
		ec.Close()
		d.Close()
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if head.Hash() != fixtureHead {
			t.Fatalf("start %d: head %s, want %s", i, head.Hash(), fixtureHead)
		}
	}
}

// TestLifecycle checks the calls a caller may get wrong: work before Start,
// a second Start, and Close without Start or twice.
func TestLifecycle(t *testing.T) {
	d, err := evmdevnet.New(evmdevnet.Config{BlockPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit(); err == nil {
		t.Error("Commit before Start succeeded")
	}
	if _, err := d.SendTraffic(context.Background()); err == nil {
		t.Error("SendTraffic before Start succeeded")
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err == nil {
		t.Error("second Start succeeded")
	}
	d.Close()
	d.Close()

	unstarted, err := evmdevnet.New(evmdevnet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	unstarted.Close()
}

func canon(b []byte) string {
	v := jsontext.Value(append([]byte(nil), b...))
	if err := v.Canonicalize(); err != nil {
		return "invalid: " + string(b)
	}
	return string(v)
}
