package jsonrpc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Call is one entry of a decoded request body: either a well-formed request,
// or Err, the error that answers a malformed entry. A malformed entry is
// answered even when it carries no id, as JSON-RPC 2.0 requires.
type Call struct {
	Request
	Err *Error
}

// wireRequest receives an envelope with every member kept raw, so that each
// can be checked and reported on by name.
type wireRequest struct {
	JSONRPC jsontext.Value `json:"jsonrpc"`
	ID      jsontext.Value `json:"id"`
	Method  jsontext.Value `json:"method"`
	Params  jsontext.Value `json:"params"`
}

// Decode splits a request body into its calls. batch reports whether the body
// was a JSON array. A body that is not JSON at all, or an empty batch, yields a
// single error that answers the whole body; a malformed entry inside a batch
// yields a Call with Err set, so the other entries still run.
func Decode(body []byte) (calls []Call, batch bool, err *Error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, false, &Error{Code: CodeParseError, Message: "parse error: empty request body"}
	}
	if trimmed[0] != '[' {
		// validJSON applies jsontext's rules at about twice its speed
		// (validate.go); a call is read by the same path as a result.
		if !validJSON(body) {
			return nil, false, parseError(body)
		}
		return []Call{decodeCall(trimmed)}, false, nil
	}
	var items []jsontext.Value
	// Duplicate names inside an entry are that entry's problem, reported by
	// decodeCall as an invalid request, not a parse error of the whole body.
	if e := json.Unmarshal(body, &items, jsontext.AllowDuplicateNames(true)); e != nil {
		return nil, true, parseError(body)
	}
	if len(items) == 0 {
		return nil, true, &Error{Code: CodeInvalidRequest, Message: "invalid request: empty batch"}
	}
	calls = make([]Call, len(items))
	for i, item := range items {
		calls[i] = decodeCall(item)
	}
	return calls, true, nil
}

// parseError describes where a body stops being JSON.
func parseError(body []byte) *Error {
	dec := jsontext.NewDecoder(bytes.NewReader(body))
	for {
		if _, err := dec.ReadToken(); err != nil {
			if errors.Is(err, io.EOF) {
				// The body held more than one value, or trailing garbage.
				return &Error{Code: CodeParseError, Message: "parse error: unexpected data after the JSON value"}
			}
			return &Error{Code: CodeParseError, Message: "parse error: " + cleanJSONError(err)}
		}
		if dec.StackDepth() == 0 {
			if _, err := dec.ReadToken(); err != nil && !errors.Is(err, io.EOF) {
				return &Error{Code: CodeParseError, Message: "parse error: " + cleanJSONError(err)}
			}
			return &Error{Code: CodeParseError, Message: "parse error: unexpected data after the JSON value"}
		}
	}
}

// cleanJSONError strips the library prefix so the message reads as ours.
func cleanJSONError(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "jsontext: ")
	s = strings.TrimPrefix(s, "json: ")
	return s
}

// decodeCall checks one entry that is already known to be valid JSON.
func decodeCall(raw jsontext.Value) Call {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return Call{Err: invalid("want a JSON object, got " + kindName(raw))}
	}
	w, ok := splitRequest(raw)
	if !ok {
		if err := json.Unmarshal(raw, &w); err != nil {
			return Call{Err: invalid(cleanJSONError(err))}
		}
	}
	var c Call
	switch {
	case w.ID == nil:
	case isIDKind(w.ID):
		c.ID = w.ID
	default:
		return Call{Err: invalid("id must be a string, a number or null, got " + kindName(w.ID))}
	}
	switch {
	case w.JSONRPC == nil:
		c.Err = invalid(`jsonrpc member is missing, want "2.0"`)
	case string(w.JSONRPC) != `"2.0"`:
		c.Err = invalid(`jsonrpc must be "2.0", got ` + abbreviate(w.JSONRPC))
	case w.Method == nil:
		c.Err = invalid("method member is missing")
	case w.Method[0] != '"':
		c.Err = invalid("method must be a string, got " + kindName(w.Method))
	}
	if c.Err != nil {
		return c
	}
	if bytes.IndexByte(w.Method, '\\') < 0 {
		c.Method = string(w.Method[1 : len(w.Method)-1])
	} else if err := json.Unmarshal(w.Method, &c.Method); err != nil {
		c.Err = invalid("method: " + cleanJSONError(err))
		return c
	}
	if c.Method == "" {
		c.Err = invalid("method is empty")
		return c
	}
	switch {
	case w.Params == nil || string(w.Params) == "null":
	case w.Params[0] == '[' || w.Params[0] == '{':
		c.Params = w.Params
	default:
		c.Err = invalid("params must be an array or an object, got " + kindName(w.Params))
	}
	return c
}

