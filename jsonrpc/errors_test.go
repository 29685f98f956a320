package jsonrpc_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// TestErrorsDoc keeps docs/errors.md in step with ErrorFor: each of
// Portico's errors maps to the code and HTTP status of a row of the table,
// and the row's example message is what a client gets.
func TestErrorsDoc(t *testing.T) {
	doc, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	reset := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		err     error
		code    int
		status  string // as the table writes it
		message string // a prefix of the table's example
	}{
		{"key missing", portico.ErrKeyMissing, portico.CodeUnauthorized, "401", "unauthorized: API key missing"},
		{"key malformed", portico.ErrKeyMalformed, portico.CodeUnauthorized, "401", "unauthorized: API key malformed"},
		{"key unknown", portico.ErrKeyUnknown, portico.CodeUnauthorized, "401", "unauthorized: API key unknown or revoked"},
		{"secret missing", portico.ErrSecretMissing, portico.CodeUnauthorized, "401", "unauthorized: API key secret missing"},
		{"secret wrong", portico.ErrSecretWrong, portico.CodeUnauthorized, "401", "unauthorized: API key secret wrong"},
		{"jwt", &portico.JWTError{Reason: "token expired"}, portico.CodeUnauthorized, "401", "unauthorized: JWT refused: token expired"},
		{"rejected method", &portico.ForbiddenError{What: portico.AllowMethod, Value: "eth_sendRawTransaction"}, portico.CodeKeyRejected, "403", `rejected due to API key settings: method "eth_sendRawTransaction" is not allowed for this API key`},
		{"rejected address", &portico.ForbiddenError{What: portico.AllowAddress}, portico.CodeKeyRejected, "403", `rejected due to API key settings: this API key is restricted by contract address and the call has none`},
		{"rejected address at a field", &portico.ForbiddenError{What: portico.AllowAddress, Value: "0x3333333333333333333333333333333333333333", Field: "params[0].to"}, portico.CodeKeyRejected, "403",
			`rejected due to API key settings: params[0].to: contract address "0x3333333333333333333333333333333333333333" is not allowed for this API key`},
		{"rejected override", &portico.ForbiddenError{What: portico.AllowAddress, Field: "params[2] (stateOverrides)", Reason: "must be left out for a key restricted by contract address: it changes the code or state the contracts run with"}, portico.CodeKeyRejected, "403",
			`rejected due to API key settings: params[2] (stateOverrides): must be left out for a key restricted by contract address: `},
		{"rejected user agent", &portico.ForbiddenError{What: portico.AllowUserAgent, Value: "curl/8.5.0"}, portico.CodeKeyRejected, "403", `rejected due to API key settings: User-Agent "curl/8.5.0" is not allowed for this API key`},
		{"requests", &portico.QuotaError{Limit: portico.QuotaRequests, Key: "alice", Rate: 50, Cost: 1, RetryAfter: 20 * time.Millisecond}, portico.CodeLimitExceeded, "429",
			`request rate exceeded for key "alice": 50 calls per second; retry after 20ms`},
		{"concurrent", &portico.QuotaError{Limit: portico.QuotaConcurrent, Key: "alice", Rate: 8, Cost: 1, RetryAfter: time.Second}, portico.CodeLimitExceeded, "429",
			`too many calls in flight for key "alice": limit is 8 at once; retry after 1s`},
		{"body", &portico.LimitError{Limit: portico.LimitBody, Max: 5242880}, portico.CodeBodyTooLarge, "413", "request body too large: limit is 5242880 bytes"},
		{"batch", &portico.LimitError{Limit: portico.LimitBatch, Max: 100, Got: 101}, portico.CodeBatchTooLarge, "413", "batch too large: limit is 100 calls, got 101"},
		{"connections", &portico.LimitError{Limit: portico.LimitConnections, Max: 4096}, portico.CodeTooManyConns, "503", "too many connections: limit is 4096"},
		{"connections per address", &portico.LimitError{Limit: portico.LimitConnectionsPerIP, Max: 512}, portico.CodeTooManyConns, "503", "too many connections from this address: limit is 512"},
		{"websockets per key", &portico.LimitError{Limit: portico.LimitWSPerKey, Max: 256}, portico.CodeTooManyConns, "503", "too many websocket connections for this API key: limit is 256"},
		{"subscriptions", &portico.LimitError{Limit: portico.LimitSubscriptions, Max: 100}, portico.CodeTooManySubs, "200", "too many subscriptions on this connection: limit is 100"},
		{"batch response", &portico.LimitError{Limit: portico.LimitBatchResponse, Max: 26214400}, portico.CodeBatchResponse, "413", "batch response too large: this call's result does not fit in the batch's limit of 26214400 bytes"},
		{"upstream down", &portico.UpstreamError{Network: "evm-devnet", Err: portico.ErrUpstreamUnavailable}, portico.CodeUpstreamDown, "502", "upstream unavailable for network evm-devnet"},
		{"no upstream", &portico.UpstreamError{Network: "solana-devnet", Err: portico.ErrNoUpstream}, portico.CodeUpstreamDown, "502", "no upstream configured for network solana-devnet"},
		{"upstream timeout", &portico.UpstreamError{Network: "evm-devnet", Err: portico.ErrUpstreamTimeout}, portico.CodeUpstreamTimeout, "504", "upstream timed out for network evm-devnet"},
		{"unverified", &portico.UnverifiedError{Network: "mainnet", Method: "eth_getBalance", Reason: "every node's eth_getProof failed its check"}, portico.CodeUnverified, "502",
			"unverified: no node gave an answer to eth_getBalance on network mainnet that could be verified"},
		{"client timeout", portico.ErrClientTimeout, portico.CodeClientTimeout, "408", "request not received in time"},
		{"host", portico.ErrNetworkUnknown, portico.CodeNetworkUnknown, "404", "unknown network host"},
		{"content type", portico.ErrWrongContentType, portico.CodeWrongContentType, "415", "Content-Type must be application/json"},
		{"http method", portico.ErrHTTPMethod, portico.CodeMethodNotAllowed, "405", "HTTP method must be POST"},
		{"metering", portico.ErrMeteringUnavailable, portico.CodeMeteringDown, "503", "metering unavailable: calls are refused until it is back"},
		{"headers", &portico.LimitError{Limit: portico.LimitHeaders, Max: 16384}, portico.CodeHeadersTooLarge, "431", "request headers too large: limit is 16384 bytes"},
		{"ws message", &portico.LimitError{Limit: portico.LimitWSMessage, Max: 5242880}, portico.CodeWSMessageTooLarge, "—", "websocket message too large: limit is 5242880 bytes"},
		{"daily", &portico.QuotaError{Limit: portico.QuotaDaily, Key: "alice", Cost: 160, Remaining: 40, Daily: 3000000, ResetAt: reset}, portico.CodeLimitExceeded, "429",
			`daily credit balance exhausted for key "alice": this call costs 160, 40 of 3000000 credits left; resets at 2026-11-23T00:00:00Z`},
		{"rate", &portico.QuotaError{Limit: portico.QuotaRate, Key: "alice", Rate: 500, Cost: 160, RetryAfter: 120 * time.Millisecond}, portico.CodeLimitExceeded, "429",
			`rate limit exceeded for key "alice": 500 credits per second, this call costs 160; retry after 120ms`},
		{"params", &portico.ParamsError{Position: 2, Field: "config.encoding", Reason: `want one of json, jsonParsed, base58, base64, got string "hex"`}, -32602, "200",
			`invalid params: param 2 (config.encoding): want one of json, jsonParsed, base58, base64, got string "hex"`},
		{"method", &portico.MethodNotFoundError{Method: "foo"}, -32601, "200", "the method foo does not exist/is not available"},
		{"logs", &portico.LogsTooLargeError{Bound: portico.LogBoundRange, Max: 100000, Got: 200000, Suggest: true, From: 1, To: 100000}, portico.CodeLogsTooLarge, "200",
			"log query too large: the block range spans 200000 blocks, limit is 100000; this block range would fit: [0x1, 0x186a0]"},
		{"log range", &portico.LogRangeError{Err: familyRangeError("block range extends beyond current head block")}, -32602, "200",
			"block range extends beyond current head block"},
		{"filter not found", portico.ErrFilterNotFound, -32000, "200", "filter not found"},
		{"not kept", &portico.MissingError{Network: "mainnet", What: "the state of block 5"}, portico.CodeNotKept, "200",
			"no node of network mainnet keeps the state of block 5"},
		{"log filters", &portico.LimitError{Limit: portico.LimitKeyFilters, Max: 256}, portico.CodeTooManySubs, "200", "too many log filters for this API key on this network: limit is 256"},
		{"tx timeout", &portico.TxTimeoutError{Hash: "0x01", Waited: 20 * time.Second}, 4, "200",
			"The transaction was added to the transaction pool but wasn't processed in 20s"},
		{"internal", errors.New("disk on fire"), jsonrpc.CodeInternalError, "500", "internal error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, status, known := jsonrpc.ErrorFor(tc.err)
			if e.Code != tc.code || !strings.HasPrefix(e.Message, tc.message) {
				t.Errorf("ErrorFor = %d %q, want %d %q", e.Code, e.Message, tc.code, tc.message)
			}
			if want := tc.code != jsonrpc.CodeInternalError; known != want {
				t.Errorf("known = %v, want %v", known, want)
			}
			if tc.status != "—" && fmt.Sprint(status) != tc.status {
				t.Errorf("status = %d, want %s", status, tc.status)
			}
			row := fmt.Sprintf("| %d | %s ", tc.code, tc.status)
			if tc.code == -32602 || tc.code == -32601 || tc.code == -32000 || tc.code == 4 || tc.code == jsonrpc.CodeInternalError {
				row = fmt.Sprintf("| %d | %s | `%s", tc.code, tc.status, tc.message)
			}
			if !strings.Contains(string(doc), row) {
				t.Errorf("docs/errors.md has no row starting %q", row)
			}
			if !strings.Contains(string(doc), tc.message) {
				t.Errorf("docs/errors.md does not show the message %q", tc.message)
			}
		})
	}

	// Portico's answers in place of a node say so in data, as the table
	// shows; the wrapped error keeps its code, message and status.
	for _, err := range []error{
		&portico.ParamsError{Position: 1, Field: "x", Reason: "bad"},
		&portico.MethodNotFoundError{Method: "foo"},
	} {
		plain, status, _ := jsonrpc.ErrorFor(err)
		e, answeredStatus, known := jsonrpc.ErrorFor(portico.Answered(err))
		if !known || e.Code != plain.Code || e.Message != plain.Message || answeredStatus != status || string(e.Data) != `{"source":"portico"}` {
			t.Errorf("answered %v: %+v %d", err, e, answeredStatus)
		}
		if len(plain.Data) != 0 {
			t.Errorf("%v carries data without being Portico's answer: %s", err, plain.Data)
		}
		row := fmt.Sprintf("| %d | 200 | `%s", e.Code, plain.Message[:10])
		if i := strings.Index(string(doc), row); i < 0 || !strings.Contains(strings.SplitN(string(doc)[i:], "\n", 2)[0], "`{\"source\":\"portico\"}`") {
			t.Errorf("docs/errors.md's row %q does not show the data", row)
		}
	}
}

// familyRangeError is a family's refusal of a log range, as families/evm
// words it: invalid params.
type familyRangeError string

func (e familyRangeError) Error() string  { return string(e) }
func (e familyRangeError) ErrorCode() int { return -32602 }
