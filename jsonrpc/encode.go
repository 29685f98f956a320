package jsonrpc

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

var nullID = []byte("null")

// AppendResult appends a success response. id and result are raw JSON and are
// copied byte for byte; a nil id is written as null.
func AppendResult(dst, id, result []byte) []byte {
	dst = AppendResultStart(dst, id)
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendResultStart appends a success response up to its result: the
// caller appends the result and then AppendResultEnd.
func AppendResultStart(dst, id []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	return append(dst, `,"result":`...)
}

// AppendResultEnd closes a response begun by AppendResultStart.
func AppendResultEnd(dst []byte) []byte { return append(dst, '}') }

// AppendError appends an error response: e.Raw when a node wrote the
// error, else an object of e's fields.
func AppendError(dst, id []byte, e *Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	if len(e.Raw) > 0 {
		dst = append(dst, `,"error":`...)
		dst = append(dst, e.Raw...)
		return append(dst, '}')
	}
	dst = append(dst, `,"error":{"code":`...)
	dst = strconv.AppendInt(dst, int64(e.Code), 10)
	dst = append(dst, `,"message":`...)
	dst, _ = jsontext.AppendQuote(dst, e.Message)
	if len(e.Data) > 0 {
		dst = append(dst, `,"data":`...)
		dst = append(dst, e.Data...)
	}
	return append(dst, "}}"...)
}

// AppendRequest appends a request envelope; a nil params is omitted.
func AppendRequest(dst, id []byte, method string, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	dst = append(dst, `,"method":`...)
	dst, _ = jsontext.AppendQuote(dst, method)
	if params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

func appendID(dst, id []byte) []byte {
	if id == nil {
		return append(dst, nullID...)
	}
	return append(dst, id...)
}
