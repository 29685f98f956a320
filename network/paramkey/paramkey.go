// Package paramkey writes the canonical form of a call's params, the part of
// a cache key (and of a coalescing key) that two clients share when they
// send the same params spelt differently: with or without spaces, object
// members in another order, strings with other escapes, and, for families
// whose nodes read "0x" hex strings without regard to case (EVM and rollup),
// hex digits in either case, so that a checksummed address and its
// lower-case form are one key.
//
// The canonical form of valid params is the JSON value as go-json-
// experiment's jsontext formats it with objects reordered (RFC 8785's member
// order), strings in their shortest escaping and numbers exactly as they
// were written (1 and 1.0 stay apart: a node may read one and refuse the
// other), then, for portico.KeyHexFold, the hex digits of every string that
// is "0x" and hex digits only in lower case. The form is itself JSON for the
// same value, so two params share a form only if they are the same value.
// Params that are not valid JSON, or that repeat a member name (nodes
// differ on which one counts), are their own bytes behind a 0xFF byte,
// which valid JSON never contains.
//
// The form is on the cache's hit path, so most params take a one-pass
// scanner (fast.go) that writes the form directly; what it does not handle
// (escapes, names that are not ASCII, deep nesting) takes the library.
// FuzzAppend checks that both give the same form.
package paramkey

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
)

// opaque marks a form that is the params' own bytes.
const opaque = 0xFF

// Append appends the canonical form of params to dst. Whitespace around
// params is not part of them; empty params have an empty form.
func Append(dst, params []byte, form portico.KeyForm) []byte {
	params = trimSpace(params)
	if len(params) == 0 {
		return dst
	}
	start := len(dst)
	if out, ok := appendFast(dst, params, form == portico.KeyHexFold); ok {
		return out
	}
	return appendSlow(dst[:start], params, form)
}

// appendSlow writes the form with the library's formatter: strings in
// their shortest escaping (and, for the hex-folding form, hex digits in
// lower case, names included, since a node reads an address that names a
// member, as in eth_call's state overrides, without regard to case), then
// objects reordered. A repeated name, before or after folding, makes the
// form opaque.
func appendSlow(dst, params []byte, form portico.KeyForm) []byte {
	start := len(dst)
	v := jsontext.Value(append(dst, params...)[start:])
	var err error
	if form == portico.KeyHexFold {
		if err = v.Format(); err == nil {
			foldHexStrings(v)
		}
	}
	if err == nil {
		err = v.Format(jsontext.ReorderRawObjects(true))
	}
	if err != nil {
		return append(append(dst[:start], opaque), params...)
	}
	return append(dst[:start], v...)
}

// foldHexStrings lower-cases, in place, the hex digits of every string of
// a formatted JSON value that is "0x" and one or more hex digits.
func foldHexStrings(b []byte) {
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		// A string of the formatted value: find its end, skipping escapes.
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(b) {
			return
		}
		if isHexString(b[i+1 : j]) {
			lowerHex(b[i+3 : j])
		}
		i = j
	}
}

// isHexString reports whether s is "0x" and one or more hex digits.
func isHexString(s []byte) bool {
	if len(s) < 3 || s[0] != '0' || s[1] != 'x' {
		return false
	}
	for _, c := range s[2:] {
		if hexDigit[c] == 0 {
			return false
		}
	}
	return true
}

// lowerHex lower-cases hex digits in place.
func lowerHex(s []byte) {
	for i, c := range s {
		if 'A' <= c && c <= 'F' {
			s[i] = c + ('a' - 'A')
		}
	}
}

// hexDigit marks the bytes that are hex digits.
var hexDigit = func() (t [256]byte) {
	for _, c := range []byte("0123456789abcdefABCDEF") {
		t[c] = 1
	}
	return t
}()

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
