package jsonrpc

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// This file is the validator behind the fast path of DecodeResponse: it
// says whether bytes are exactly one JSON value, by the same rules as the
// full decoder (jsontext with duplicate names allowed), without building
// anything and without allocating. It is written for what nodes send:
// long strings of hex, base58 and base64, and many small objects.
//
// The rules, as jsontext applies them (internal/jsonwire/decode.go):
//   - exactly one value, with only ' ', '\t', '\n' and '\r' around it and
//     between tokens;
//   - numbers by RFC 8259's grammar, any size: "-0" and "1e999999" are
//     numbers, "01", "1.", ".5", "+1" and "-" are not;
//   - in strings, the escapes \" \\ \/ \b \f \n \r \t and \uXXXX (hex in
//     either case; \u0000 is allowed); a \u escape of a high surrogate
//     must be followed at once by a \u escape of a low one, and a lone low
//     surrogate is refused;
//   - no raw byte below 0x20 inside a string; 0x7f is allowed;
//   - bytes from 0x80 up must be valid UTF-8 as unicode/utf8 decodes it:
//     no overlong forms, no surrogates (ED A0 80), nothing above U+10FFFF;
//   - duplicate names in an object are not checked (the full decoder runs
//     with jsontext.AllowDuplicateNames for results too);
//   - at most maxDepth arrays and objects open at once.
//
// It validates only; the caller copies the result afterwards (the
// upstream client appends it to its caller's buffer). Validating while
// copying, in one pass, was measured and lost: a variant that appended
// each 4 KB to the destination as soon as it was validated, while still
// in L1, ran at 2.82 GB/s on the Solana block and 3.93 GB/s on the EVM
// block, against 2.95 and 3.99 GB/s for validating and then copying
// (best of 60 runs each). The copy of bytes validation has just read
// costs about a thirtieth of the validation, and the check it adds to
// the loop costs more than that.

// maxDepth is the deepest nesting the validator's stack holds. It is
// jsontext's own limit (maxNestingDepth in jsontext/state.go): a value
// that jsontext.Value.IsValid accepts on its own may have 10000 levels.
const maxDepth = 10000

// validJSON reports whether b is exactly one JSON value, as
// jsontext.Value(b).IsValid(jsontext.AllowDuplicateNames(true)) would,
// for values nested at most maxDepth deep.
func validJSON(b []byte) bool { return validate(b, maxDepth) }

// Valid reports whether b is exactly one JSON value as the gateway
// accepts a node's result (see validJSON): for bytes that come back from
// somewhere other than a node, such as a shared cache.
func Valid(b []byte) bool { return validJSON(b) }

// validate is validJSON with a lower limit on nesting: a value that will
// sit inside an envelope has one level fewer to use. Deeper input is
// refused, never looked at recursively: the stack is a bit set of fixed
// size in this frame (one bit a level: object or array).
//
// The loop reads a value, then what follows it (closing brackets, a
// comma), then, inside an object, a name and its colon; strings are
// scanned inline while they are plain ASCII, and by scanString from the
// first byte that needs a closer look.
func validate(b []byte, limit int) bool {
	var objects [(maxDepth + 63) / 64]uint64
	limit = min(limit, maxDepth)
	depth := 0
	inObject := false // whether the innermost open container is an object
	i := 0
	for {
		// A value starts at b[i], after optional whitespace.
		if i < len(b) && b[i] <= ' ' {
			i = skipSpace(b, i)
		}
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '"':
			if i = plainRun(b, i+1); i < len(b) && b[i] == '"' {
				i++
			} else if i = scanString(b, i); i < 0 {
				return false
			}
		case '{':
			if depth >= limit {
				return false
			}
			objects[depth>>6] |= 1 << (depth & 63)
			depth++
			inObject = true
			if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
				i++
				depth--
				inObject = depth > 0 && objects[(depth-1)>>6]&(1<<((depth-1)&63)) != 0
				break
			}
			goto name
		case '[':
			if depth >= limit {
				return false
			}
			objects[depth>>6] &^= 1 << (depth & 63)
			depth++
			inObject = false
			if i = skipSpace(b, i+1); i < len(b) && b[i] == ']' {
				i++
				depth--
				inObject = depth > 0 && objects[(depth-1)>>6]&(1<<((depth-1)&63)) != 0
				break
			}
			continue
		case 't':
			if len(b)-i < 4 || string(b[i:i+4]) != "true" {
				return false
			}
			i += 4
		case 'f':
			if len(b)-i < 5 || string(b[i:i+5]) != "false" {
				return false
			}
			i += 5
		case 'n':
			if len(b)-i < 4 || string(b[i:i+4]) != "null" {
				return false
			}
			i += 4
		default:
			if i = scanNumber(b, i); i < 0 {
				return false
			}
		}
		// A value has ended at b[i]: what follows closes containers, or
		// is a comma before the next value or (in an object) name.
		for {
			if i < len(b) && b[i] <= ' ' {
				i = skipSpace(b, i)
			}
			if depth == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			c := b[i]
			i++
			if c == ',' {
				if inObject {
					if i < len(b) && b[i] <= ' ' {
						i = skipSpace(b, i)
					}
					goto name
				}
				break
			}
			if (c == '}' && inObject) || (c == ']' && !inObject) {
				depth--
				inObject = depth > 0 && objects[(depth-1)>>6]&(1<<((depth-1)&63)) != 0
				continue
			}
			return false
		}
		continue
	name:
		// An object member's name starts at b[i], then its colon.
		if i >= len(b) || b[i] != '"' {
			return false
		}
		if i = plainRun(b, i+1); i < len(b) && b[i] == '"' {
			i++
		} else if i = scanString(b, i); i < 0 {
			return false
		}
		if i < len(b) && b[i] <= ' ' {
			i = skipSpace(b, i)
		}
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i++
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Word-at-a-time constants: every byte 0x01, 0x80, 0x02, 0x21 and '\\'.
const (
	ones    = 0x0101010101010101
	highs   = 0x8080808080808080
	twos    = ones * 0x02
	bangs   = ones * 0x21
	slashes = ones * '\\'
)

