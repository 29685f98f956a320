package paramkey

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// TestAppend: spellings of one value share a form; other values do not.
func TestAppend(t *testing.T) {
	const (
		json = portico.KeyJSON
		hex  = portico.KeyHexFold
	)
	same := []struct {
		name string
		form portico.KeyForm
		a, b string
	}{
		{"space after a comma", hex, `["0x0c2c51a0990aee1d73c1228de158688341557508","0x2"]`, `["0x0c2c51a0990aee1d73c1228de158688341557508", "0x2"]`},
		{"indented", json, `[1,{"a":[true,null]}]`, "[\n  1,\n  {\n    \"a\": [ true, null ]\n  }\n]"},
		{"member order", json, `[{"to":"0x1","data":"0x2","from":"0x3"},"latest"]`, `[{"from":"0x3","data":"0x2","to":"0x1"},"latest"]`},
		{"nested member order", json, `{"filter":{"to_block":1,"from_block":0,"keys":[["0x1"]]}}`, `{"filter":{"from_block":0,"keys":[["0x1"]],"to_block":1}}`},
		{"escapes", json, `["\u0041\/b\u00e9"]`, `["A/bé"]`},
		{"checksummed address", hex, `["0x0C2c51a0990AeE1d73C1228de158688341557508","latest"]`, `["0x0c2c51a0990aee1d73c1228de158688341557508","latest"]`},
		{"hex quantity case", hex, `["0xAbC"]`, `["0xabc"]`},
		{"address as a member name", hex, `[{},"latest",{"0xAbC":{"balance":"0x1"}}]`, `[{},"latest",{"0xabc":{"balance":"0x1"}}]`},
		{"folded names reordered", hex, `[{"0xB":1,"0xa":2}]`, `[{"0xA":2,"0xb":1}]`},
		{"escaped hex", hex, `["0x\u0041"]`, `["0xa"]`},
		{"surrounding space", json, " [1] \n", "[1]"},
	}
	for _, tc := range same {
		t.Run(tc.name, func(t *testing.T) {
			a, b := Append(nil, []byte(tc.a), tc.form), Append(nil, []byte(tc.b), tc.form)
			if !bytes.Equal(a, b) {
				t.Fatalf("%s -> %q\n%s -> %q", tc.a, a, tc.b, b)
			}
		})
	}
	differ := []struct {
		name string
		form portico.KeyForm
		a, b string
	}{
		{"numbers keep their spelling", json, `[1]`, `[1.0]`},
		{"exponent", json, `[10]`, `[1e1]`},
		{"base58 is case-sensitive", json, `["9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"]`, `["9xqewvg816bux9epjhmat23yvvm2zwbrrpzb9pusvfin"]`},
		{"base64 that looks like hex", json, `["0xAB"]`, `["0xab"]`},
		{"leading zeros are not folded", hex, `["0x02"]`, `["0x2"]`},
		{"0X is not 0x", hex, `["0XAB"]`, `["0Xab"]`},
		{"a tag is not hex", hex, `["Latest"]`, `["latest"]`},
		{"string and number", json, `["1"]`, `[1]`},
		{"array order", json, `[1,2]`, `[2,1]`},
		{"repeated names in another order", json, `{"a":1,"a":2}`, `{"a":2,"a":1}`},
		{"names repeated once folded", hex, `[{"0xab":1,"0xAB":2}]`, `[{"0xAB":2,"0xab":1}]`},
		{"no params and empty array", json, ``, `[]`},
		{"invalid and valid", json, `[1,]`, `[1]`},
	}
	for _, tc := range differ {
		t.Run(tc.name, func(t *testing.T) {
			a, b := Append(nil, []byte(tc.a), tc.form), Append(nil, []byte(tc.b), tc.form)
			if bytes.Equal(a, b) {
				t.Fatalf("%s and %s share the form %q", tc.a, tc.b, a)
			}
		})
	}
	if got := string(Append([]byte("k\x00"), []byte(`[ {"b":1, "a":"0xAB"} ]`), hex)); got != "k\x00"+`[{"a":"0xab","b":1}]` {
		t.Fatalf("form %q", got)
	}
	if got := Append(nil, []byte(`{"a":1,"a":2}`), json); got[0] != opaque || string(got[1:]) != `{"a":1,"a":2}` {
		t.Fatalf("repeated names: %q", got)
	}
}

