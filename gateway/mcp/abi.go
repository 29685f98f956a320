package mcp

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
)

// function is a contract function as call_contract was given it: its
// name, parameter types and (optionally) return types, as go-ethereum's
// ABI package reads them.
type function struct {
	method  abi.Method
	outputs abi.Arguments
}

// maxSignature bounds the signature text a tool call may give.
const maxSignature = 2048

// parseSignature reads "name(type,...)" with an optional
// " returns (type,...)" (also "function name(...) view returns (...)",
// and parameter names, which are dropped).
func parseSignature(sig string) (*function, error) {
	if len(sig) > maxSignature {
		return nil, fmt.Errorf("longer than %d characters", maxSignature)
	}
	s := strings.TrimSpace(sig)
	s = strings.TrimPrefix(s, "function ")
	open := strings.IndexByte(s, '(')
	if open <= 0 {
		return nil, fmt.Errorf("%q: want name(types), such as balanceOf(address) returns (uint256)", sig)
	}
	name := strings.TrimSpace(s[:open])
	end, err := closing(s, open)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", sig, err)
	}
	params := s[open : end+1]
	rest := strings.TrimSpace(s[end+1:])
	var rets string
	if i := strings.Index(rest, "returns"); i >= 0 {
		r := strings.TrimSpace(rest[i+len("returns"):])
		if !strings.HasPrefix(r, "(") {
			return nil, fmt.Errorf("%q: want returns (types)", sig)
		}
		e, err := closing(r, 0)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", sig, err)
		}
		if strings.TrimSpace(r[e+1:]) != "" {
			return nil, fmt.Errorf("%q: unexpected %q after the return types", sig, r[e+1:])
		}
		rets = r[:e+1]
		rest = rest[:i]
	}
	for _, word := range strings.Fields(rest) {
		switch word {
		case "view", "pure", "external", "public", "payable", "nonpayable":
		default:
			return nil, fmt.Errorf("%q: unexpected %q", sig, word)
		}
	}
	inputs, err := arguments(name, params)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", sig, err)
	}
	var outputs abi.Arguments
	if rets != "" {
		if outputs, err = arguments("returns", rets); err != nil {
			return nil, fmt.Errorf("%q: return types: %v", sig, err)
		}
	}
	m := abi.NewMethod(name, name, abi.Function, "view", false, false, inputs, outputs)
	return &function{method: m, outputs: outputs}, nil
}

// closing finds the parenthesis that closes the one at s[open].
func closing(s string, open int) (int, error) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i, nil
			}
		}
	}
	return 0, errors.New("unbalanced parentheses")
}

// arguments reads "(type name, ...)" into ABI arguments through
// go-ethereum's selector parser, after dropping parameter names and data
// locations.
func arguments(name, list string) (abi.Arguments, error) {
	sel, err := abi.ParseSelector(name + typesOnly(list))
	if err != nil {
		return nil, err
	}
	var out abi.Arguments
	for _, a := range sel.Inputs {
		t, err := abi.NewType(a.Type, "", a.Components)
		if err != nil {
			return nil, err
		}
		out = append(out, abi.Argument{Type: t})
	}
	return out, nil
}

// typesOnly keeps the first word of each parameter: "(address owner,
// uint256[] memory ids)" becomes "(address,uint256[])".
func typesOnly(list string) string {
	var b strings.Builder
	var seg strings.Builder
	flush := func() {
		if f := strings.Fields(seg.String()); len(f) > 0 {
			b.WriteString(f[0])
		}
		seg.Reset()
	}
	for i := 0; i < len(list); i++ {
		switch c := list[i]; c {
		case '(', ',':
			flush()
			b.WriteByte(c)
		case ')':
			// An array suffix after a tuple, "(uint256,bool)[]", stays.
			flush()
			b.WriteByte(c)
			for i+1 < len(list) && list[i+1] != ',' && list[i+1] != ')' && list[i+1] != ' ' {
				i++
				b.WriteByte(list[i])
			}
		default:
			seg.WriteByte(c)
		}
	}
	flush()
	return b.String()
}

