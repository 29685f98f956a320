package paramkey

import (
	"bytes"
	"slices"
	"unicode/utf8"
)

// maxDepth bounds the nesting the scanner follows; deeper params take the
// library.
const maxDepth = 32

// scanner writes the canonical form of params in one pass. It gives up
// (and the library takes over) on anything it does not write exactly as
// the library would: escapes in strings, object names that are not ASCII
// (the library orders them by UTF-16), invalid JSON, repeated names.
type scanner struct {
	in    []byte
	pos   int
	out   []byte
	fold  bool
	depth int
	// ascii says whether the last string written was ASCII only.
	ascii bool
}

// member is where an object member was written in out: its name string
// from start to nameEnd, its value up to end.
type member struct {
	start, nameEnd, end int
}

func appendFast(dst, params []byte, fold bool) ([]byte, bool) {
	s := scanner{in: params, out: dst, fold: fold}
	if !s.value() || s.pos != len(s.in) {
		return dst, false
	}
	return s.out, true
}

func (s *scanner) ws() {
	for s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value writes one value and the whitespace after it is skipped.
func (s *scanner) value() bool {
	s.ws()
	if s.pos >= len(s.in) {
		return false
	}
	var ok bool
	switch c := s.in[s.pos]; {
	case c == '{':
		ok = s.object()
	case c == '[':
		ok = s.array()
	case c == '"':
		ok = s.str()
	case c == 't':
		ok = s.literal("true")
	case c == 'f':
		ok = s.literal("false")
	case c == 'n':
		ok = s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		ok = s.number()
	}
	s.ws()
	return ok
}

func (s *scanner) object() bool {
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.pos++
	s.out = append(s.out, '{')
	body := len(s.out)
	var stack [8]member
	members := stack[:0]
	sorted := true
	s.ws()
	if s.pos < len(s.in) && s.in[s.pos] == '}' {
		s.pos++
		s.out = append(s.out, '}')
		s.depth--
		return true
	}
	for {
		s.ws()
		if s.pos >= len(s.in) || s.in[s.pos] != '"' {
			return false
		}
		m := member{start: len(s.out)}
		if !s.str() || !s.ascii {
			return false
		}
		m.nameEnd = len(s.out)
		s.ws()
		if s.pos >= len(s.in) || s.in[s.pos] != ':' {
			return false
		}
		s.pos++
		s.out = append(s.out, ':')
		if !s.value() {
			return false
		}
		m.end = len(s.out)
		if n := len(members); n > 0 {
			switch c := bytes.Compare(s.name(members[n-1]), s.name(m)); {
			case c == 0:
				return false // a repeated name
			case c > 0:
				sorted = false
			}
		}
		members = append(members, m)
		if s.pos >= len(s.in) {
			return false
		}
		if s.in[s.pos] == '}' {
			s.pos++
			break
		}
		if s.in[s.pos] != ',' {
			return false
		}
		s.pos++
		s.out = append(s.out, ',')
	}
	if !sorted && !s.reorder(body, members) {
		return false
	}
	s.out = append(s.out, '}')
	s.depth--
	return true
}

// name returns the name of a written member, without its quotes.
func (s *scanner) name(m member) []byte { return s.out[m.start+1 : m.nameEnd-1] }

// reorder rewrites the members written from body on in the order of their
// names. It fails on a repeated name.
func (s *scanner) reorder(body int, members []member) bool {
	slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(s.name(a), s.name(b)) })
	for i := 1; i < len(members); i++ {
		if bytes.Equal(s.name(members[i-1]), s.name(members[i])) {
			return false
		}
	}
	// Copy the members aside (on the stack when they are small, so that a
	// key's buffer need not grow), then write them back in order: the
	// object keeps its length.
	end := len(s.out)
	var stack [512]byte
	aside := append(stack[:0], s.out[body:end]...)
	w := body
	for i, m := range members {
		if i > 0 {
			s.out[w] = ','
			w++
		}
		w += copy(s.out[w:end], aside[m.start-body:m.end-body])
	}
	return true
}

