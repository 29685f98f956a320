package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
)

// A key's contract-address allowlist (docs/keys.md) is checked against
// what the family's table says of each method (portico.Contracts): where
// its params name the contracts a call reads or runs. The params are read
// strictly, so that the addresses checked are the ones every node of the
// family acts on: nodes differ in how they read a member spelt in another
// case (go-ethereum ignores case and takes the last of two matches, anvil
// and other Rust nodes read the exact name only), so an object member the
// table does not name exactly, or one given twice, makes the call
// ambiguous and it is refused; so is a param the table does not list, and
// a state or block override, which changes what a listed contract runs.

// Reasons a call is refused for a key with an address allowlist.
const (
	reasonAbsent     = "must be left out for a key restricted by contract address: it changes the code or state the contracts run with"
	reasonUnknown    = "a member the method does not take, which a node may yet read: refused for a key restricted by contract address"
	reasonTwice      = "given twice: nodes differ on which one counts; refused for a key restricted by contract address"
	reasonExtra      = "a param this method does not take: refused for a key restricted by contract address"
	reasonNotList    = "want the params as a list: refused for a key restricted by contract address"
	reasonUnreadable = "cannot be read: refused for a key restricted by contract address"
)

// checkContracts applies the key's contract-address allowlist to one call
// of the method named method, whose statement is c.
func checkContracts(r *apikey.Rules, method string, c *portico.Contracts, params []byte) error {
	switch c.Reads {
	case portico.ReadsNone:
		return nil
	case portico.ReadsNamed:
	case portico.ReadsAny:
		return &portico.ForbiddenError{What: portico.AllowAddress, Reason: method + " may read contracts its params do not name: not served to a key restricted by contract address"}
	default:
		return &portico.ForbiddenError{What: portico.AllowAddress, Reason: method + " does not say which contracts it reads: not served to a key restricted by contract address"}
	}
	w := walkers.Get().(*contractWalker)
	defer w.done(len(params))
	w.rules, w.c = r, c
	err := w.params(c, params)
	if err == nil {
		// One value and nothing after it, as a node reads params.
		if _, end := w.d.ReadToken(); end != io.EOF {
			w.path = w.path[:0]
			err = w.fail(reasonUnreadable)
		}
	}
	if err == nil && w.found == 0 {
		err = &portico.ForbiddenError{What: portico.AllowAddress}
	}
	return err
}

// contractWalker reads a call's params token by token along the method's
// statement. It is reused through walkers, so that a check allocates next
// to nothing.
type contractWalker struct {
	r     bytes.Reader
	d     jsontext.Decoder
	rules *apikey.Rules
	c     *portico.Contracts
	buf   []byte // the last string read, unquoted
	// path is where the walk is, for the message of a refusal: a
	// param's position and name, then member names and list indexes.
	path  []step
	found int // addresses read (all on the list)
}

// step is one step of a path: a member name, or an index (name == "").
type step struct {
	name  string
	index int
}

var walkers = sync.Pool{New: func() any { return new(contractWalker) }}

// keepWalker is the largest params whose walker is kept for reuse: the
// decoder's buffer grows to the params it read, and a walker kept after a
// large call would hold that much for good.
const keepWalker = 64 << 10

// done lets the call's params go and keeps the walker for the next call
// when the params it read were small.
func (w *contractWalker) done(read int) {
	w.r.Reset(nil)
	w.rules, w.c, w.path, w.found = nil, nil, w.path[:0], 0
	if read <= keepWalker {
		walkers.Put(w)
	}
}

// params walks the whole params value.
func (w *contractWalker) params(c *portico.Contracts, params []byte) error {
	w.r.Reset(params)
	// Duplicate names are found by the walk where they matter, and
	// passed over inside values that name no contract.
	w.d.Reset(&w.r, jsontext.AllowDuplicateNames(true))
	w.path = w.path[:0]
	switch w.d.PeekKind() {
	case '[':
		w.d.ReadToken()
		i := 0
		for ; w.d.PeekKind() != ']'; i++ {
			if w.d.PeekKind() == 0 {
				return w.fail(reasonUnreadable)
			}
			w.path = append(w.path[:0], step{index: i})
			if i >= len(c.Params) {
				return w.fail(reasonExtra)
			}
			if err := w.value(&c.Params[i].Shape); err != nil {
				return err
			}
		}
		w.d.ReadToken()
		for ; i < len(c.Params); i++ {
			if c.Params[i].Shape.Required {
				w.path = append(w.path[:0], step{index: i})
				return w.none()
			}
		}
		return nil
	case '{':
		if !c.ByName {
			return w.fail(reasonNotList)
		}
		w.d.ReadToken()
		var seen uint64
		for w.d.PeekKind() != '}' {
			name, err := w.name()
			if err != nil {
				return err
			}
			i := paramIndex(c.Params, name)
			if i < 0 || i >= 64 {
				w.path = append(w.path[:0], step{name: string(name)})
				return w.fail(reasonUnknown)
			}
			w.path = append(w.path[:0], step{name: c.Params[i].Name})
			if seen&(1<<i) != 0 {
				return w.fail(reasonTwice)
			}
			seen |= 1 << i
			if err := w.value(&c.Params[i].Shape); err != nil {
				return err
			}
		}
		w.d.ReadToken()
		for i := range c.Params {
			if c.Params[i].Shape.Required && seen&(1<<i) == 0 {
				w.path = append(w.path[:0], step{name: c.Params[i].Name})
				return w.none()
			}
		}
		return nil
	case 'n', 0:
		if _, err := w.d.ReadToken(); err != nil && len(bytes.TrimSpace(params)) > 0 {
			return w.fail(reasonUnreadable)
		}
		for i := range c.Params { // no params at all
			if c.Params[i].Shape.Required {
				w.path = append(w.path[:0], step{index: i})
				return w.none()
			}
		}
		return nil
	}
	return w.fail(reasonNotList)
}

