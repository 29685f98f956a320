package verify_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/network/chainview"
	"github.com/porticohq/portico/network/upstream"
	"github.com/porticohq/portico/network/verify"
)

// nodes answer each height with the hash each node has there.
type nodes map[string]common.Hash

func (n nodes) Do(context.Context, upstream.Request, []byte) (jsontext.Value, error) {
	return nil, errors.New("not asked")
}

func (n nodes) Names() []string {
	var out []string
	for k := range n {
		out = append(out, k)
	}
	return out
}

func (n nodes) Ask(_ context.Context, node, _ string, _ jsontext.Value) (jsontext.Value, error) {
	return json.Marshal(n[node].Hex())
}

func (n nodes) Fault(string)          {}
func (n nodes) View() *chainview.View { return nil }

func hashOf(res jsontext.Value) (common.Hash, bool) {
	var s string
	if json.Unmarshal(res, &s) != nil {
		return common.Hash{}, false
	}
	return common.HexToHash(s), true
}

// TestQuorumAt: the hash a quorum of nodes reports at a height is
// trusted and kept for the height; fewer than a quorum agreeing is no
// hash, and says so.
func TestQuorumAt(t *testing.T) {
	a, b := common.HexToHash("0xa"), common.HexToHash("0xb")
	ask := func(uint64) (string, jsontext.Value) { return "hash_at", nil }

	var base verify.Base
	base.Init(verify.Env{Network: "n", Nodes: nodes{"x": a, "y": a, "z": b}, Quorum: 2}, ask, hashOf)
	got, err := base.QuorumAt(context.Background(), 7)
	if err != nil || got != a {
		t.Fatalf("QuorumAt = %s, %v; want %s", got.Hex(), err, a.Hex())
	}
	if n, ok := base.Trust.Trusted(a); !ok || n != 7 {
		t.Fatalf("the quorum's hash is not trusted at 7: %d, %v", n, ok)
	}
	if h, ok := base.TrustedAt(7); !ok || h != a {
		t.Fatalf("TrustedAt(7) = %s, %v", h.Hex(), ok)
	}

	var split verify.Base
	split.Init(verify.Env{Network: "n", Nodes: nodes{"x": a, "y": b}, Quorum: 2}, ask, hashOf)
	if _, err := split.QuorumAt(context.Background(), 7); !errors.Is(err, verify.ErrUnverifiable) {
		t.Fatalf("no quorum: %v", err)
	}
	if _, ok := split.Trust.Trusted(a); ok {
		t.Fatal("a hash without a quorum is trusted")
	}
}