// stopBytes returns a word whose lowest set high bit marks the first of
// the eight bytes of w (in memory order) that a string scan must stop at:
// '"', '\\', a byte below 0x20 or a byte from 0x80. Bits above the first
// may be set falsely (a borrow carries upwards), never below it: a borrow
// starts only at a byte that is itself a stop byte.
//
// w^twos turns the bytes 0x00-0x1f into 0x00-0x1f again and '"' (0x22)
// into 0x20, and no other byte below 0x80 into anything below 0x21, so
// subtracting 0x21 sets the high bit of exactly those (and of bytes from
// 0x80, which w's own high bit marks anyway). (w^slashes)-ones does the
// same for '\\' alone. Seven operations a word.
func stopBytes(w uint64) uint64 {
	return (((w ^ twos) - bangs) | ((w ^ slashes) - ones) | w) & highs
}

// plainRun returns the index of the first byte at or after i, inside a
// string, that a scan must stop at (see stopBytes), or of the first of
// the last fifteen bytes of b. It reads sixteen bytes a round, and nearly
// all of a hex, base58 or base64 string goes by here. (Measured on the
// benchmark blocks: eight bytes a round, inlined, or thirty-two, or
// finding the stop byte without a branch, were all slower.)
func plainRun(b []byte, i int) int {
	for len(b)-i >= 16 {
		w := (*[16]byte)(b[i : i+16])
		m1 := stopBytes(binary.LittleEndian.Uint64(w[:8]))
		m2 := stopBytes(binary.LittleEndian.Uint64(w[8:]))
		if m1|m2 != 0 {
			if m1 != 0 {
				return i + bits.TrailingZeros64(m1)>>3
			}
			return i + 8 + bits.TrailingZeros64(m2)>>3
		}
		i += 16
	}
	return i
}

// scanString checks the rest of a string from b[i], which is inside it
// and not inside an escape or a UTF-8 sequence, and returns the index
// after its closing quote, or -1.
func scanString(b []byte, i int) int {
	for {
		i = plainRun(b, i)
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i = scanEscape(b, i); i < 0 {
				return -1
			}
		case c < ' ':
			return -1
		default:
			// utf8.DecodeRune refuses what jsontext refuses (it is what
			// jsontext calls); a real U+FFFD decodes with size 3.
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return -1
			}
			i += n
		}
	}
}

// scanEscape checks the escape sequence at b[i] (a backslash) and returns
// the index after it, or -1. A high surrogate takes its low half with it.
func scanEscape(b []byte, i int) int {
	if len(b)-i < 2 {
		return -1
	}
	switch b[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return i + 2
	case 'u':
	default:
		return -1
	}
	v, ok := hex4(b, i+2)
	if !ok {
		return -1
	}
	i += 6
	switch {
	case v < 0xd800 || v > 0xdfff:
		return i
	case v >= 0xdc00:
		return -1 // a low surrogate with no high one before it
	}
	if len(b)-i < 2 || b[i] != '\\' || b[i+1] != 'u' {
		return -1
	}
	if v, ok = hex4(b, i+2); !ok || v < 0xdc00 || v > 0xdfff {
		return -1
	}
	return i + 6
}

// hex4 reads the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (uint16, bool) {
	if len(b)-i < 4 {
		return 0, false
	}
	d0, d1, d2, d3 := hexVal[b[i]], hexVal[b[i+1]], hexVal[b[i+2]], hexVal[b[i+3]]
	if d0|d1|d2|d3 > 0xf {
		return 0, false
	}
	return uint16(d0)<<12 | uint16(d1)<<8 | uint16(d2)<<4 | uint16(d3), true
}

// scanNumber checks a number starting at b[i] and returns the index after
// it, or -1. It does not look past the number: what follows is the
// caller's to check.
func scanNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// plain marks the bytes a string holds as they are: printable ASCII other
// than '"' and '\\'.
var plain = func() (t [256]bool) {
	for c := ' '; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// hexVal maps a hex digit to its value and any other byte to 0xff.
var hexVal = func() (t [256]byte) {
	for c := range t {
		switch {
		case '0' <= c && c <= '9':
			t[c] = byte(c - '0')
		case 'a' <= c && c <= 'f':
			t[c] = byte(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			t[c] = byte(c - 'A' + 10)
		default:
			t[c] = 0xff
		}
	}
	return t
}()
