// Package rpcparams decodes and checks JSON-RPC params for the family method
// tables: positional arrays, named objects with a fixed set of fields, and
// the scalar kinds inside them. Every failure is a *portico.ParamsError that
// names the param's position and the field, and says what was expected and
// what came.
package rpcparams

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// Errorf builds a params error at a position (1-based, 0 for named params)
// and field.
func Errorf(pos int, field, format string, args ...any) error {
	return &portico.ParamsError{Position: pos, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Describe names the kind of a JSON value with a short excerpt, for error
// messages: `string "abc"`, `number 1.5`, `object`, `array`, `null`.
func Describe(v jsontext.Value) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v.Kind() {
	case '"':
		s := string(v)
		if len(s) > 72 {
			s = s[:69] + `..."`
		}
		return "string " + s
	case '0':
		s := string(v)
		if len(s) > 24 {
			s = s[:21] + "..."
		}
		return "number " + s
	case 't', 'f':
		return "boolean " + string(v)
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "invalid JSON"
}

// Positional splits array params. names are the params' names, in order,
// used in messages; required is how many must be present. Named params (an
// object) are refused, since these methods are positional only.
func Positional(raw jsontext.Value, required int, names ...string) ([]jsontext.Value, error) {
	if len(raw) == 0 {
		if required == 0 {
			return nil, nil
		}
		return nil, Errorf(0, "", "want an array [%s], got no params", strings.Join(names, ", "))
	}
	if raw.Kind() != '[' {
		return nil, Errorf(0, "", "want an array [%s], got %s", strings.Join(names, ", "), Describe(raw))
	}
	var items []jsontext.Value
	if err := json.Unmarshal(raw, &items, jsontext.AllowDuplicateNames(true)); err != nil {
		return nil, Errorf(0, "", "malformed array: %v", err)
	}
	if len(items) < required {
		return nil, Errorf(len(items)+1, names[len(items)], "missing; want %d to %d params [%s], got %d", required, len(names), strings.Join(names, ", "), len(items))
	}
	if len(items) > len(names) {
		return nil, Errorf(len(names)+1, "", "too many params: want at most %d [%s], got %d", len(names), strings.Join(names, ", "), len(items))
	}
	return items, nil
}

// Object decodes an object whose members must all be in allowed. Members
// are returned by name; a repeated or unknown name is an error.
func Object(v jsontext.Value, pos int, field string, allowed ...string) (map[string]jsontext.Value, error) {
	if v.Kind() != '{' {
		return nil, Errorf(pos, field, "want an object, got %s", Describe(v))
	}
	dec := jsontext.NewDecoder(strings.NewReader(string(v)), jsontext.AllowDuplicateNames(true))
	if _, err := dec.ReadToken(); err != nil {
		return nil, Errorf(pos, field, "malformed object: %v", err)
	}
	out := map[string]jsontext.Value{}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, Errorf(pos, field, "malformed object: %v", err)
		}
		name := tok.String()
		val, err := dec.ReadValue()
		if err != nil {
			return nil, Errorf(pos, field, "malformed object: %v", err)
		}
		f := join(field, name)
		if !contains(allowed, name) {
			return nil, Errorf(pos, f, "unknown field; allowed fields are %s", strings.Join(allowed, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, Errorf(pos, f, "field appears twice")
		}
		out[name] = val.Clone()
	}
	return out, nil
}

// Array decodes a JSON array.
func Array(v jsontext.Value, pos int, field string) ([]jsontext.Value, error) {
	if v.Kind() != '[' {
		return nil, Errorf(pos, field, "want an array, got %s", Describe(v))
	}
	var items []jsontext.Value
	if err := json.Unmarshal(v, &items, jsontext.AllowDuplicateNames(true)); err != nil {
		return nil, Errorf(pos, field, "malformed array: %v", err)
	}
	return items, nil
}

// String decodes a JSON string.
func String(v jsontext.Value, pos int, field string) (string, error) {
	if v.Kind() != '"' {
		return "", Errorf(pos, field, "want a string, got %s", Describe(v))
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", Errorf(pos, field, "malformed string: %v", err)
	}
	return s, nil
}

// Enum decodes a string that must be one of allowed.
func Enum(v jsontext.Value, pos int, field string, allowed ...string) (string, error) {
	s, err := String(v, pos, field)
	if err != nil {
		return "", Errorf(pos, field, "want one of %s, got %s", strings.Join(allowed, ", "), Describe(v))
	}
	if !contains(allowed, s) {
		return "", Errorf(pos, field, "want one of %s, got %s", strings.Join(allowed, ", "), Describe(v))
	}
	return s, nil
}

// Bool decodes a JSON boolean.
func Bool(v jsontext.Value, pos int, field string) (bool, error) {
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, Errorf(pos, field, "want a boolean, got %s", Describe(v))
}

// Uint decodes a JSON integer between 0 and max. Fractions, exponents,
// negative numbers and strings are refused.
func Uint(v jsontext.Value, pos int, field string, max uint64) (uint64, error) {
	if v.Kind() != '0' {
		return 0, Errorf(pos, field, "want an integer, got %s", Describe(v))
	}
	s := string(v)
	if strings.HasPrefix(s, "-") {
		if s == "-0" {
			return 0, nil
		}
		return 0, Errorf(pos, field, "want a non-negative integer, got %s", Describe(v))
	}
	if strings.ContainsAny(s, ".eE") {
		return 0, Errorf(pos, field, "want an integer, got %s", Describe(v))
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > max {
		return 0, Errorf(pos, field, "want an integer from 0 to %d, got %s", max, Describe(v))
	}
	return n, nil
}

// MaxUint64 is the largest u64, for Uint.
const MaxUint64 = math.MaxUint64

// IsHex reports whether s is only hex digits.
func IsHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// Index formats an array element path: field[i].
func Index(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

func join(field, name string) string {
	if field == "" {
		return name
	}
	return field + "." + name
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
