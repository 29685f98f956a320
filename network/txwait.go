package network

import (
	"context"

	"github.com/porticohq/portico/network/txs"

	"github.com/porticohq/portico"
)

// callWait serves a call that sends a signed transaction and answers
// once it landed (portico.TxWait, eth_sendRawTransactionSync): the
// transaction is sent as its family's send method is (broadcast, its hash
// checked, a retry answered from what was sent), then followed on the
// served chain until it is in a block of it or the wait runs out. A
// family whose sends are not followed gets the send's answer.
func (n *Network) callWait(ctx context.Context, c Call, frame []byte) Outcome {
	w := c.Params.Wait
	send := c
	send.Method = w.Send
	send.Params = portico.Params{Send: w.SendParams, Cache: portico.NotCacheable, TxHash: c.Params.TxHash}
	if out := n.call(ctx, send, nil); out.Err != nil || !n.txs.Follows() {
		return out
	}
	res, err := n.txs.Wait(ctx, c.Params.TxHash, n.txs.WaitFor(w.Timeout))
	if err != nil {
		return Outcome{Err: err}
	}
	return framed(frame, res, CacheNone)
}

// keep has the tracker keep a transaction a node took for the calling
// key, to send it again should every node drop it.
func (n *Network) keep(c Call, params portico.Params) {
	if n.txs.Resends() && !n.txs.Keep(c.Key.Name, params.TxHash, c.Method.Name, params.Send) {
		n.log.Debug("transaction not kept for resending: the key's bound or the memory budget is full", "network", n.name, "tx", params.TxHash)
	}
}

// chainNamer is an upstream that says which chain the network serves;
// *upstream.Pool is one.
type chainNamer interface{ Chain() string }

// txHashOn computes a sent transaction's hash on the network's chain
// (portico.Params.TxHashOn); "" while the chain is not known yet.
func (n *Network) txHashOn(on func(chain string) (string, bool)) string {
	c, ok := n.up.(chainNamer)
	if !ok || c.Chain() == "" {
		return ""
	}
	h, _ := on(c.Chain())
	return h
}

// TxCounts says what happened to the transactions the network followed
// (the admin API's nodes answer, the dashboard).
func (n *Network) TxCounts() txs.Counts { return n.txs.Counts() }
