package upstream

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// How a WebSocket node's messages are bounded. One connection carries
// many calls' answers, one message at a time, and a message does not say
// whose answer it is until its id is read: geth, erigon and anvil write
// the id before the result, agave, pathfinder and juno after it. So a
// message is bounded by the widest bound of the calls on the connection
// until its head names its call, then by that call's bound, and charged
// to that call's budget from then on; a message whose id comes last is
// charged when it ends. A message that passes its bound is read to its
// end without being kept (its last bytes are, to find the id there), and
// its call alone fails with the bound it passed; the connection and the
// other calls live on.
const (
	// wsDrainFactor is how many bounds long a message may be, read and
	// dropped, before the connection is closed: a node that never ends a
	// message must not hold the connection's reader for ever.
	wsDrainFactor = 4
	// headBytes is how much of a message is read before its id is looked
	// for at its head.
	headBytes = 512
	// tailBytes is how much of a dropped message's end is kept, to find
	// its id there.
	tailBytes = 128
)

// wsMessage is one message as it is read.
type wsMessage struct {
	data  []byte
	bound int64 // the result bound: the call's once known, else the widest
	hold  holding
	// id is the call the message answers, when its head names one
	// (known).
	id    uint64
	known bool
	// refused is the bound or budget the message passed: it is dropped,
	// and its last bytes kept in tail.
	refused error
	tail    []byte
}

// readMessage reads one message from r and hands it to its call or
// subscription. It returns an error only when the connection failed.
func (c *wsConn) readMessage(r io.Reader) error {
	c.mu.Lock()
	m := &wsMessage{bound: c.widest}
	c.mu.Unlock()
	looked := false
	var scratch []byte
	for {
		if m.refused != nil {
			if scratch == nil {
				scratch = make([]byte, readChunk)
			}
			n, err := r.Read(scratch)
			m.keepTail(scratch[:n])
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			continue
		}
		var err error
		m.data, err = readMore(r, m.data, 0, bodyBound(m.bound), &m.hold)
		end := errors.Is(err, io.EOF)
		var past pastBound
		switch {
		case err == nil || end:
		case errors.As(err, &past):
			c.refuse(m, errResult(m.bound))
			m.keepTail([]byte{past.next})
			continue
		case isLimit(err):
			c.refuse(m, err)
			continue
		default:
			m.hold.release()
			return err
		}
		if !looked && (len(m.data) >= headBytes || end) {
			looked = true
			if err := c.atHead(m); err != nil {
				c.refuse(m, err)
				continue
			}
			// The call's bound may be below what was read.
			if int64(len(m.data)) > bodyBound(m.bound) {
				c.refuse(m, errResult(m.bound))
				continue
			}
		}
		if end {
			break
		}
	}
	c.deliver(m)
	return nil
}

// atHead looks for the message's call at its head: from then on the
// call's bound applies and its budget is charged, for what was read so
// far first.
func (c *wsConn) atHead(m *wsMessage) error {
	id, ok := headID(m.data)
	if !ok {
		return nil
	}
	m.id, m.known = id, true
	c.mu.Lock()
	wt := c.pending[id]
	c.mu.Unlock()
	if wt == nil {
		return nil
	}
	m.bound = wt.lim.bound(c.opts)
	m.hold.budget = wt.lim.Budget
	return m.hold.upTo(int64(len(m.data)), 0)
}

// refuse drops the message for err, keeping only its end, and fails its
// call at once when its head named it; else deliver looks for the call at
// the message's end.
func (c *wsConn) refuse(m *wsMessage, err error) {
	m.refused = err
	m.keepTail(m.data)
	m.data = nil
	m.hold.release()
	if m.known {
		c.reply(m.id, wsReply{err: err}, nil)
	}
}

// keepTail keeps the last tailBytes of what was read so far.
func (m *wsMessage) keepTail(p []byte) {
	if len(p) >= tailBytes {
		m.tail = append(m.tail[:0], p[len(p)-tailBytes:]...)
		return
	}
	m.tail = append(m.tail, p...)
	if extra := len(m.tail) - tailBytes; extra > 0 {
		m.tail = append(m.tail[:0], m.tail[extra:]...)
	}
}

