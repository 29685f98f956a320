package portico

import (
	"context"

	"github.com/go-json-experiment/json/jsontext"
)

// Subscription is a family's rule for one subscribe method: how its
// params are checked, what identifies the upstream subscription that
// clients asking the same thing share, what it costs, and how its
// notifications are written. It is part of the family's table, so that the
// gateway knows no family by name.
type Subscription struct {
	// Method is the subscribe method's real name ("eth_subscribe",
	// "slotSubscribe", "starknet_subscribeNewHeads"); Aliases are other
	// names clients may use.
	Method  string
	Aliases []string
	// Unsubscribe is the method that ends a subscription of this kind.
	Unsubscribe string
	// Notification is the method name of the notifications
	// ("eth_subscription", "slotNotification"); Also are other
	// notifications the subscription may carry (the rollup's reorg
	// notification), passed on as they come.
	Notification string
	Also         []string
	// Params checks the params of a subscribe call. Errors are
	// *ParamsError.
	Params func(raw jsontext.Value) (SubParams, error)
	// Cost is the credit cost of subscribing; NotificationCost, by kind,
	// the cost of each notification a client receives (the family's
	// DefaultNotificationCost where a kind has none).
	Cost             int
	NotificationCost map[string]int
	// Contracts says, by kind (SubParams.Kind), where a subscribe call's
	// params name the contracts whose events it follows, for a key's
	// contract-address allowlist; a kind without an entry is refused to
	// a key with such a list.
	Contracts map[string]Contracts
}

// SubParams is what a subscribe method's params rule learned.
type SubParams struct {
	// Kind names what is subscribed to, for costs and logs ("newHeads",
	// "logs", "slot").
	Kind string
	// Send is the params to send upstream; subscriptions with the same
	// method and Send share one upstream subscription.
	Send jsontext.Value
	// Heads marks a subscription to new heads (or slots): it is kept
	// without gap or duplicate when its upstream changes, by the number
	// Subscriptions.Seq reads from each notification, and can be served
	// from tracked heads for nodes that speak HTTP only.
	Heads bool
	// Ends marks a subscription that ends itself after its first
	// notification (a signature subscription).
	Ends bool
	// Private marks a subscription that cannot be shared between clients
	// (one that first replays blocks from a past block_id): each client
	// gets an upstream subscription of its own.
	Private bool
}

// SubscriptionIDs says how a family writes the ids of client
// subscriptions.
type SubscriptionIDs uint8

// How families write subscription ids.
const (
	// IDHex is a 0x-prefixed hex string ("0x9ce59a13059e417087c02d3236a0b1cc"), as geth.
	IDHex SubscriptionIDs = iota
	// IDInteger is a JSON number, as agave.
	IDInteger
	// IDString is a decimal string ("42"), as rollup nodes of spec 0.8.
	IDString
)

// Subscriptions is a family's subscription rules.
type Subscriptions struct {
	// Methods are the subscribe methods.
	Methods []Subscription
	// IDs is how client subscription ids are written.
	IDs SubscriptionIDs
	// IDMember is the member of a notification's params that holds the
	// subscription id ("subscription", or "subscription_id"); ResultFirst
	// writes "result" before it, as agave does.
	IDMember    string
	ResultFirst bool
	// DefaultNotificationCost is the cost of a notification whose kind has
	// no cost of its own.
	DefaultNotificationCost int
	// UnknownID is the error an unsubscribe with an id the connection
	// does not hold gets, as the family's nodes answer it; nil answers
	// false.
	UnknownID error
	// Seq reads the number of a heads notification's block (or slot).
	Seq func(kind string, result jsontext.Value) (uint64, bool)
	// Head makes the result of a heads notification for block b (by its
	// hash where b has one, else by its number), asking node where it
	// must (a block header): for blocks no upstream subscription sent,
	// such as a reorg's new branch fetched by the chain view, and for
	// nodes that speak HTTP only. nil when the family cannot.
	Head func(ctx context.Context, node Caller, kind string, b Header, h Heads) (jsontext.Value, error)
	// HeadOf reads the block a heads notification is about, with its hash
	// and parent: a family that has it sends its clients' heads streams
	// from the chain view (every block of a new branch after a reorg, in
	// order, as nodes do), and the notifications feed the view. nil for a
	// family whose heads are kept in order by number alone (the slot
	// chain, whose slot and root notifications never go back).
	HeadOf func(kind string, result jsontext.Value) (Header, bool)
	// Reorg makes the notification that tells a heads subscription's
	// clients of a reorg, from the blocks it dropped (oldest first): the
	// rollup's starknet_subscriptionReorg. nil when clients learn of a
	// reorg from the new heads alone, as on the EVM.
	Reorg func(kind string, dropped []Header) (method string, result jsontext.Value)
	// LogOf reads the block a log notification is about and whether the
	// node marked it removed (EVM logs): such notifications are sent once
	// their block is on the served chain, and sent again as removed when
	// a reorg drops it (Removed writes that form). nil for a family whose
	// events carry no removal.
	LogOf   func(kind string, result jsontext.Value) (block Header, removed, ok bool)
	Removed func(result jsontext.Value) jsontext.Value
}