// splitRequest is the fast path of decodeCall for a call as clients write
// it: an object whose members are among jsonrpc, id, method and params,
// each at most once, with names written without escapes. It walks raw,
// which the caller has validated, member by member and keeps each value's
// bytes as json.Unmarshal would into wireRequest, without reflection.
// Anything else (another member, an escaped or repeated name) is left to
// json.Unmarshal, whose rules and messages then apply: ok is false.
//
// The values are slices of one copy of raw, never of raw itself: a call's
// id and params outlive the buffer its body was read into (a subscription
// keeps its params, and fasthttp reuses request buffers), as they did when
// json.Unmarshal copied each of them.
func splitRequest(raw []byte) (w wireRequest, ok bool) {
	raw = bytes.Clone(raw)
	var seen [4]bool
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return w, true
	}
	for {
		// raw[i] opens a name; the first quote after it closes the name
		// unless the name holds an escape, which sends it to the slow path.
		j := bytes.IndexByte(raw[i+1:], '"')
		name := raw[i+1 : i+1+j]
		var k int
		switch string(name) {
		case "jsonrpc":
			k = 0
		case "id":
			k = 1
		case "method":
			k = 2
		case "params":
			k = 3
		default:
			return wireRequest{}, false
		}
		if seen[k] {
			return wireRequest{}, false
		}
		seen[k] = true
		i = skipSpace(raw, i+j+2)           // at the colon
		i = skipSpace(raw, i+1)             // at the value
		end := skipValue(raw, i)            // after it
		v := jsontext.Value(raw[i:end:end]) // appending to one must not write into the next
		switch k {
		case 0:
			w.JSONRPC = v
		case 1:
			w.ID = v
		case 2:
			w.Method = v
		case 3:
			w.Params = v
		}
		i = skipSpace(raw, end)
		if raw[i] == '}' {
			return w, true
		}
		i = skipSpace(raw, i+1) // past the comma, at the next name
	}
}

// skipValue returns the index just after the value that starts at b[i],
// in bytes already validated.
func skipValue(b []byte, i int) int {
	depth := 0
	for {
		switch b[i] {
		case '"':
			i = scanString(b, i+1)
		case '{', '[':
			depth++
			i++
		case '}', ']':
			depth--
			i++
		default: // a number, a literal, or inside a container ',' ':' and space
			i++
			if depth == 0 {
				for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
					i++
				}
				return i
			}
			continue
		}
		if depth == 0 {
			return i
		}
	}
}

func invalid(reason string) *Error {
	return &Error{Code: CodeInvalidRequest, Message: "invalid request: " + reason}
}

func isIDKind(v jsontext.Value) bool {
	switch v.Kind() {
	case '"', '0', 'n':
		return true
	}
	return false
}