// TestFastPath: the params clients send take the scanner, not the library.
func TestFastPath(t *testing.T) {
	for _, p := range []string{
		`["0x0C2c51a0990AeE1d73C1228de158688341557508","latest"]`,
		`[{"to":"0x1","data":"0x2","from":"0x3"},"0x10",{}]`,
		`{"filter":{"from_block":{"block_number":1},"to_block":"latest","chunk_size":10}}`,
		`[430,{"encoding":"json","maxSupportedTransactionVersion":0,"rewards":false}]`,
	} {
		if _, ok := appendFast(nil, []byte(p), true); !ok {
			t.Errorf("%s takes the library", p)
		}
	}
}

// FuzzAppend checks the form against the library and against the JSON
// decoder, for any bytes:
//   - the scanner writes exactly what the library writes when it does not
//     give up;
//   - the form of valid params is JSON for the same value (strings folded
//     as the form says), so two params share a form only if they are the
//     same value; invalid params keep their bytes behind the opaque mark;
//   - other spellings of the same value (spaces, member order, escapes,
//     hex case) share the form, which is its own form.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{
		`["0x0C2c51a0990AeE1d73C1228de158688341557508","0x2"]`,
		`[{"to":"0x1","data":"0xAB","from":"0x3"},"latest",{"0xAbC":{"balance":"0x1"}}]`,
		`{"filter":{"to_block":1,"from_block":0,"keys":[["0x1"],[]],"chunk_size":1e2}}`,
		`["\u0041\/b\u00e9\ud83d\ude00",-0,1.5E-3,true,false,null]`,
		`{"a":1,"a":2}`, `[{"0xab":1,"0xAB":2}]`, `[1,]`, ``, `"\u0000"`, "[\"\xff\"]",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, params []byte, fold bool) {
		form := portico.KeyJSON
		if fold {
			form = portico.KeyHexFold
		}
		trimmed := trimSpace(params)
		got := Append([]byte("p"), params, form)
		if !bytes.HasPrefix(got, []byte("p")) {
			t.Fatalf("dst lost: %q", got)
		}
		got = got[1:]
		if len(trimmed) == 0 {
			if len(got) != 0 {
				t.Fatalf("empty params have the form %q", got)
			}
			return
		}
		if fast, ok := appendFast(nil, trimmed, fold); ok {
			if slow := appendSlow(nil, trimmed, form); !bytes.Equal(fast, slow) {
				t.Fatalf("%q: scanner %q, library %q", params, fast, slow)
			}
		}
		if got[0] == opaque {
			if !bytes.Equal(got[1:], trimmed) {
				t.Fatalf("%q: opaque form %q", params, got)
			}
			if jsontext.Value(trimmed).IsValid() && !repeatsNames(trimmed, fold) {
				t.Fatalf("%q: valid params without repeated names made opaque", params)
			}
			return
		}
		if !jsontext.Value(got).IsValid() {
			t.Fatalf("%q: form %q is not JSON", params, got)
		}
		if want, have := decodeFolded(t, trimmed, fold), decodeFolded(t, got, false); !reflect.DeepEqual(want, have) {
			t.Fatalf("%q: form %q is another value", params, got)
		}
		if again := Append(nil, got, form); !bytes.Equal(again, got) {
			t.Fatalf("%q: the form %q has the form %q", params, got, again)
		}
		for _, other := range respell(t, trimmed, fold) {
			if o := Append(nil, other, form); !bytes.Equal(o, got) {
				t.Fatalf("%q and %q have the forms %q and %q", params, other, got, o)
			}
		}
	})
}

