package starknetdevnet

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// The WebSocket API of spec 0.8.1 (starknet_ws_api_v0.8.1.json).
//
// Subscriptions live in the jsonrpc core: a subscribe method registers a
// jsonrpc.Sub on the caller's connection and sends its notifications
// through it. The devnet feeds them from two places:
//
//   - Sealing (and SeedEvents) stores the new head and wakes the followers
//     of newHeads and events. Each follower is a goroutine with a cursor
//     that reads what it has not sent yet from the database, so a
//     subscription that starts in the past replays up to the head and then
//     follows, with no gap and no duplicate, and a burst of blocks is paced
//     to what the client reads. Sealing also moves transaction statuses
//     along (ACCEPTED_ON_L1 as blocks fall L1Lag behind).
//   - The pending block (traffic) pushes each new transaction to the
//     pendingTransactions subscriptions whose sender filter it passes, and
//     its first status to the transactionStatus subscriptions waiting for
//     its hash.
//
// Filtering stays cheap: the sealer does one non-blocking wake per
// follower, followers filter through the event indexes getEvents uses, and
// status subscriptions are found by hash.

// Names of the notification methods.
const (
	notifyNewHeads  = "starknet_subscriptionNewHeads"
	notifyEvents    = "starknet_subscriptionEvents"
	notifyTxStatus  = "starknet_subscriptionTransactionStatus"
	notifyPendingTx = "starknet_subscriptionPendingTransactions"
	notifyReorg     = "starknet_subscriptionReorg"
)

// Limits of the WebSocket API.
const (
	// MaxBlocksBack is how far back a subscription may start: the spec's
	// TOO_MANY_BLOCKS_BACK is for more than 1024 blocks behind the head.
	MaxBlocksBack = 1024
	// MaxSenderAddresses bounds the sender_address filter of
	// subscribePendingTransactions (Juno's limit).
	MaxSenderAddresses = 1024
)

// The WebSocket API's errors, with the spec's codes and messages.
var (
	ErrInvalidSubscriptionID = &SpecError{Code: 66, Message: "Invalid subscription id"}
	ErrTooManyAddresses      = &SpecError{Code: 67, Message: "Too many addresses in filter sender_address filter"}
	ErrTooManyBlocksBack     = &SpecError{Code: 68, Message: "Cannot go back more than 1024 blocks"}
)

// connLimits are the limits of the devnet's WebSocket connections; the
// followers pace themselves against MaxQueue.
var connLimits = jsonrpc.DefaultConnLimits()

// paceQueue is how many messages may wait on a connection before a
// follower waits for the client to read: a quarter of the queue, so that
// many followers on one connection and the pushed notifications together
// stay well below the limit at which the core closes the connection.
var paceQueue = connLimits.MaxQueue / 4

// hub holds the devnet's subscriptions. Its lock is never held while a
// notification is sent, since sending can end a subscription (a full
// queue closes the connection) and ending one takes the lock.
type hub struct {
	log    *slog.Logger
	ctx    context.Context // ends with Close; followers read the database with it
	cancel context.CancelFunc
	wg     sync.WaitGroup // followers
	head   atomic.Uint64  // the newest block followers may send

	mu        sync.Mutex
	closed    bool
	conns     map[*jsonrpc.Conn]*connIDs
	followers map[*follower]struct{}
	pendingTx map[*pendingTxSub]struct{}
	txWait    map[Felt]map[*statusSub]struct{} // not seen yet, by hash
	l1Wait    map[*statusSub]struct{}          // seen, not yet ACCEPTED_ON_L1
}

func newHub(log *slog.Logger) *hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &hub{
		log: log, ctx: ctx, cancel: cancel,
		conns:     map[*jsonrpc.Conn]*connIDs{},
		followers: map[*follower]struct{}{},
		pendingTx: map[*pendingTxSub]struct{}{},
		txWait:    map[Felt]map[*statusSub]struct{}{},
		l1Wait:    map[*statusSub]struct{}{},
	}
}

// close stops the followers and waits for them. Subscriptions themselves
// end with their connections (the server closes them first).
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// connIDs numbers one connection's subscriptions 1, 2, 3…: an id is
// issued on this connection exactly when it is at most last, which is
// how unsubscribe tells an ended subscription (false) from an id that
// never was (INVALID_SUBSCRIPTION_ID) without remembering every id.
type connIDs struct{ last uint64 }

