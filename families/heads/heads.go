// Package heads is the one reader of a family's heads from its nodes
// (portico.Chain's Identity and Heads): what differs between families is
// data (the call that names the chain, the tags each head is read by)
// and one small read of the block at a tag; the order of the reads, which
// failures leave a head at 0 and which fail the poll are the same.
package heads

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"

	"github.com/porticohq/portico"
)

// Reader reads one family's heads.
type Reader struct {
	// IdentityMethod is the call, without params, whose string answer
	// names the node's chain ("eth_chainId"); IdentityWant is what that
	// answer must be, for the error ("a quantity"), which shows at most
	// IdentityShow bytes of a bad answer.
	IdentityMethod string
	IdentityWant   string
	IdentityShow   int
	// Identity checks the answer and writes it in one form; nil takes
	// any non-empty string as it is.
	Identity func(s string) (string, bool)

	// Marks are the heads read each poll, in order.
	Marks []Mark
	// Mark reads the block at a mark's tag: its header (or only its
	// number, where the family reads numbers by tag) and whether the node
	// has such a block.
	Mark func(ctx context.Context, node portico.Caller, tag string) (h portico.Header, ok bool, err error)

	// Head is the head whose block is the heads' header. Its mark's
	// header is taken, or, when HeadByNumber is set (the mark gives only a
	// number), the header Header reads at that number, which a node's
	// JSON-RPC error leaves out for this poll.
	Head         portico.Head
	HeadByNumber bool
	// Header reads the header of a block by number and hash (the
	// family's portico.Chain.Header).
	Header func(ctx context.Context, node portico.Caller, number uint64, hash string) (portico.Header, error)
}

// Mark is one head read by tag.
type Mark struct {
	// Tag is what the block is asked for by ("latest", "finalized", a
	// commitment).
	Tag string
	// Head is the head it is.
	Head portico.Head
	// Optional marks a head some nodes do not know: a node's JSON-RPC
	// error leaves it 0. Otherwise an error fails the poll.
	Optional bool
	// Missing, when set, fails the poll when the node has no block at the
	// tag; otherwise the head is left 0.
	Missing string
}

// ReadIdentity returns what names the node's chain (portico.Chain.Identity).
func (r *Reader) ReadIdentity(ctx context.Context, node portico.Caller) (string, error) {
	res, err := node.Call(ctx, r.IdentityMethod, nil, nil)
	if err != nil {
		return "", err
	}
	var s string
	err = json.Unmarshal(res, &s)
	id, ok := s, s != ""
	if r.Identity != nil {
		id, ok = r.Identity(s)
	}
	if err != nil || !ok {
		return "", fmt.Errorf("%s: not %s: %.*s", r.IdentityMethod, r.IdentityWant, r.IdentityShow, res)
	}
	return id, nil
}

// Heads returns the node's heads (portico.Chain.Heads).
func (r *Reader) Heads(ctx context.Context, node portico.Caller) (portico.Heads, error) {
	var h portico.Heads
	for _, m := range r.Marks {
		b, ok, err := r.Mark(ctx, node, m.Tag)
		if err != nil {
			if m.Optional && IsAnswer(err) {
				continue
			}
			return h, err
		}
		if !ok {
			if m.Missing != "" {
				return h, errors.New(m.Missing)
			}
			continue
		}
		set(&h, m.Head, b.Number)
		if m.Head == r.Head && !r.HeadByNumber {
			h.Head = b
		}
	}
	if r.HeadByNumber {
		b, err := r.Header(ctx, node, number(h, r.Head), "")
		switch {
		case err == nil:
			h.Head = b
		case !IsAnswer(err):
			return h, err
		}
	}
	return h, nil
}

// set sets head k of h to n.
func set(h *portico.Heads, k portico.Head, n uint64) {
	switch k {
	case portico.HeadLatest:
		h.Latest = n
	case portico.HeadSafe:
		h.Safe = n
	case portico.HeadFinalized:
		h.Finalized = n
	}
}

// number is head k of h, 0 when unknown.
func number(h portico.Heads, k portico.Head) uint64 {
	n, _ := h.Of(k)
	return n
}

// IsAnswer reports whether err is a node's JSON-RPC error.
func IsAnswer(err error) bool {
	var rpcErr interface{ ErrorCode() int }
	return errors.As(err, &rpcErr)
}