// canonical is the function's signature as its selector hashes it.
func (f *function) canonical() string { return f.method.Sig }

// returns names the return types.
func (f *function) returns() string {
	ts := make([]string, len(f.outputs))
	for i, o := range f.outputs {
		ts[i] = o.Type.String()
	}
	return "(" + strings.Join(ts, ",") + ")"
}

// encode is the call data: the selector and the ABI-encoded arguments.
func (f *function) encode(args []any) ([]byte, error) {
	in := f.method.Inputs
	if len(args) != len(in) {
		return nil, fmt.Errorf("%s takes %d arguments, got %d", f.canonical(), len(in), len(args))
	}
	vals := make([]any, len(args))
	for i, a := range args {
		v, err := goValue(in[i].Type, a)
		if err != nil {
			return nil, fmt.Errorf("argument %d (%s): %v", i+1, in[i].Type.String(), err)
		}
		vals[i] = v.Interface()
	}
	packed, err := in.Pack(vals...)
	if err != nil {
		return nil, err
	}
	return append(append([]byte{}, f.method.ID...), packed...), nil
}

// decode reads an eth_call result by the return types: one value, or a
// list of them when there are several.
func (f *function) decode(hexData string) (any, error) {
	data, err := hex.DecodeString(strings.TrimPrefix(hexData, "0x"))
	if err != nil {
		return nil, err
	}
	vals, err := f.outputs.Unpack(data)
	if err != nil {
		return nil, err
	}
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = jsonValue(reflect.ValueOf(v))
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

// maxDepth bounds how deep arrays and tuples of arguments may nest.
const maxDepth = 16

// goValue turns a JSON argument into the Go value go-ethereum packs for
// type t.
func goValue(t abi.Type, a any) (reflect.Value, error) { return goValueAt(t, a, 0) }

func goValueAt(t abi.Type, a any, depth int) (reflect.Value, error) {
	if depth > maxDepth {
		return reflect.Value{}, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	rt := t.GetType()
	switch t.T {
	case abi.IntTy, abi.UintTy:
		n, err := integer(a)
		if err != nil {
			return reflect.Value{}, err
		}
		if err := fits(n, t.T == abi.IntTy, t.Size); err != nil {
			return reflect.Value{}, err
		}
		if rt == reflect.TypeFor[*big.Int]() {
			return reflect.ValueOf(n), nil
		}
		v := reflect.New(rt).Elem()
		if t.T == abi.IntTy {
			v.SetInt(n.Int64())
		} else {
			v.SetUint(n.Uint64())
		}
		return v, nil
	case abi.BoolTy:
		b, ok := a.(bool)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want true or false, got %s", describe(a))
		}
		return reflect.ValueOf(b), nil
	case abi.StringTy:
		s, ok := a.(string)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a string, got %s", describe(a))
		}
		return reflect.ValueOf(s), nil
	case abi.AddressTy:
		s, ok := a.(string)
		if !ok || !evmAddress.MatchString(s) {
			return reflect.Value{}, fmt.Errorf("want a 0x-prefixed 20-byte hex address, got %s", describe(a))
		}
		return reflect.ValueOf(common.HexToAddress(s)), nil
	case abi.BytesTy, abi.FixedBytesTy:
		s, ok := a.(string)
		if !ok || !strings.HasPrefix(s, "0x") {
			return reflect.Value{}, fmt.Errorf("want 0x hex bytes, got %s", describe(a))
		}
		b, err := hex.DecodeString(s[2:])
		if err != nil {
			return reflect.Value{}, fmt.Errorf("want 0x hex bytes: %v", err)
		}
		if t.T == abi.BytesTy {
			return reflect.ValueOf(b), nil
		}
		if len(b) != t.Size {
			return reflect.Value{}, fmt.Errorf("want %d bytes, got %d", t.Size, len(b))
		}
		v := reflect.New(rt).Elem()
		reflect.Copy(v, reflect.ValueOf(b))
		return v, nil
	case abi.SliceTy, abi.ArrayTy:
		list, ok := a.([]any)
		if !ok {
			return reflect.Value{}, fmt.Errorf("want a JSON array, got %s", describe(a))
		}
		var v reflect.Value
		if t.T == abi.SliceTy {
			v = reflect.MakeSlice(rt, len(list), len(list))
		} else {
			if len(list) != t.Size {
				return reflect.Value{}, fmt.Errorf("want %d elements, got %d", t.Size, len(list))
			}
			v = reflect.New(rt).Elem()
		}
		for i, e := range list {
			ev, err := goValueAt(*t.Elem, e, depth+1)
			if err != nil {
				return reflect.Value{}, fmt.Errorf("element %d: %v", i, err)
			}
			v.Index(i).Set(ev)
		}
		return v, nil
	case abi.TupleTy:
		list, ok := a.([]any)
		if !ok || len(list) != len(t.TupleElems) {
			return reflect.Value{}, fmt.Errorf("want a JSON array of the tuple's %d members, got %s", len(t.TupleElems), describe(a))
		}
		v := reflect.New(rt).Elem()
		for i, e := range list {
			ev, err := goValueAt(*t.TupleElems[i], e, depth+1)
			if err != nil {
				return reflect.Value{}, fmt.Errorf("member %d: %v", i, err)
			}
			v.Field(i).Set(ev)
		}
		return v, nil
	}
	return reflect.Value{}, fmt.Errorf("type %s is not supported", t.String())
}

