package jsonrpc

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// jsontextValid is the reference validJSON must agree with: the rules the
// full decoder applies to a result.
func jsontextValid(b []byte) bool {
	return jsontext.Value(b).IsValid(jsontext.AllowDuplicateNames(true))
}

type validateCase struct {
	name, in string
	ok       bool
}

// validateCases are inputs with the verdict jsontext gives them; the test
// checks both the verdict and that jsontext still gives it.
var validateCases = []validateCase{
	// Literals and whitespace.
	{"null", `null`, true},
	{"true", `true`, true},
	{"false", `false`, true},
	{"empty", ``, false},
	{"only space", " \t\r\n", false},
	{"space around", " \t\r\n null \t\r\n", true},
	{"form feed", "\fnull", false},
	{"vertical tab", "null\v", false},
	{"nbsp", "\u00a0null", false},
	{"NUL after", "null\x00", false},
	{"capital", `True`, false},
	{"short literal", `nul`, false},
	{"long literal", `nulll`, false},
	{"literal glued", `truefalse`, false},
	{"two values", `1 2`, false},
	{"two strings", `"a""b"`, false},
	{"trailing garbage", `{} x`, false},
	{"trailing comma", `[1,]`, false},
	{"leading comma", `[,1]`, false},
	{"double comma", `[1,,2]`, false},
	{"space everywhere", " { \"a\" : [ 1 , \"x\" , { } , [ ] ] , \"b\" : null } ", true},
	{"tab newline everywhere", "{\n\t\"a\"\r\n:\t[\n1\r,\t2\n]\n}", true},
	{"space inside literal", `tr ue`, false},
	{"space inside number", `1 0`, false},
	{"space after minus", `- 1`, false},
	{"space inside escape", `"\u 041"`, false},
	{"space before colon and comma", `{"a" : 1 , "b" : 2}`, true},
	{"space inside string", `" a\tb "`, true},
	{"raw tab inside string", "\"a\tb\"", false},

	// Numbers.
	{"zero", `0`, true},
	{"minus zero", `-0`, true},
	{"int", `1234567890`, true},
	{"negative", `-12`, true},
	{"fraction", `0.5`, true},
	{"exp", `1e5`, true},
	{"Exp plus", `1E+5`, true},
	{"exp minus", `1e-5`, true},
	{"frac exp", `-1.25e-10`, true},
	{"huge exponent", `1e999999999999999999999`, true},
	{"huge int", strings.Repeat("9", 400), true},
	{"zero everything", `-0.0e-0`, true},
	{"exponent leading zeros", `1E05`, true},
	{"two exponent signs", `1e+-5`, false},
	{"two dots", `1.2.3`, false},
	{"fraction then exp empty", `1.5e`, false},
	{"leading zero", `01`, false},
	{"minus leading zero", `-01`, false},
	{"zero zero", `00`, false},
	{"dot end", `1.`, false},
	{"dot start", `.5`, false},
	{"minus alone", `-`, false},
	{"plus", `+1`, false},
	{"minus dot", `-.5`, false},
	{"exp empty", `1e`, false},
	{"exp sign only", `1e+`, false},
	{"dot exp", `1.e5`, false},
	{"double minus", `--1`, false},
	{"hex", `0x1`, false},
	{"Infinity", `Infinity`, false},
	{"NaN", `NaN`, false},
	{"number in array", `[-0,1e5,1E+5,0.0]`, true},
	{"leading zero in array", `[01]`, false},
	{"number then letter", `[1a]`, false},

	// Strings and escapes.
	{"empty string", `""`, true},
	{"plain", `"0x9f0c3e9c5e3c4d1e8a3f1b1c2d3e4f5a"`, true},
	{"unterminated", `"abc`, false},
	{"unterminated long", `"` + strings.Repeat("ab", 20), false},
	{"lone quote", `"`, false},
	{"all short escapes", `"\"\\\/\b\f\n\r\t"`, true},
	{"unknown escape", `"\a"`, false},
	{"escaped apostrophe", `"\'"`, false},
	{"escape x", `"\x41"`, false},
	{"capital escape", `"\N"`, false},
	{"escape at end", `"\`, false},
	{"escaped quote at end", `"\"`, false},
	{"u escape", `"\u0041"`, true},
	{"u escape upper hex", `"\u00E9\u00e9"`, true},
	{"u NUL", `"\u0000"`, true},
	{"u short", `"\u041"`, false},
	{"u bad hex", `"\u00g1"`, false},
	{"u truncated", `"\u00`, false},
	{"U capital", `"\U0041"`, false},
	{"surrogate pair", `"\ud83d\ude00"`, true},
	{"surrogate pair upper", `"\uD83D\uDE00"`, true},
	{"lowest pair", `"\ud800\udc00"`, true},
	{"highest pair", `"\udbff\udfff"`, true},
	{"lone high", `"\ud800"`, false},
	{"lone high then text", `"\ud800abcdef"`, false},
	{"lone low", `"\udc00"`, false},
	{"low then high", `"\udc00\ud800"`, false},
	{"high high", `"\ud800\ud800"`, false},
	{"high then BMP escape", `"\ud800\u0041"`, false},
	{"high then short escape", `"\ud800\n"`, false},
	{"high then bad hex", `"\ud800\udc0g"`, false},
	{"high at end", `"\ud800`, false},
	{"pair then lone", `"\ud83d\ude00\ude00"`, false},
	{"U+FFFF", `"\uffff"`, true},
	{"DEL raw", "\"\x7f\"", true},
	{"escaped name", `{"\u0061":1}`, true},
	{"lone high in name", `{"\ud800":1}`, false},

	// UTF-8.
	{"2-byte", "\"é\"", true},
	{"3-byte", "\"€\"", true},
	{"4-byte", "\"😀\"", true},
	{"U+FFFD", "\"\xef\xbf\xbd\"", true},
	{"max rune", "\"\xf4\x8f\xbf\xbf\"", true},
	{"above max rune", "\"\xf4\x90\x80\x80\"", false},
	{"F5", "\"\xf5\x80\x80\x80\"", false},
	{"FF", "\"\xff\"", false},
	{"lone continuation", "\"\x80\"", false},
	{"overlong slash", "\"\xc0\xaf\"", false},
	{"overlong C1", "\"\xc1\xbf\"", false},
	{"overlong 3-byte", "\"\xe0\x80\xaf\"", false},
	{"overlong 4-byte", "\"\xf0\x80\x80\xaf\"", false},
	{"UTF-8 surrogate", "\"\xed\xa0\x80\"", false},
	{"UTF-8 low surrogate", "\"\xed\xbf\xbf\"", false},
	{"last before surrogates", "\"\xed\x9f\xbf\"", true},
	{"truncated 2-byte", "\"\xc3\"", false},
	{"truncated 3-byte", "\"\xe2\x82\"", false},
	{"truncated 4-byte", "\"\xf0\x9f\x98\"", false},
	{"truncated at end", "\"\xf0\x9f", false},
	{"UTF-8 outside string", "\xc3\xa9", false},
	{"BOM", "\xef\xbb\xbfnull", false},
	{"bad UTF-8 in name", "{\"\xff\":1}", false},
	{"long mixed", "\"" + strings.Repeat("abcdefé😀", 10) + "\"", true},

	// Containers.
	{"empty object", `{}`, true},
	{"empty array", `[]`, true},
	{"nested", `{"a":[{"b":{"c":[[],{}]}}]}`, true},
	{"duplicate names", `{"a":1,"a":2}`, true},
	{"unclosed object", `{"a":1`, false},
	{"unclosed array", `[1`, false},
	{"mismatched", `[1}`, false},
	{"mismatched object", `{"a":1]`, false},
	{"extra close", `[]]`, false},
	{"close only", `]`, false},
	{"number name", `{1:2}`, false},
	{"missing colon", `{"a" 1}`, false},
	{"missing value", `{"a":}`, false},
	{"name only", `{"a"}`, false},
	{"trailing comma object", `{"a":1,}`, false},
	{"colon in array", `[1:2]`, false},
	{"single-quoted", `{'a':1}`, false},
	{"comment", `[1/*x*/]`, false},
}

func init() {
	// Every control character, raw in a string: all refused, in a short
	// string and in a long one (the word-at-a-time path). Escaped as
	// \u00XX they are allowed, which the "u NUL" case and the fuzz
	// target cover.
	for c := range rune(0x20) {
		hex := fmt.Sprintf("%02x", c)
		validateCases = append(validateCases,
			validateCase{"raw control " + hex, `"ab` + string(c) + `cd"`, false},
			validateCase{"raw control in long string " + hex, `"abcdefghijk` + string(c) + `lmnopqrstuvwxyz"`, false},
			validateCase{"escaped control " + hex, `"abcdefghijk\u00` + hex + `lmnopqrstuvwxyz"`, true},
		)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range validateCases {
		t.Run(tc.name, func(t *testing.T) {
			if ref := jsontextValid([]byte(tc.in)); ref != tc.ok {
				t.Fatalf("jsontext says %v for %q: the table is wrong", ref, tc.in)
			}
			if got := validJSON([]byte(tc.in)); got != tc.ok {
				t.Errorf("validJSON(%q) = %v, want %v", tc.in, got, tc.ok)
			}
		})
	}
}

// TestValidateDepth checks the nesting limit on both sides of it, for
// arrays and objects, and that it is jsontext's.
func TestValidateDepth(t *testing.T) {
	arrays := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	objects := func(n int) string {
		return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1)
	}
	mixed := func(n int) string {
		var open strings.Builder
		closers := make([]byte, n)
		for i := range n {
			if i%2 == 0 {
				open.WriteString(`[1,`)
				closers[n-1-i] = ']'
			} else {
				open.WriteString(` {"k" : `)
				closers[n-1-i] = '}'
			}
		}
		return open.String() + "null" + string(closers)
	}
	for _, n := range []int{1, 2, 63, 64, 65, 128, maxDepth - 1, maxDepth, maxDepth + 1, 3 * maxDepth} {
		for name, in := range map[string]string{"arrays": arrays(n), "objects": objects(n), "mixed": mixed(n)} {
			want := n <= maxDepth
			if ref := jsontextValid([]byte(in)); ref != want {
				t.Fatalf("%s %d: jsontext says %v: its limit is not maxDepth", name, n, ref)
			}
			if got := validJSON([]byte(in)); got != want {
				t.Errorf("%s %d deep: validJSON = %v, want %v", name, n, got, want)
			}
			if got := validate([]byte(in), n-1); got {
				t.Errorf("%s %d deep: accepted with a limit of %d", name, n, n-1)
			}
		}
	}
	// Deep but unbalanced input is refused, never overflows.
	if validJSON([]byte(strings.Repeat("[", 5*maxDepth))) {
		t.Error("accepted unclosed brackets")
	}
}

// TestStopBytes checks the word-at-a-time test against the byte-at-a-time
// rule, on random words rich in the bytes near its edges.
func TestStopBytes(t *testing.T) {
	edges := []byte{0, 1, 0x1f, ' ', '!', '"', '#', '[', '\\', ']', 0x7f, 0x80, 0x81, 0x9f, 0xa0, 0xdc, 0xfe, 0xff, 'a', '0'}
	rng := rand.New(rand.NewPCG(1, 2))
	var buf [8]byte
	for range 1_000_000 {
		for k := range buf {
			if rng.IntN(2) == 0 {
				buf[k] = edges[rng.IntN(len(edges))]
			} else {
				buf[k] = byte(rng.Uint32())
			}
		}
		want := 8
		for k, c := range buf {
			if !plain[c] {
				want = k
				break
			}
		}
		got := 8
		if m := stopBytes(binary.LittleEndian.Uint64(buf[:])); m != 0 {
			got = bits.TrailingZeros64(m) >> 3
		}
		if got != want {
			t.Fatalf("%x: first stop byte at %d, want %d", buf, got, want)
		}
	}
}

// TestValidateFixtures runs the validator over every recorded node
// answer in the repository, whole and cut short.
func TestValidateFixtures(t *testing.T) {
	for _, path := range fixtureFiles(t) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := validJSON(b), jsontextValid(b); got != want {
			t.Errorf("%s: validJSON = %v, jsontext %v", path, got, want)
		}
		for _, cut := range []int{1, 2, 7, len(b) / 3, len(b) / 2} {
			if cut < len(b) && validJSON(b[:len(b)-cut]) != jsontextValid(b[:len(b)-cut]) {
				t.Errorf("%s less %d bytes: validJSON and jsontext disagree", path, cut)
			}
		}
	}
}

