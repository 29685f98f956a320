package upstream

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/jsonrpc"
)

// messageIDCases are answers as nodes write them, and some that must not
// be read as naming a call.
var messageIDCases = []struct {
	msg        string
	head, tail uint64 // 0: none found
}{
	{`{"jsonrpc":"2.0","id":7,"result":"0x1"}`, 7, 0},
	{`{"jsonrpc":"2.0","result":"0x1","id":7}`, 0, 7},
	{"{ \"id\" : 12 ,\n \"jsonrpc\":\"2.0\", \"result\": {\"id\":3} }", 12, 0},
	{"{\"jsonrpc\":\"2.0\",\"result\":[1,2],\r\n\t\"id\" : 18446744073709551615 }\n", 0, 18446744073709551615},
	{`{"jsonrpc":"2.0","result":{"a":1,"id":5}}`, 0, 0},
	{`{"jsonrpc":"2.0","result":"x\",\"id\":5}"}`, 0, 0},
	{`{"jsonrpc":"2.0","id":"7","result":1}`, 0, 0},
	{`{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x1","result":{}}}`, 0, 0},
	{`{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"x"}}`, 7, 0},
	{`{"jsonrpc":"2.0","id":-1,"result":1}`, 0, 0},
	{`{"jsonrpc":"2.0","id":1e3,"result":1}`, 0, 0},
	{`[{"jsonrpc":"2.0","id":1,"result":1}]`, 0, 0},
}

func TestMessageID(t *testing.T) {
	for _, c := range messageIDCases {
		head, hok := headID([]byte(c.msg))
		tail, tok := tailID([]byte(c.msg))
		if head != c.head || hok != (c.head != 0) || tail != c.tail || tok != (c.tail != 0) {
			t.Errorf("%s: head %d %v, tail %d %v; want %d, %d", c.msg, head, hok, tail, tok, c.head, c.tail)
		}
	}
	// A number cut short by the end of the head is not read as a shorter
	// one.
	if id, ok := headID([]byte(`{"jsonrpc":"2.0","id":123`)); ok {
		t.Errorf("a cut id read as %d", id)
	}
}

// FuzzMessageID: finding a message's id at its head or tail never panics,
// and on a valid answer finds the id the full decoder reads (the head's
// id unless the envelope names several).
func FuzzMessageID(f *testing.F) {
	for _, c := range messageIDCases {
		f.Add([]byte(c.msg))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		head := msg[:min(len(msg), headBytes)]
		tail := msg[max(0, len(msg)-tailBytes):]
		hid, hok := headID(head)
		tid, tok := tailID(tail)
		r, err := jsonrpc.DecodeResponse(msg)
		if err != nil {
			return
		}
		want, err := strconv.ParseUint(string(r.ID), 10, 64)
		if err != nil || string(r.ID) != strconv.FormatUint(want, 10) {
			return // not an id of ours
		}
		if tok && tid != want {
			t.Fatalf("tail id %d, the decoder reads %d: %q", tid, want, msg)
		}
		if hok && hid != want && topLevelIDs(msg) == 1 {
			t.Fatalf("head id %d, the decoder reads %d: %q", hid, want, msg)
		}
	})
}

// topLevelIDs counts the "id" members of a message's top-level object.
func topLevelIDs(msg []byte) int {
	dec := jsontext.NewDecoder(bytes.NewReader(msg), jsontext.AllowDuplicateNames(true))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return 0
	}
	n := 0
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return n
		}
		if tok.String() == "id" {
			n++
		}
		if err := dec.SkipValue(); err != nil {
			return n
		}
	}
	return n
}
