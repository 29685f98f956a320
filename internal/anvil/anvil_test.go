package anvil_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"go.uber.org/goleak"

	"github.com/porticohq/portico/families/evm/evmtx"
	"github.com/porticohq/portico/internal/anvil"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start runs anvil, skipping the test when it is not installed (failing
// instead under PORTICO_TEST_STRICT=1).
func start(t *testing.T, ctx context.Context, opts anvil.Options) *anvil.Node {
	t.Helper()
	n, err := anvil.Start(ctx, opts)
	if errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// TestStart asks a fresh anvil for its chain id and checks the dev keys are
// anvil's well-known ones.
func TestStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := start(t, ctx, anvil.Options{})
	ec, err := ethclient.DialContext(ctx, n.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	id, err := ec.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id.Int64() != 31337 {
		t.Fatalf("chain id %v, want 31337", id)
	}
	keys := n.DevKeys()
	if len(keys) < 10 {
		t.Fatalf("%d dev keys, want 10", len(keys))
	}
	const first = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	if got := hexutil.Encode(crypto.FromECDSA(keys[0])); got != first {
		t.Fatalf("first dev key %s, want %s", got, first)
	}
}

// TestEveryTransactionType sends one transaction of each type 0 to 4 from
// the dev keys over WebSocket; anvil mines each as it arrives.
func TestEveryTransactionType(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := start(t, ctx, anvil.Options{})
	ec, err := ethclient.DialContext(ctx, n.WSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	id, err := ec.ChainID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := &evmtx.Sender{Client: ec, ChainID: id, Keys: n.DevKeys()[:6]}
	hashes, err := s.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for ty, h := range hashes {
		rc, err := waitMined(ctx, ec, h)
		if err != nil {
			t.Fatalf("type %d: %v", ty, err)
		}
		if rc.Status != 1 || int(rc.Type) != ty {
			t.Fatalf("type %d: receipt of type %d, status %d", ty, rc.Type, rc.Status)
		}
	}
}

// waitMined polls for the receipt of h: anvil answers eth_sendRawTransaction
// before it has mined a blob transaction.
func waitMined(ctx context.Context, ec *ethclient.Client, h common.Hash) (*types.Receipt, error) {
	for {
		rc, err := ec.TransactionReceipt(ctx, h)
		if !errors.Is(err, ethereum.NotFound) {
			return rc, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s not mined: %w", h, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestStartFails checks that an anvil that cannot start is reported with
// its own words rather than a timeout.
func TestStartFails(t *testing.T) {
	if _, err := anvil.Binary(); errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
		t.Skip(err)
	}
	_, err := anvil.Start(context.Background(), anvil.Options{Args: []string{"--no-such-flag"}})
	if err == nil {
		t.Fatal("anvil started with an unknown flag")
	}
	t.Log(err)
}

// TestBinaryEnv checks that PORTICO_ANVIL wins and that a missing file it
// names is an error other than ErrNotInstalled.
func TestBinaryEnv(t *testing.T) {
	t.Setenv("PORTICO_ANVIL", "/nonexistent/anvil")
	_, err := anvil.Binary()
	if err == nil || errors.Is(err, anvil.ErrNotInstalled) {
		t.Fatalf("Binary() = %v, want a PORTICO_ANVIL error", err)
	}
}