// TestValidateAllocs checks that neither the validator nor the fast path
// of DecodeResponse allocates, on the benchmark blocks.
func TestValidateAllocs(t *testing.T) {
	for _, path := range []string{"../internal/testdata/fixtures/solana/solders_get_block_json_encoding.json", "testdata/evm_block_full_txs.json"} {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := splitResult(body); !ok {
			t.Fatalf("%s: the fast path refused it", path)
		}
		if n := testing.AllocsPerRun(10, func() { validJSON(body) }); n != 0 {
			t.Errorf("%s: validJSON allocates %v times", path, n)
		}
		if n := testing.AllocsPerRun(10, func() { DecodeResponse(body) }); n != 0 {
			t.Errorf("%s: DecodeResponse allocates %v times", path, n)
		}
	}
}

func fixtureFiles(t testing.TB) []string {
	var paths []string
	for _, dir := range []string{"../internal/testdata/fixtures/solana", "../internal/testdata/fixtures/starknet", "../internal/testdata/fixtures/evm", "testdata"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".json") {
				paths = append(paths, dir+"/"+e.Name())
			}
		}
	}
	return paths
}

// FuzzValidate checks that validJSON agrees with jsontext on every input.
func FuzzValidate(f *testing.F) {
	for _, tc := range validateCases {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"blockhash":"5idCC85iPqQMHWB9bCwcjbSfHakFgq6YXWFxL6w8xs9t","rewards":[{"commission":null,"lamports":-125}]},"id":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), jsontextValid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, jsontext says %v", b, got, want)
		}
	})
}