// deliver hands a message to the call it answers (a refused one as its
// error) or to its subscription; what it took from a budget goes with
// the answer, or back.
func (c *wsConn) deliver(m *wsMessage) {
	if m.refused != nil {
		if m.known {
			return // its call has its error
		}
		if id, ok := tailID(m.tail); ok {
			if wt := c.waiting(id); wt != nil {
				// It passed the widest bound, so its call's too: the
				// error names the call's.
				c.reply(id, wsReply{err: errResult(wt.lim.bound(c.opts))}, nil)
			}
		}
		return
	}
	r, err := jsonrpc.DecodeResponse(m.data)
	if err != nil {
		m.hold.release()
		c.notification(m.data) // or garbage, which it ignores
		return
	}
	id, err := strconv.ParseUint(string(r.ID), 10, 64)
	if err != nil {
		m.hold.release()
		return
	}
	if m.known && id != m.id {
		// The envelope names two ids: the call its head named was
		// charged for it and fails; the answer is nobody's.
		m.hold.release()
		c.reply(m.id, wsReply{err: unavailable(errors.New("node answered with two ids"))}, nil)
		return
	}
	var rep wsReply
	wt := c.waiting(id)
	switch {
	case wt == nil:
		m.hold.release()
	case r.Error != nil:
		m.hold.release()
		rep.err = r.Error
	case int64(len(r.Result)) > wt.lim.bound(c.opts):
		m.hold.release()
		rep.err = errResult(wt.lim.bound(c.opts))
	case !m.known:
		// Its id came last: it is charged now that its call is known.
		m.hold = holding{budget: wt.lim.Budget}
		if err := m.hold.upTo(int64(len(m.data)), 0); err != nil {
			rep.err = err
			break
		}
		fallthrough
	default:
		rep = wsReply{result: r.Result, hold: m.hold}
	}
	c.reply(id, rep, &r)
}

// waiting returns the call waiting for id, or nil.
func (c *wsConn) waiting(id uint64) *wsWaiter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[id]
}

// reply hands rep to the call waiting for id and forgets the call; answer,
// the node's answer when there is one, registers the subscription its
// subscribe call opened. When no call waits any more (it gave up), what
// rep took from a budget is given back. The hand-over happens under the
// lock that forget takes, so a call that gives up finds any reply sent
// before in its channel.
func (c *wsConn) reply(id uint64, rep wsReply, answer *jsonrpc.Response) {
	c.mu.Lock()
	wt := c.pending[id]
	delete(c.pending, id)
	if s := c.subscribing[id]; s != nil {
		delete(c.subscribing, id)
		if answer != nil && answer.Error == nil {
			s.id = string(answer.Result)
			c.subs[s.id] = s
		}
	}
	if wt != nil {
		wt.ch <- rep // buffered: never blocks
	}
	c.mu.Unlock()
	if wt == nil {
		rep.hold.release()
	}
}

// headID returns the id of an answer whose envelope names it before its
// result or error, from the first bytes of the message. It reads only the
// top-level members that may come first ("jsonrpc", "id"); an id is taken
// only when something follows it in head, so a number cut short by the
// end of head is never read as a shorter one.
func headID(head []byte) (uint64, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(head), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return 0, false
	}
	for {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return 0, false
		}
		name := tok.String()
		if name != "id" && name != "jsonrpc" {
			return 0, false
		}
		v, err := dec.ReadValue()
		if err != nil {
			return 0, false
		}
		if name == "id" {
			if dec.InputOffset() >= int64(len(head)) || v.Kind() != '0' {
				return 0, false
			}
			id, err := strconv.ParseUint(string(v), 10, 64)
			return id, err == nil
		}
	}
}

// tailID returns the id of an answer whose envelope names it last, from
// the last bytes of the message: a number member "id" that closes the
// top-level object.
func tailID(tail []byte) (uint64, bool) {
	b := trimRight(tail)
	if len(b) == 0 || b[len(b)-1] != '}' {
		return 0, false
	}
	b = trimRight(b[:len(b)-1])
	i := len(b)
	for i > 0 && b[i-1] >= '0' && b[i-1] <= '9' {
		i--
	}
	digits := b[i:]
	if len(digits) == 0 || len(digits) > 20 {
		return 0, false
	}
	b = trimRight(b[:i])
	if len(b) == 0 || b[len(b)-1] != ':' {
		return 0, false
	}
	b, ok := bytes.CutSuffix(trimRight(b[:len(b)-1]), []byte(`"id"`))
	if !ok {
		return 0, false
	}
	// The name must open a member: after a comma, or the object's brace.
	b = trimRight(b)
	if len(b) == 0 || (b[len(b)-1] != ',' && b[len(b)-1] != '{') {
		return 0, false
	}
	id, err := strconv.ParseUint(string(digits), 10, 64)
	return id, err == nil
}

// trimRight trims JSON whitespace at the end of b.
func trimRight(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