func (s *scanner) array() bool {
	if s.depth++; s.depth > maxDepth {
		return false
	}
	s.pos++
	s.out = append(s.out, '[')
	s.ws()
	if s.pos < len(s.in) && s.in[s.pos] == ']' {
		s.pos++
		s.out = append(s.out, ']')
		s.depth--
		return true
	}
	for {
		if !s.value() || s.pos >= len(s.in) {
			return false
		}
		if s.in[s.pos] == ']' {
			s.pos++
			break
		}
		if s.in[s.pos] != ',' {
			return false
		}
		s.pos++
		s.out = append(s.out, ',')
	}
	s.out = append(s.out, ']')
	s.depth--
	return true
}

// Byte kinds inside a string, for str's one pass: bits that accumulate
// over the string's plain bytes, and two kinds that end the pass.
const (
	kindNotHex   = 1 << 0 // not a hex digit
	kindUpper    = 1 << 1 // A to F
	kindNotASCII = 1 << 2
	kindQuote    = 1 << 3 // ends the string
	kindBad      = 1 << 4 // an escape or a control byte: the library's
)

var kinds = func() (t [256]byte) {
	for c := range 256 {
		switch {
		case c == '"':
			t[c] = kindQuote
		case c == '\\' || c < 0x20:
			t[c] = kindBad
		case c >= utf8.RuneSelf:
			t[c] = kindNotASCII | kindNotHex
		case 'A' <= c && c <= 'F':
			t[c] = kindUpper
		case '0' <= c && c <= '9' || 'a' <= c && c <= 'f':
		default:
			t[c] = kindNotHex
		}
	}
	return t
}()

// str writes a string without escapes as it came, its hex digits folded
// when it is a hex string ("0x" and hex digits) and the form folds them.
func (s *scanner) str() bool {
	in := s.in
	start := s.pos + 1
	i := start
	prefixed := len(in) > start+2 && in[start] == '0' && in[start+1] == 'x'
	if prefixed {
		i += 2
	}
	var acc byte
	// Eight bytes a round while none of them ends the string (the two
	// kinds that end it are the high bits), then byte by byte.
	for ; i+8 <= len(in); i += 8 {
		b := in[i : i+8 : i+8]
		k := kinds[b[0]] | kinds[b[1]] | kinds[b[2]] | kinds[b[3]] | kinds[b[4]] | kinds[b[5]] | kinds[b[6]] | kinds[b[7]]
		if k >= kindQuote {
			break
		}
		acc |= k
	}
	for ; i < len(in); i++ {
		k := kinds[in[i]]
		if k >= kindQuote {
			break
		}
		acc |= k
	}
	if i >= len(in) || in[i] != '"' {
		return false
	}
	if acc&kindNotASCII != 0 && !utf8.Valid(in[start:i]) {
		return false
	}
	s.ascii = acc&kindNotASCII == 0
	o := len(s.out)
	s.out = append(s.out, in[s.pos:i+1]...)
	if s.fold && prefixed && i > start+2 && acc&kindNotHex == 0 && acc&kindUpper != 0 {
		lowerHex(s.out[o+3 : len(s.out)-1])
	}
	s.pos = i + 1
	return true
}

// number writes a number as it came, if it follows JSON's grammar.
func (s *scanner) number() bool {
	i := s.pos
	if s.in[i] == '-' {
		i++
	}
	switch {
	case i >= len(s.in):
		return false
	case s.in[i] == '0':
		i++
	case '1' <= s.in[i] && s.in[i] <= '9':
		i = digits(s.in, i)
	default:
		return false
	}
	if i < len(s.in) && s.in[i] == '.' {
		j := digits(s.in, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s.in) && (s.in[i] == 'e' || s.in[i] == 'E') {
		i++
		if i < len(s.in) && (s.in[i] == '+' || s.in[i] == '-') {
			i++
		}
		j := digits(s.in, i)
		if j == i {
			return false
		}
		i = j
	}
	s.out = append(s.out, s.in[s.pos:i]...)
	s.pos = i
	return true
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

func (s *scanner) literal(lit string) bool {
	if len(s.in)-s.pos < len(lit) || string(s.in[s.pos:s.pos+len(lit)]) != lit {
		return false
	}
	s.out = append(s.out, lit...)
	s.pos += len(lit)
	return true
}