func paramIndex(params []portico.Param, name []byte) int {
	for i := range params {
		if params[i].Name == string(name) {
			return i
		}
	}
	return -1
}

// value walks one value of shape s.
func (w *contractWalker) value(s *portico.Shape) error {
	k := w.d.PeekKind()
	switch s.Kind {
	case portico.ShapeAny:
		if w.d.SkipValue() != nil {
			return w.fail(reasonUnreadable)
		}
		return nil
	case portico.ShapeAbsent:
		return w.absent(k)
	case portico.ShapeAddress:
		switch k {
		case 'n':
			w.d.ReadToken()
			if s.Required {
				return w.none()
			}
			return nil
		case '"':
			return w.address()
		}
		return w.want("an address")
	case portico.ShapeAddresses:
		switch k {
		case 'n':
			w.d.ReadToken()
		case '"':
			return w.address()
		case '[':
			w.d.ReadToken()
			n := 0
			for ; w.d.PeekKind() != ']'; n++ {
				w.path = append(w.path, step{index: n})
				if w.d.PeekKind() != '"' {
					return w.want("an address")
				}
				if err := w.address(); err != nil {
					return err
				}
				w.path = w.path[:len(w.path)-1]
			}
			w.d.ReadToken()
			if n > 0 {
				return nil
			}
		default:
			return w.want("an address or a list of addresses")
		}
		if s.Required {
			return w.none() // null or []: any address, to a node
		}
		return nil
	case portico.ShapeObject:
		return w.object(s, k)
	case portico.ShapeList:
		switch k {
		case 'n':
			w.d.ReadToken()
			return nil
		case '[':
		default:
			return w.want("a list")
		}
		w.d.ReadToken()
		for i := 0; w.d.PeekKind() != ']'; i++ {
			if w.d.PeekKind() == 0 {
				return w.fail(reasonUnreadable)
			}
			w.path = append(w.path, step{index: i})
			if err := w.value(s.Elem); err != nil {
				return err
			}
			w.path = w.path[:len(w.path)-1]
		}
		w.d.ReadToken()
		return nil
	case portico.ShapeAddressKeys:
		if k != '{' {
			if k == 'n' && !s.Required {
				w.d.ReadToken()
				return nil
			}
			return w.want("an object whose member names are addresses")
		}
		w.d.ReadToken()
		n := 0
		for ; w.d.PeekKind() != '}'; n++ {
			if w.d.PeekKind() != '"' {
				return w.fail(reasonUnreadable)
			}
			if err := w.address(); err != nil {
				return err
			}
			if w.d.SkipValue() != nil {
				return w.fail(reasonUnreadable)
			}
		}
		w.d.ReadToken()
		if n == 0 && s.Required {
			return w.none()
		}
		return nil
	}
	return w.fail(reasonUnreadable)
}

// object walks a closed object: each member named exactly once.
func (w *contractWalker) object(s *portico.Shape, k jsontext.Kind) error {
	switch k {
	case 'n':
		w.d.ReadToken()
		return w.missing(s, 0)
	case '{':
	default:
		return w.want("an object")
	}
	w.d.ReadToken()
	var seen uint64
	for w.d.PeekKind() != '}' {
		name, err := w.name()
		if err != nil {
			return err
		}
		i := memberIndex(s.Members, name)
		if i < 0 || i >= 64 {
			w.path = append(w.path, step{name: string(name)})
			if j := foldedIndex(s.Members, name); j >= 0 {
				return w.fail("spelt unlike " + strconv.Quote(s.Members[j].Name) + ": some nodes read it as that member and some ignore it; refused for a key restricted by contract address")
			}
			return w.fail(reasonUnknown)
		}
		w.path = append(w.path, step{name: s.Members[i].Name})
		if seen&(1<<i) != 0 {
			return w.fail(reasonTwice)
		}
		seen |= 1 << i
		if err := w.value(&s.Members[i].Shape); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
	}
	w.d.ReadToken()
	return w.missing(s, seen)
}

