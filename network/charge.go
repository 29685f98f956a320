package network

import (
	"github.com/porticohq/portico/metering"
	"github.com/porticohq/portico/metering/apikey"
)

// Notifications are charged through metering's prepaid accounts
// (metering.Prepaid): each key pays for a block of its notifications in
// advance, spends it as they go out, and is given back what it did not
// spend when its last subscription of that kind ends.

// accounts are the prepaid notification credits of a hub's keys.
type accounts struct{ p *metering.Prepaid }

// account is what one key has paid for one kind of notification.
type account = metering.Account

// newAccounts returns the accounts of n's keys, charged by meter (nil
// charges nothing).
func newAccounts(meter Meter, n *Network) accounts {
	return accounts{metering.NewPrepaid(meter, n.log, n.metrics)}
}

// newAccountsRef is newAccounts, for the topics' adapter.
func newAccountsRef(meter Meter, n *Network) *accounts {
	a := newAccounts(meter, n)
	return &a
}

// join returns the account of a client subscription, made on first use.
func (as accounts) join(id apikey.Identity, item string) *account { return as.p.Join(id, item) }

// leave ends a client subscription's use of a.
func (as accounts) leave(a *account) { as.p.Leave(a) }

// pay spends cost credits of a's for one notification.
func (as accounts) pay(a *account, cost int64) error { return as.p.Pay(a, cost) }

// chargeTimeout bounds one charge or refund made outside a request.
const chargeTimeout = metering.ChargeTimeout