// decodeFolded decodes JSON with numbers as their text, hex strings and
// names folded when fold says so.
func decodeFolded(t *testing.T, b []byte, fold bool) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", b, err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if fold {
					k = foldString(k)
				}
				out[k] = walk(e)
			}
			return out
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			if fold {
				return foldString(x)
			}
		}
		return v
	}
	return walk(v)
}

func foldString(s string) string {
	if isHexString([]byte(s)) {
		return "0x" + strings.ToLower(s[2:])
	}
	return s
}

// repeatsNames reports whether valid JSON has an object with a repeated
// name (after folding, when fold says so).
func repeatsNames(b []byte, fold bool) bool {
	d := jsontext.NewDecoder(bytes.NewReader(b), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var seen []map[string]bool
	for {
		tok, err := d.ReadToken()
		if err != nil {
			return false
		}
		switch tok.Kind() {
		case '{', '[':
			seen = append(seen, map[string]bool{})
		case '}', ']':
			seen = seen[:len(seen)-1]
		case '"':
			// A name is a string read where the object's member count is odd.
			if kind, n := d.StackIndex(d.StackDepth()); kind == '{' && n%2 == 1 {
				name := tok.String()
				if fold {
					name = foldString(name)
				}
				m := seen[len(seen)-1]
				if m[name] {
					return true
				}
				m[name] = true
			}
		}
		if d.StackDepth() == 0 {
			return false
		}
	}
}

// respell returns other spellings of valid JSON: spaces everywhere, object
// members in reverse order, every ASCII letter of every string escaped,
// and, when fold, hex digits in the other case.
func respell(t *testing.T, b []byte, fold bool) [][]byte {
	t.Helper()
	v := jsontext.Value(bytes.Clone(b))
	if err := v.Format(); err != nil {
		return nil
	}
	var spaced jsontext.Value = bytes.Clone(v)
	if err := spaced.Indent(); err != nil {
		t.Fatal(err)
	}
	return [][]byte{spaced, reencode(t, v, fold)}
}

// reencode writes v with members reversed, letters escaped and hex case
// flipped.
func reencode(t *testing.T, v jsontext.Value, fold bool) []byte {
	t.Helper()
	d := jsontext.NewDecoder(bytes.NewReader(v), jsontext.AllowDuplicateNames(true))
	var write func() []byte
	write = func() []byte {
		tok, err := d.ReadToken()
		if err != nil {
			t.Fatal(err)
		}
		switch tok.Kind() {
		case '{':
			var members [][]byte
			for d.PeekKind() != '}' {
				name := write()
				members = append(members, append(append(name, ':'), write()...))
			}
			d.ReadToken()
			out := []byte{'{'}
			for i := len(members) - 1; i >= 0; i-- {
				out = append(out, members[i]...)
				if i > 0 {
					out = append(out, ',')
				}
			}
			return append(out, '}')
		case '[':
			out := []byte{'['}
			for first := true; d.PeekKind() != ']'; first = false {
				if !first {
					out = append(out, ',')
				}
				out = append(out, write()...)
			}
			d.ReadToken()
			return append(out, ']')
		case '"':
			s := tok.String()
			if fold && isHexString([]byte(s)) {
				s = "0x" + flipCase(s[2:])
			}
			return escapeLetters(s)
		default:
			return []byte(tok.String())
		}
	}
	return write()
}

func flipCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'a' <= c && c <= 'f':
			b[i] = c - ('a' - 'A')
		case 'A' <= c && c <= 'F':
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// escapeLetters quotes s, writing ASCII letters as \u escapes.
func escapeLetters(s string) []byte {
	out := []byte{'"'}
	for _, r := range s {
		switch {
		case 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
			out = append(out, `\u00`...)
			out = append(out, "0123456789abcdef"[r>>4], "0123456789abcdef"[r&15])
		case r == '"' || r == '\\':
			out = append(out, '\\', byte(r))
		case r < 0x20:
			out = append(out, `\u00`...)
			out = append(out, "0123456789abcdef"[r>>4], "0123456789abcdef"[r&15])
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return append(out, '"')
}