// newID issues the connection's next subscription id.
func (h *hub) newID(c *jsonrpc.Conn) uint64 {
	h.mu.Lock()
	st, ok := h.conns[c]
	if !ok {
		st = &connIDs{}
		h.conns[c] = st
	}
	st.last++
	n := st.last
	h.mu.Unlock()
	if !ok {
		c.OnClose(func() {
			h.mu.Lock()
			delete(h.conns, c)
			h.mu.Unlock()
		})
	}
	return n
}

// unissue takes back id n when no later one was issued (the subscription
// was refused).
func (h *hub) unissue(c *jsonrpc.Conn, n uint64) {
	h.mu.Lock()
	if st := h.conns[c]; st != nil && st.last == n {
		st.last--
	}
	h.mu.Unlock()
}

// issued reports whether id n was issued on the connection.
func (h *hub) issued(c *jsonrpc.Conn, n uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.conns[c]
	return st != nil && n >= 1 && n <= st.last
}

// subscribe registers a subscription on the caller's connection and
// returns its id (a SUBSCRIPTION_ID, a string of decimal digits) as the
// call's result. register wires the subscription to its producer; it runs
// before the answer is sent, under the devnet's read lock, so it sees the
// same chain as the call.
func (d *Devnet) subscribe(ctx context.Context, register func(s *jsonrpc.Sub) error) ([]byte, error) {
	c := jsonrpc.ConnFrom(ctx)
	if c == nil {
		return nil, jsonrpc.ErrNoConnection
	}
	n := d.subs.newID(c)
	id := jsontext.Value(`"` + strconv.FormatUint(n, 10) + `"`)
	s, err := jsonrpc.Subscribe(ctx, id)
	if err != nil {
		d.subs.unissue(c, n)
		return nil, err
	}
	if err := register(s); err != nil {
		s.End()
		return nil, err
	}
	return id, nil
}

// afterAnswer runs f once the subscription's id has been answered and the
// notifications held until then have been queued (the core's
// AfterAnswer, which the subscription's own activation precedes).
func afterAnswer(ctx context.Context, f func()) {
	if !jsonrpc.AfterAnswer(ctx, f) {
		f()
	}
}

// rpcUnsubscribe ends a subscription of the caller's connection: true when
// it ends now, false when it was issued here but has already ended
// (unsubscribed before, or a transaction status that reached
// ACCEPTED_ON_L1), INVALID_SUBSCRIPTION_ID for any other id.
func (d *Devnet) rpcUnsubscribe(ctx context.Context, params jsontext.Value) ([]byte, error) {
	n, err := decodeUnsubscribeParams(params)
	if err != nil {
		return nil, err
	}
	c := jsonrpc.ConnFrom(ctx)
	if c == nil {
		return nil, jsonrpc.ErrNoConnection
	}
	if n == 0 {
		return nil, ErrInvalidSubscriptionID
	}
	if jsonrpc.Unsubscribe(ctx, jsontext.Value(`"`+strconv.FormatUint(n, 10)+`"`)) {
		return []byte("true"), nil
	}
	if d.subs.issued(c, n) {
		return []byte("false"), nil
	}
	return nil, ErrInvalidSubscriptionID
}

// notification renders a whole notification message:
// {"jsonrpc":"2.0","method":…,"params":{"subscription_id":…,"result":…}}.
func notification(method string, id jsontext.Value, result []byte) []byte {
	b := make([]byte, 0, len(result)+len(method)+len(id)+64)
	b = append(b, `{"jsonrpc":"2.0","method":"`...)
	b = append(b, method...)
	b = append(b, `","params":{"subscription_id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, "}}"...)
}

// room waits until s's connection has room for another notification; false
// when the subscription or the devnet ended first. The core has no signal
// for a draining queue, so this polls, backing off to 50ms.
func (h *hub) room(s *jsonrpc.Sub) bool {
	delay := time.Millisecond
	for s.Conn().Queued() >= paceQueue {
		t := time.NewTimer(delay)
		select {
		case <-s.Done():
			t.Stop()
			return false
		case <-h.ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
	return true
}
