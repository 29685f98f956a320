package metering

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// Notifications are charged exactly, but not one by one on the way to
// the clients: each key pays for a block of its notifications in advance
// (one charge for many), spends it as notifications go out, and is given
// back what it did not spend when its last subscription of that kind
// ends. A refill is charged in the background while a quarter of the
// block is left, so the meter (Redis, the journal) is on a notification's
// way only for a key's first one and for a key that runs dry. A key whose
// balance cannot pay a whole block pays notification by notification
// until it cannot pay at all; then its clients are told why and cut off.
//
// The usage history records these charges as they are made: its credits
// are exact, and its calls count blocks and refunds, not notifications.

// blockNotifications is how many notifications a block pays for.
const blockNotifications = 64

// ChargeTimeout bounds one charge or refund made outside a request (of
// prepaid notifications, of a verification's node calls).
const ChargeTimeout = 5 * time.Second

// Prepaid are the prepaid notification credits of a network's keys, one
// Account per key and notification kind. The zero value charges nothing;
// NewPrepaid makes one that charges.
type Prepaid struct {
	meter Meter
	log   *slog.Logger
	rec   Recorder
	mu    sync.Mutex
	byKey map[accountKey]*Account
}

// NewPrepaid returns the prepaid accounts of keys charged by m; a refund
// that fails is logged to log, and what is spent and refused is told to
// rec. A nil m charges nothing.
func NewPrepaid(m Meter, log *slog.Logger, rec Recorder) *Prepaid {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if rec == nil {
		rec = noRecorder{}
	}
	return &Prepaid{meter: m, log: log, rec: rec}
}

// Recorder counts what metering does, for the metrics; *metrics.Metrics
// is one (its methods do nothing on nil).
type Recorder interface {
	Credits(key string, credits int64)
	Refused(key, limit string, calls int)
	MeteringFailure()
}

type accountKey struct{ key, item string }

// Account is what one key has paid for one kind of notification.
type Account struct {
	id    apikey.Identity
	item  string
	users int // client subscriptions using it

	mu        sync.Mutex
	closed    bool  // its last user left: what a refill brings goes back
	credits   int64 // paid for, not yet spent
	bill      Bill  // of the last charge, which refunds go against
	billed    bool
	refilling bool
	dry       bool // a block was refused: pay one by one
}

// Join returns the account of a client subscription to the kind of
// notification named item, made on first use; nil when nothing is
// charged.
func (as *Prepaid) Join(id apikey.Identity, item string) *Account {
	if as == nil || as.meter == nil {
		return nil
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	k := accountKey{id.Name, item}
	a := as.byKey[k]
	if a == nil {
		if as.byKey == nil {
			as.byKey = map[accountKey]*Account{}
		}
		a = &Account{id: id, item: item}
		as.byKey[k] = a
	}
	a.users++
	return a
}

// Leave ends a client subscription's use of a; the last one gives back
// what was paid and not spent.
func (as *Prepaid) Leave(a *Account) {
	if a == nil {
		return
	}
	as.mu.Lock()
	a.users--
	last := a.users == 0
	if last {
		delete(as.byKey, accountKey{a.id.Name, a.item})
	}
	as.mu.Unlock()
	if !last {
		return
	}
	a.mu.Lock()
	left, bill, billed := a.credits, a.bill, a.billed
	a.credits, a.closed = 0, true
	a.mu.Unlock()
	if left > 0 && billed {
		as.refund(a, bill, left)
	}
}

// refund gives back credits paid for notifications that were not sent.
func (as *Prepaid) refund(a *Account, bill Bill, credits int64) {
	ctx, cancel := context.WithTimeout(context.Background(), ChargeTimeout)
	defer cancel()
	if err := as.meter.Refund(ctx, &bill, Item{Method: a.item, Cost: credits}); err != nil {
		as.log.Error("refunding prepaid notifications failed", "key", a.id.Name, "item", a.item, "credits", credits, "err", err)
	}
}

// Pay spends cost credits of a's for one notification, charging a block
// first when too little is left. It returns the meter's refusal (a
// *portico.QuotaError, or metering unavailable) when the key cannot pay.
func (as *Prepaid) Pay(a *Account, cost int64) error {
	if a == nil || cost <= 0 {
		return nil
	}
	a.mu.Lock()
	if a.credits >= cost {
		a.credits -= cost
		refill := !a.dry && !a.refilling && a.credits < cost*blockNotifications/4
		if refill {
			a.refilling = true
		}
		a.mu.Unlock()
		as.rec.Credits(a.id.Name, cost)
		if refill {
			go as.refill(a, cost)
		}
		return nil
	}
	need := cost - a.credits
	dry := a.dry
	a.mu.Unlock()
	// Too little is left: charge now, a block (or, for a key that could
	// not pay one, exactly what is missing).
	amount := need
	if !dry {
		amount += cost * blockNotifications
	}
	err := as.charge(a, amount)
	var quota *portico.QuotaError
	if errors.As(err, &quota) && amount > need {
		a.mu.Lock()
		a.dry = true
		a.mu.Unlock()
		err = as.charge(a, need)
	}
	if err != nil {
		if errors.As(err, &quota) {
			as.rec.Refused(a.id.Name, quota.Limit, 1)
		} else {
			as.rec.MeteringFailure()
		}
		return err
	}
	a.mu.Lock()
	a.credits -= cost
	a.mu.Unlock()
	as.rec.Credits(a.id.Name, cost)
	return nil
}

// refill charges a block in the background, while what is left lasts.
func (as *Prepaid) refill(a *Account, cost int64) {
	err := as.charge(a, cost*blockNotifications)
	a.mu.Lock()
	a.refilling = false
	if err != nil {
		a.dry = true // pay one by one from now on; the refusal comes then
	}
	a.mu.Unlock()
}

// charge charges amount credits and adds them to a.
func (as *Prepaid) charge(a *Account, amount int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), ChargeTimeout)
	defer cancel()
	bill, err := as.meter.Charge(ctx, a.id, []Item{{Method: a.item, Cost: amount}})
	if err != nil {
		return err
	}
	a.mu.Lock()
	if a.closed {
		// Its users left while the charge was on its way (a refill).
		a.mu.Unlock()
		as.refund(a, bill, amount)
		return nil
	}
	a.credits += amount
	a.bill, a.billed = bill, true
	a.mu.Unlock()
	return nil
}

// noRecorder records nothing.
type noRecorder struct{}

func (noRecorder) Credits(string, int64)       {}
func (noRecorder) Refused(string, string, int) {}
func (noRecorder) MeteringFailure()            {}
