package upstream

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// Broadcast says where a network's signed transactions go.
type Broadcast struct {
	// First sends each to one node, as any other call (with failover only
	// where the node surely did not get it).
	First bool
	// To, when set, names the only nodes transactions go to (a private
	// relay); empty means every node that serves the method.
	To []string
}

// sentFor is how long a sent transaction's answer is kept, so that a
// client's retry of the same bytes is answered without a second
// broadcast; maxSent bounds how many are kept.
const (
	sentFor = 10 * time.Minute
	maxSent = 4096
)

// sentTxs are the transactions a pool broadcast lately, by hash, and what
// they were answered.
type sentTxs struct {
	mu    sync.Mutex
	byTx  map[string]sentTx
	order []string // oldest first, for eviction
}

type sentTx struct {
	answer jsontext.Value
	until  time.Time
}

func (s *sentTxs) get(hash string, now time.Time) (jsontext.Value, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byTx[hash]
	if !ok || !now.Before(e.until) {
		return nil, false
	}
	return e.answer, true
}

func (s *sentTxs) put(hash string, answer jsontext.Value, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byTx == nil {
		s.byTx = map[string]sentTx{}
	}
	if _, ok := s.byTx[hash]; !ok {
		for len(s.order) >= maxSent {
			delete(s.byTx, s.order[0])
			s.order = s.order[1:]
		}
		s.order = append(s.order, hash)
	}
	s.byTx[hash] = sentTx{answer: append(jsontext.Value(nil), answer...), until: now.Add(sentFor)}
}

// broadcast sends a signed transaction (req.TxHash set) to every node
// the network's Broadcast names that serves the method, at once; the
// answer is the first node's that took it (its result, which must be the
// transaction's own hash, or its word that it already has it). A node
// that answers another hash is at fault. When no node took it, the first
// client error (a bad signature, a nonce too low, funds too short) is
// passed on as the node wrote it; else the last failure. The nodes that
// are still answering when the client has its answer are let finish, on
// their own, within the attempt timeout: every node gets the transaction.
// The same transaction sent again within sentFor is answered as it was,
// with no node asked (a client's retry: the network's tracker is what
// sends a dropped transaction again, as a Resend).
func (p *Pool) broadcast(caller context.Context, req Request, dst []byte) (jsontext.Value, error) {
	if res, ok := p.sent.get(req.TxHash, p.now()); ok && !req.Resend {
		return append(dst, res...), nil
	}
	targets := p.broadcastTargets(req)
	if len(targets) == 0 {
		return nil, &portico.UpstreamError{Network: p.network, Err: portico.ErrUpstreamUnavailable}
	}
	if p.onSend != nil {
		p.onSend(len(targets))
	}
	want := req.TxHash
	results := make(chan attempt, len(targets))
	for _, m := range targets {
		go func() {
			// Not the caller's context: a client that leaves does not
			// take the transaction back from the nodes not yet sent it.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(caller), p.attempt)
			defer cancel()
			release, ok := m.reach.take(ctx, true)
			if !ok {
				results <- attempt{m: m, err: ctx.Err(), class: answerFailed}
				return
			}
			defer release()
			a := p.try(ctx, time.Now().Add(p.attempt), m, req, req.Params, nil, false, m.faultCount())
			if a.class == answerResult && !strings.EqualFold(answeredHash(req, a.res), want) {
				a.err, a.class = &CheckError{Node: m.Name, Err: errors.New("answered another transaction hash than the one it was sent")}, answerFailed
			}
			p.settleSent(a)
			results <- a
		}()
	}
	var clientErr, last error
	for range targets {
		var a attempt
		select {
		case a = <-results:
		case <-caller.Done():
			return nil, caller.Err()
		}
		switch a.class {
		case answerResult, int(portico.AnswerKnown):
			res := knownResult(req)
			if a.class == answerResult {
				res = a.res
			}
			p.sent.put(req.TxHash, res, p.now())
			if req.Served != nil {
				*req.Served = a.m.Name
			}
			return append(dst, res...), nil
		case int(portico.AnswerClient):
			if clientErr == nil {
				clientErr = a.err
			}
		default:
			last = a.err
		}
	}
	if clientErr != nil {
		return nil, clientErr
	}
	var rpcErr *jsonrpc.Error
	if errors.As(last, &rpcErr) {
		return nil, rpcErr
	}
	return nil, &portico.UpstreamError{Network: p.network, Err: last}
}

// settleSent records one node's answer to a broadcast send in its
// health: a failure or a wrong hash is its fault, a rate limit holds it,
// the rest are answers.
func (p *Pool) settleSent(a attempt) {
	a.m.reach.count(a.class)
	switch a.class {
	case answerFailed, int(portico.AnswerUnhealthy):
		a.m.fail(p.now(), true)
	case int(portico.AnswerLimited):
		a.m.reach.limit(p.now(), limitedFor(a.err))
	default:
		a.m.ok(a.took, true, a.faults)
	}
}

// broadcastTargets are the nodes a send goes to: those Broadcast.To
// names, or every node on the network's chain that serves the method and
// is not benched (all of them, benched or not, when none is left).
func (p *Pool) broadcastTargets(req Request) []*member {
	now := p.now()
	var out, benched []*member
	for _, m := range p.members {
		if len(p.bcast.To) > 0 && !slices.Contains(p.bcast.To, m.Name) {
			continue
		}
		b, _, wrong := m.state(now)
		if wrong || !m.reach.cfg.ServesMethod(req.Method) {
			continue
		}
		if b {
			benched = append(benched, m)
			continue
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return benched
	}
	return out
}

// answeredHash is the hash a node's answer to a send names: the answer
// itself, a JSON string, unless the request reads it (TxAnswer).
func answeredHash(req Request, res jsontext.Value) string {
	if req.TxAnswer != nil {
		return req.TxAnswer(res)
	}
	return strings.Trim(string(res), `"`)
}

// knownResult is the answer of a send that a node already had.
func knownResult(req Request) jsontext.Value {
	if req.TxResult != nil {
		return req.TxResult(req.TxHash)
	}
	return jsontext.Value(`"` + req.TxHash + `"`)
}
