package upstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// ErrMissing, wrapped by an error a Request's Check returns, says the node
// lacks what it was asked about (a null for a block it should have): the
// call goes to the next node, and the node is not benched for it.
var ErrMissing = errors.New("upstream: node lacks the data")

// CheckError is a node's answer that a Request's Check refused: the node
// gave a wrong answer. The pool treats it as a failure of the node: it is
// benched as for a failed transport (unless Err wraps ErrMissing), its
// answer is dropped and the call goes to the next node; when every node
// failed, Do returns a *portico.UpstreamError wrapping the last
// CheckError.
type CheckError struct {
	Node string
	Err  error
}

// Error names the node and what was wrong.
func (e *CheckError) Error() string { return fmt.Sprintf("node %s answered wrong: %v", e.Node, e.Err) }

// Unwrap returns the check's error.
func (e *CheckError) Unwrap() error { return e.Err }

func check(f func(string, jsontext.Value) error, node string, res jsontext.Value) error {
	if err := f(node, res); err != nil {
		return &CheckError{Node: node, Err: err}
	}
	return nil
}

// missing reports whether a failure is a check's ErrMissing, which does
// not bench the node.
func missing(err error) bool {
	var ce *CheckError
	return errors.As(err, &ce) && errors.Is(ce.Err, ErrMissing)
}

// Names returns the nodes' names in configured order.
func (p *Pool) Names() []string {
	out := make([]string, len(p.members))
	for i, m := range p.members {
		out[i] = m.Name
	}
	return out
}

// Ask sends a read to one node by name, bounded by the attempt timeout,
// with no failover: for questions whose point is what each node says (a
// quorum of block hashes). It does not touch the node's health.
func (p *Pool) Ask(ctx context.Context, node, method string, params jsontext.Value) (jsontext.Value, error) {
	for _, m := range p.members {
		if m.Name != node {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, p.attempt)
		defer cancel()
		res, err := m.Node.Send(ctx, method, params, Limits{}, nil)
		if err != nil && !isAnswer(err) && !isLimit(err) {
			err = classify(ctx, err)
		}
		return res, err
	}
	return nil, &portico.UpstreamError{Network: p.network, Upstream: node, Err: portico.ErrNoUpstream}
}

// Fault records that a node gave a wrong answer found after Do returned
// it (an answer checked only with others): the node is benched as for a
// failed call.
func (p *Pool) Fault(node string) {
	for _, m := range p.members {
		if m.Name == node {
			m.fail(p.now(), true)
		}
	}
}
