// Package jsonrpc holds the JSON-RPC 2.0 wire format shared by the gateway's
// transports and its upstream clients: request and response envelopes, the
// standard error codes, and a decoder that keeps ids and params as raw bytes so
// they can be echoed and forwarded without re-encoding.
package jsonrpc

import (
	"fmt"

	"github.com/go-json-experiment/json/jsontext"
)

// Version is the only protocol version the gateway speaks.
const Version = "2.0"

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object as it appears on the wire. It is also a Go
// error, so upstream errors can travel through the gateway unchanged.
type Error struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    jsontext.Value `json:"data,omitzero"`
	// Raw is the error object as a node wrote it, set by DecodeResponse:
	// AppendError writes these bytes, so a node's error reaches the client
	// byte for byte (its escapes, member order and any member besides
	// code, message and data), not written anew from the fields.
	Raw jsontext.Value `json:"-"`
}

// Error returns the message with its code.
func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// ErrorCode returns the JSON-RPC code, the convention go-ethereum's rpc
// package uses as well.
func (e *Error) ErrorCode() int { return e.Code }

// Request is one call of a request body. ID is nil when the member is absent,
// which makes the call a notification; a JSON null id is kept as the bytes
// "null" because JSON-RPC 2.0 treats it as a (discouraged) ordinary id.
type Request struct {
	ID     jsontext.Value
	Method string
	Params jsontext.Value
}

// IsNotification reports whether the caller expects no response.
func (r *Request) IsNotification() bool { return r.ID == nil }

// Response is a decoded response envelope. Result and Error are exclusive.
type Response struct {
	ID     jsontext.Value
	Result jsontext.Value
	Error  *Error
}
