package heads_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/heads"
)

// rpcError is a node's JSON-RPC error.
type rpcError struct{}

func (rpcError) Error() string  { return "method not found" }
func (rpcError) ErrorCode() int { return -32601 }

// node answers the identity call with id.
type node struct{ id string }

func (n node) Call(_ context.Context, method string, _ jsontext.Value, _ []byte) (jsontext.Value, error) {
	return jsontext.Value(n.id), nil
}

// reader reads marks from a table of tag → number, or error.
func reader(blocks map[string]any, marks ...heads.Mark) *heads.Reader {
	return &heads.Reader{
		IdentityMethod: "chain_id", IdentityWant: "a quantity", IdentityShow: 10,
		Identity: func(s string) (string, bool) { return strings.ToLower(s), strings.HasPrefix(s, "0x") },
		Marks:    marks,
		Mark: func(_ context.Context, _ portico.Caller, tag string) (portico.Header, bool, error) {
			switch b := blocks[tag].(type) {
			case error:
				return portico.Header{}, false, b
			case uint64:
				return portico.Header{Number: b, Hash: tag}, true, nil
			}
			return portico.Header{}, false, nil
		},
		Head: portico.HeadLatest,
	}
}

// TestHeads: marks are read in order; an optional mark's JSON-RPC error
// or missing block leaves its head 0; any other error, and a missing
// block a mark requires, fail the poll; the head's header is its mark's,
// or read by number.
func TestHeads(t *testing.T) {
	ctx := context.Background()
	marks := []heads.Mark{{Tag: "latest", Head: portico.HeadLatest, Missing: "no latest"},
		{Tag: "safe", Head: portico.HeadSafe, Optional: true}, {Tag: "finalized", Head: portico.HeadFinalized, Optional: true}}

	h, err := reader(map[string]any{"latest": uint64(9), "safe": rpcError{}}, marks...).Heads(ctx, nil)
	if err != nil || h.Latest != 9 || h.Safe != 0 || h.Finalized != 0 || h.Head.Hash != "latest" {
		t.Fatalf("optional marks: %+v, %v", h, err)
	}
	if _, err := reader(map[string]any{"latest": uint64(9), "safe": errors.New("reset")}, marks...).Heads(ctx, nil); err == nil {
		t.Fatal("a transport error of an optional mark passed")
	}
	if _, err := reader(map[string]any{"safe": uint64(3)}, marks...).Heads(ctx, nil); err == nil || err.Error() != "no latest" {
		t.Fatalf("a missing required block: %v", err)
	}
	if _, err := reader(map[string]any{"latest": rpcError{}}, marks...).Heads(ctx, nil); err == nil {
		t.Fatal("a JSON-RPC error of a mark that is not optional passed")
	}

	byNumber := reader(map[string]any{"a": uint64(5), "b": uint64(4)},
		heads.Mark{Tag: "a", Head: portico.HeadLatest}, heads.Mark{Tag: "b", Head: portico.HeadSafe})
	byNumber.Head, byNumber.HeadByNumber = portico.HeadSafe, true
	var asked uint64
	byNumber.Header = func(_ context.Context, _ portico.Caller, n uint64, _ string) (portico.Header, error) {
		asked = n
		if n == 4 {
			return portico.Header{Number: 4, Hash: "h4"}, nil
		}
		return portico.Header{}, rpcError{}
	}
	if h, err := byNumber.Heads(ctx, nil); err != nil || asked != 4 || h.Head.Hash != "h4" || h.Latest != 5 {
		t.Fatalf("head by number: %+v, %v (asked %d)", h, err, asked)
	}
	byNumber.Header = func(context.Context, portico.Caller, uint64, string) (portico.Header, error) {
		return portico.Header{}, rpcError{}
	}
	if h, err := byNumber.Heads(ctx, nil); err != nil || h.Head.Hash != "" || h.Safe != 4 {
		t.Fatalf("a JSON-RPC error reading the head's header: %+v, %v", h, err)
	}
	byNumber.Header = func(context.Context, portico.Caller, uint64, string) (portico.Header, error) {
		return portico.Header{}, errors.New("reset")
	}
	if _, err := byNumber.Heads(ctx, nil); err == nil {
		t.Fatal("a transport error reading the head's header passed")
	}
}

// TestReadIdentity: the answer is checked and written in one form; a bad
// one is named with at most IdentityShow bytes of it.
func TestReadIdentity(t *testing.T) {
	r := reader(nil)
	if id, err := r.ReadIdentity(context.Background(), node{`"0xAB"`}); err != nil || id != "0xab" {
		t.Fatalf("got %q, %v", id, err)
	}
	_, err := r.ReadIdentity(context.Background(), node{`"mainnet-and-more"`})
	if err == nil || err.Error() != `chain_id: not a quantity: "mainnet-a` {
		t.Fatalf("err = %v", err)
	}
	r.Identity = nil
	if _, err := r.ReadIdentity(context.Background(), node{`""`}); err == nil {
		t.Fatal("an empty identity passed")
	}
}
