package portico

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// TxWait is a call that sends a signed transaction and answers once it
// landed (eth_sendRawTransactionSync): the network sends it as Send would
// be sent, then follows it on its chain view with the family's TxRules
// until it is in a block of the served chain or Timeout passes.
type TxWait struct {
	// Send is the method that sends the transaction and SendParams its
	// params (eth_sendRawTransaction with the raw bytes).
	Send       *Method
	SendParams jsontext.Value
	// Timeout is the wait the client asked for; 0 takes the network's
	// default. The network holds it to its own bound.
	Timeout time.Duration
}

// TxRules are how a family follows the transactions sent through the
// gateway until they land: the calls that ask a node about one, and how
// their answers read. A family whose sends are not followed leaves Landed
// nil. A family with no Held (no node tells a pending transaction) has
// a transaction that has not landed sent again at every check.
type TxRules struct {
	// Landed returns the call that asks a node where the transaction
	// with hash landed (eth_getTransactionReceipt).
	Landed func(hash string) (method string, params jsontext.Value)
	// Where reads Landed's answer: the block the transaction is in; ok
	// false while it is in none (a null answer).
	Where func(res jsontext.Value) (block Header, ok bool)
	// Held returns the call that asks a node whether it holds the
	// transaction, pending or landed (eth_getTransactionByHash), and
	// Holds reads its answer.
	Held  func(hash string) (method string, params jsontext.Value)
	Holds func(res jsontext.Value) bool
	// Expiry, when not nil, returns the call that asks a node whether the
	// transaction sent with params can still land (the slot chain's
	// isBlockhashValid of its recent blockhash), and Expired reads its
	// answer: an expired transaction is let go, not sent again.
	Expiry  func(params jsontext.Value) (method string, call jsontext.Value, ok bool)
	Expired func(res jsontext.Value) bool
}

// TxTimeoutError answers a call that sent a transaction and waited for
// it to land (TxWait) when the wait ran out first: EIP-7966's timeout,
// code 4, with the transaction's hash as its data, in go-ethereum's
// words.
type TxTimeoutError struct {
	Hash   string
	Waited time.Duration
}

// Error returns go-ethereum's words for the timeout.
func (e *TxTimeoutError) Error() string {
	return fmt.Sprintf("The transaction was added to the transaction pool but wasn't processed in %v", e.Waited)
}

// ErrorCode returns 4, EIP-7966's timeout code.
func (e *TxTimeoutError) ErrorCode() int { return 4 }
