package anvil_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/porticohq/portico/devnet/anvil"
)

func TestStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := anvil.Start(ctx, anvil.Options{})
	if errors.Is(err, anvil.ErrNotInstalled) && !anvil.Strict() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ec, err := ethclient.DialContext(ctx, n.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	id, err := ec.ChainID(ctx)
	if err != nil || id.Int64() != 31337 {
		t.Fatalf("chain id %v, %v", id, err)
	}
	if len(n.DevKeys()) < 10 {
		t.Fatalf("%d dev keys", len(n.DevKeys()))
	}
}
