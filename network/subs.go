package network

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/network/topics"
)

// The network's subscriptions are its topics (network/topics); the keys'
// prepaid credits for notifications are charged here (charge.go).

// Subscribe serves a subscribe call that came over a WebSocket (ctx
// carries its connection): a client id on that connection, joined to the
// topic of its params, whose notifications key pays for. onEnd runs when
// the subscription ends, however it ends.
func (n *Network) Subscribe(ctx context.Context, rule *portico.Subscription, sp portico.SubParams, key apikey.Identity, onEnd func()) Outcome {
	id, err := n.hub.Subscribe(ctx, rule, sp, key, onEnd)
	if err != nil {
		return Outcome{Err: err}
	}
	return Outcome{Result: id}
}

// Unsubscribe serves an unsubscribe call: it ends the client's
// subscription with the id in the params, on the call's connection.
func (n *Network) Unsubscribe(ctx context.Context, raw jsontext.Value) Outcome {
	res, err := n.hub.Unsubscribe(ctx, raw)
	if err != nil {
		return Outcome{Err: err}
	}
	return Outcome{Result: res}
}

// notifyAccounts are the network's accounts (charge.go) as its topics
// use them.
type notifyAccounts struct{ acc *accounts }

var _ topics.Accounts = notifyAccounts{}

func (a notifyAccounts) Join(key apikey.Identity, item string) topics.Account {
	return a.acc.join(key, item)
}

func (a notifyAccounts) Leave(acct topics.Account) { a.acc.leave(acct.(*account)) }

func (a notifyAccounts) Pay(acct topics.Account, cost int64) error {
	return a.acc.pay(acct.(*account), cost)
}