// missing refuses an object without one of its required members.
func (w *contractWalker) missing(s *portico.Shape, seen uint64) error {
	for i := range s.Members {
		if s.Members[i].Shape.Required && seen&(1<<i) == 0 {
			w.path = append(w.path, step{name: s.Members[i].Name})
			return w.none()
		}
	}
	return nil
}

func memberIndex(members []portico.Member, name []byte) int {
	for i := range members {
		if members[i].Name == string(name) {
			return i
		}
	}
	return -1
}

func foldedIndex(members []portico.Member, name []byte) int {
	for i := range members {
		if strings.EqualFold(members[i].Name, string(name)) {
			return i
		}
	}
	return -1
}

// absent passes a value that is null or empty, and refuses any other.
func (w *contractWalker) absent(k jsontext.Kind) error {
	switch k {
	case 'n':
		w.d.ReadToken()
		return nil
	case '[', '{':
		w.d.ReadToken()
		if end := w.d.PeekKind(); end == ']' || end == '}' {
			w.d.ReadToken()
			return nil
		}
	}
	return w.fail(reasonAbsent)
}

// name reads an object member's name, unquoted into w.buf.
func (w *contractWalker) name() ([]byte, error) {
	v, err := w.d.ReadValue()
	if err != nil || v.Kind() != '"' {
		return nil, w.fail(reasonUnreadable)
	}
	if w.buf, err = jsontext.AppendUnquote(w.buf[:0], v); err != nil {
		return nil, w.fail(reasonUnreadable)
	}
	return w.buf, nil
}

// address reads a string and checks it against the list.
func (w *contractWalker) address() error {
	v, err := w.d.ReadValue()
	if err != nil {
		return w.fail(reasonUnreadable)
	}
	if w.buf, err = jsontext.AppendUnquote(w.buf[:0], v); err != nil {
		return w.fail(reasonUnreadable)
	}
	for _, a := range w.rules.Addresses {
		if equalFold(a, w.buf) {
			w.found++
			return nil
		}
	}
	return &portico.ForbiddenError{What: portico.AllowAddress, Value: string(w.buf), Field: w.field()}
}

// equalFold reports whether s and b are equal ignoring ASCII case (hex
// digits in either case are one address), without making a string of b.
func equalFold(s string, b []byte) bool {
	if len(s) != len(b) {
		return false
	}
	for i := 0; i < len(s); i++ {
		x, y := s[i], b[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// none refuses a call that names no address where it must name one.
func (w *contractWalker) none() error {
	return &portico.ForbiddenError{What: portico.AllowAddress, Field: w.field()}
}

func (w *contractWalker) want(what string) error {
	return w.fail("want " + what + ": refused for a key restricted by contract address")
}

func (w *contractWalker) fail(reason string) error {
	return &portico.ForbiddenError{What: portico.AllowAddress, Field: w.field(), Reason: reason}
}

// field writes the path: params[0].blockStateCalls[1].calls[0].to, or
// params[2] (stateOverrides) for a param itself.
func (w *contractWalker) field() string {
	var b strings.Builder
	b.WriteString("params")
	for _, s := range w.path {
		if s.name != "" {
			b.WriteByte('.')
			b.WriteString(s.name)
			continue
		}
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(s.index))
		b.WriteByte(']')
	}
	if len(w.path) == 1 && w.path[0].name == "" && w.path[0].index < len(w.c.Params) {
		if name := w.c.Params[w.path[0].index].Name; name != "" {
			b.WriteString(" (" + name + ")")
		}
	}
	return b.String()
}

// checkStatement reports a statement the walk cannot follow: an object of
// more than 64 members or a list without its element's shape (a family
// table's mistake), or a method said to name contracts whose params name
// none, which would refuse every call.
func checkStatement(c *portico.Contracts) error {
	if c.Reads != portico.ReadsNamed {
		if len(c.Params) > 0 {
			return errors.New("params are described, but the method is not said to read the contracts they name")
		}
		return nil
	}
	if len(c.Params) > 64 {
		return errors.New("more than 64 params")
	}
	places := 0
	var shape func(s *portico.Shape, at string) error
	shape = func(s *portico.Shape, at string) error {
		switch s.Kind {
		case portico.ShapeAddress, portico.ShapeAddresses, portico.ShapeAddressKeys:
			places++
		case portico.ShapeObject:
			if len(s.Members) > 64 {
				return fmt.Errorf("%s: more than 64 members", at)
			}
			for i := range s.Members {
				if err := shape(&s.Members[i].Shape, at+"."+s.Members[i].Name); err != nil {
					return err
				}
			}
		case portico.ShapeList:
			if s.Elem == nil {
				return fmt.Errorf("%s: a list without the shape of its elements", at)
			}
			return shape(s.Elem, at+"[]")
		}
		return nil
	}
	for i := range c.Params {
		if err := shape(&c.Params[i].Shape, fmt.Sprintf("params[%d]", i)); err != nil {
			return err
		}
	}
	if places == 0 {
		return errors.New("said to read the contracts its params name, but no param names one")
	}
	return nil
}
