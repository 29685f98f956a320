package evmverify

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/network/verify"
)

// object is a JSON object as the node sent it: its members in order, the
// values raw. A name that occurs twice is refused: two readers of the
// same answer could each take a different one.
type object struct {
	names  []string
	values map[string]jsontext.Value
}

// decodeObject reads one JSON object.
func decodeObject(what string, raw []byte) (*object, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, malformed(what, err)
	}
	if tok.Kind() != '{' {
		return nil, malformed(what, fmt.Errorf("want an object, got %s", tok.Kind()))
	}
	o := &object{values: make(map[string]jsontext.Value)}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, malformed(what, err)
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return nil, malformed(what+"."+name, err)
		}
		o.names = append(o.names, name)
		o.values[name] = slices.Clone(v)
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, malformed(what, err)
	}
	if _, err := dec.ReadToken(); err == nil {
		return nil, malformed(what, fmt.Errorf("data after the object"))
	}
	return o, nil
}

// decodeArray reads a JSON array's elements raw.
func decodeArray(what string, raw []byte) ([]jsontext.Value, error) {
	var out []jsontext.Value
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, malformed(what, err)
	}
	if out == nil {
		return nil, malformed(what, fmt.Errorf("want an array, got %.20s", raw))
	}
	return out, nil
}

// encode renders the object with its members in the node's order.
func (o *object) encode() []byte {
	b := []byte{'{'}
	for i, n := range o.names {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = jsontext.AppendQuote(b, n)
		b = append(b, ':')
		b = append(b, o.values[n]...)
	}
	return append(b, '}')
}

// marshalMembers renders v (a go-ethereum type with its own JSON form)
// and reads it back as members, to compare with a node's object.
func marshalMembers(v any) map[string]jsontext.Value {
	raw, err := stdjson.Marshal(v) // go-ethereum's types are written for encoding/json
	if err != nil {
		panic("verify: marshal " + err.Error()) // go-ethereum's own types always marshal
	}
	o, err := decodeObject("", raw)
	if err != nil {
		panic("verify: " + err.Error())
	}
	return o.values
}

// checkMembers compares the node's object with the members the verified
// data gives. Every member the node sent must be one the data gives, with
// an equal value (a member nothing covers is refused, not passed
// through); every member the data gives must be there, except those named
// in mayLack (fields some nodes leave out) and those whose value is null.
func checkMembers(what string, got *object, want map[string]jsontext.Value, mayLack ...string) error {
	for _, n := range got.names {
		w, ok := want[n]
		if !ok {
			return &verify.UnverifiableError{What: what + "." + n, Reason: "no commitment covers this field"}
		}
		if !sameValue(got.values[n], w) {
			return mismatch(what+"."+n, short(w), short(got.values[n]))
		}
	}
	for n, w := range want {
		if _, ok := got.values[n]; ok || slices.Contains(mayLack, n) || string(w) == "null" {
			continue
		}
		return mismatch(what+"."+n, short(w), "(missing)")
	}
	return nil
}

// sameValue compares two JSON values as data: member order and spacing do
// not matter, and hex strings compare without regard to case.
func sameValue(a, b jsontext.Value) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return sameData(x, y)
}

func sameData(x, y any) bool {
	switch x := x.(type) {
	case string:
		y, ok := y.(string)
		if !ok {
			return false
		}
		if strings.HasPrefix(x, "0x") && strings.HasPrefix(y, "0x") {
			return strings.EqualFold(x, y)
		}
		return x == y
	case []any:
		y, ok := y.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameData(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameData(v, w) {
				return false
			}
		}
		return true
	default:
		return x == y
	}
}

// short cuts a value for an error message.
func short(v []byte) string {
	if len(v) > 80 {
		return string(v[:77]) + "..."
	}
	return string(v)
}