// integer reads a JSON number or a decimal or 0x hex string.
func integer(a any) (*big.Int, error) {
	switch v := a.(type) {
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			return nil, fmt.Errorf("%v is not an exact integer: give large integers as decimal strings", v)
		}
		return big.NewInt(int64(v)), nil
	case json.Number:
		n, ok := new(big.Int).SetString(v.String(), 10)
		if !ok {
			return nil, fmt.Errorf("%v is not an integer", v)
		}
		return n, nil
	case string:
		s := strings.TrimSpace(v)
		if len(s) > 80 {
			return nil, errors.New("integer string longer than 80 characters")
		}
		base := 10
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
			s, base = s[2:], 16
		}
		n, ok := new(big.Int).SetString(s, base)
		if !ok || s == "" || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
			return nil, fmt.Errorf("%q is not an integer", v)
		}
		if neg {
			n.Neg(n)
		}
		return n, nil
	}
	return nil, fmt.Errorf("want an integer (a number or a decimal string), got %s", describe(a))
}

// fits checks n against an intN or uintN.
func fits(n *big.Int, signed bool, bits int) error {
	if signed {
		lim := new(big.Int).Lsh(big.NewInt(1), uint(bits-1))
		if n.Cmp(new(big.Int).Neg(lim)) < 0 || n.Cmp(lim) >= 0 {
			return fmt.Errorf("%s does not fit in int%d", n, bits)
		}
		return nil
	}
	if n.Sign() < 0 || n.BitLen() > bits {
		return fmt.Errorf("%s does not fit in uint%d", n, bits)
	}
	return nil
}

func describe(a any) string {
	switch a.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", a)
}

// jsonValue is a decoded ABI value as JSON shows it: integers as decimal
// strings (no precision is lost), addresses checksummed, bytes as 0x hex,
// arrays and tuples as arrays.
func jsonValue(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	switch x := v.Interface().(type) {
	case *big.Int:
		return x.String()
	case common.Address:
		return x.Hex()
	case []byte:
		return "0x" + hex.EncodeToString(x)
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprint(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprint(v.Uint())
	case reflect.Bool:
		return v.Bool()
	case reflect.String:
		return v.String()
	case reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, v.Len())
			reflect.Copy(reflect.ValueOf(b), v)
			return "0x" + hex.EncodeToString(b)
		}
		fallthrough
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = jsonValue(v.Index(i))
		}
		return out
	case reflect.Struct:
		out := make([]any, v.NumField())
		for i := range out {
			out[i] = jsonValue(v.Field(i))
		}
		return out
	case reflect.Pointer:
		return jsonValue(v.Elem())
	}
	return fmt.Sprint(v.Interface())
}