// kindName names the JSON type of a raw value for error messages.
func kindName(v jsontext.Value) string {
	switch v.Kind() {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "nothing"
}

// abbreviate quotes a raw value for a message, cut to a readable length.
func abbreviate(v jsontext.Value) string {
	const max = 40
	if len(v) > max {
		return string(v[:max]) + "…"
	}
	return string(v)
}

// DecodeResponse decodes one response envelope, as sent by an upstream node.
// Result aliases body: the bytes are checked to be valid JSON but are neither
// copied nor re-encoded.
func DecodeResponse(body []byte) (Response, error) {
	if r, ok := splitResult(body); ok {
		return r, nil
	}
	return decodeResponse(body)
}

// Envelopes as real nodes write them: geth, anvil and erigon put the id
// before the result, agave, pathfinder and juno after it.
var (
	prefixIDFirst     = []byte(`{"jsonrpc":"2.0","id":`)
	prefixResultFirst = []byte(`{"jsonrpc":"2.0","result":`)
	memberResult      = []byte(`,"result":`)
	memberID          = []byte(`,"id":`)
)

// splitResult is the fast path of DecodeResponse for a success response
// in the compact layout nodes write, which is nearly all traffic. It finds
// the result by the envelope's fixed bytes, trims the whitespace around
// it as the full decoder does, and checks that what is left is exactly
// one valid JSON value by the full decoder's rules (validate, at about
// twice the speed of jsontext); anything else, errors included, goes to
// the full decoder, which then refuses it or reads it. Because the result
// is one complete value, the envelope around it is well formed: no member
// can hide in it.
func splitResult(body []byte) (Response, bool) {
	end := len(body)
	for end > 0 && isSpace(body[end-1]) {
		end--
	}
	if end == 0 || body[end-1] != '}' {
		return Response{}, false
	}
	var r Response
	var result []byte
	switch {
	case bytes.HasPrefix(body, prefixIDFirst):
		rest := body[len(prefixIDFirst) : end-1]
		i := bytes.Index(rest, memberResult)
		if i < 0 || !plainID(rest[:i]) {
			return Response{}, false
		}
		r.ID, result = rest[:i], rest[i+len(memberResult):]
	case bytes.HasPrefix(body, prefixResultFirst):
		rest := body[len(prefixResultFirst) : end-1]
		i := bytes.LastIndex(rest, memberID)
		if i < 0 || !plainID(rest[i+len(memberID):]) {
			return Response{}, false
		}
		r.ID, result = rest[i+len(memberID):], rest[:i]
	default:
		return Response{}, false
	}
	result = trimSpace(result)
	// The result sits one level down in the envelope: the full decoder
	// lets it nest one level less deep than a value on its own.
	if !validate(result, maxDepth-1) {
		return Response{}, false
	}
	r.Result = result
	return r, true
}

// plainID reports whether b is an id as a node echoes ours: an integer,
// or a string of printable ASCII without escapes. Both are valid JSON as
// they stand, so the full decoder would read the same bytes.
func plainID(b []byte) bool {
	if len(b) == 0 || len(b) > 80 {
		return false
	}
	if b[0] == '"' {
		if len(b) < 2 || b[len(b)-1] != '"' {
			return false
		}
		for _, c := range b[1 : len(b)-1] {
			if c < ' ' || c > '~' || c == '"' || c == '\\' {
				return false
			}
		}
		return true
	}
	digits := b
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// trimSpace trims JSON whitespace, which bytes.TrimSpace would not match
// exactly (it trims \v, \f and more).
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// decodeResponse decodes any response envelope with the streaming
// decoder, checking every byte.
func decodeResponse(body []byte) (Response, error) {
	var r Response
	// Names inside the result are the node's business and tracking them
	// costs more than the rest of the parse on large results; syntax is
	// still checked in full.
	dec := jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return r, fmt.Errorf("jsonrpc: response is not a JSON object")
	}
	var seenVersion bool
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return r, fmt.Errorf("jsonrpc: malformed response: %s", cleanJSONError(err))
		}
		name := tok.String() // the token is only valid until the next read
		val, err := dec.ReadValue()
		if err != nil {
			return r, fmt.Errorf("jsonrpc: malformed response: %s", cleanJSONError(err))
		}
		switch name {
		case "jsonrpc":
			seenVersion = string(val) == `"2.0"`
		case "id":
			r.ID = val
		case "result":
			r.Result = val
		case "error":
			if val.Kind() == 'n' {
				continue
			}
			r.Error = new(Error)
			if err := json.Unmarshal(val, r.Error); err != nil {
				return r, fmt.Errorf("jsonrpc: malformed error object in response: %s", cleanJSONError(err))
			}
			// The node's bytes, passed on as they came; val is the
			// decoder's and the body may go back to a pool.
			r.Error.Raw = bytes.Clone(val)
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return r, fmt.Errorf("jsonrpc: malformed response: %s", cleanJSONError(err))
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return r, fmt.Errorf("jsonrpc: unexpected data after the response")
	}
	switch {
	case !seenVersion:
		return r, fmt.Errorf(`jsonrpc: response lacks "jsonrpc":"2.0"`)
	case r.Error == nil && r.Result == nil:
		return r, fmt.Errorf("jsonrpc: response has neither result nor error")
	case r.Error != nil && r.Result != nil:
		return r, fmt.Errorf("jsonrpc: response has both result and error")
	}
	return r, nil
}
