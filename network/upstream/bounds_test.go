package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/upstream"
)

const mib = 1 << 20

// answerWriter writes answers whose result is a string of a given size,
// a MiB at a time from one block, so that the node side of a test holds
// next to nothing of what it sends.
type answerWriter struct{ block []byte }

func newAnswerWriter() *answerWriter {
	return &answerWriter{block: []byte(strings.Repeat("x", mib))}
}

// parts returns the bytes before and after the size bytes of the
// result, the id first or last.
func (a *answerWriter) parts(id string, idLast bool) (head, tail string) {
	if idLast {
		return `{"jsonrpc":"2.0","result":"`, `","id":` + id + `}`
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"result":"`, `"}`
}

// length is the length of such an answer.
func (a *answerWriter) length(id string, size int, idLast bool) int {
	head, tail := a.parts(id, idLast)
	return len(head) + size + len(tail)
}

// write writes one answer to w, flushing after each MiB when flush is
// set and calling mid, when set, halfway through the result; it returns
// how many bytes it wrote.
func (a *answerWriter) write(w io.Writer, id string, size int, idLast bool, flush, mid func()) (int64, error) {
	head, tail := a.parts(id, idLast)
	var n int64
	k, err := io.WriteString(w, head)
	n += int64(k)
	for i, part := range []int{size / 2, size - size/2} {
		if i == 1 && mid != nil && err == nil {
			mid()
		}
		for left := part; left > 0 && err == nil; left -= len(a.block) {
			k, err = w.Write(a.block[:min(left, len(a.block))])
			n += int64(k)
			if flush != nil && err == nil {
				flush()
			}
		}
	}
	if err == nil {
		k, err = io.WriteString(w, tail)
		n += int64(k)
	}
	return n, err
}

// sizeParam reads the answer size a test asks for: params [size, …].
func sizeParam(params jsontext.Value) int {
	first, _, _ := strings.Cut(strings.Trim(string(params), "[]"), ",")
	n, _ := strconv.Atoi(first)
	return n
}

// bigHTTPNode answers every call with a result of the size its params
// ask for, with a Content-Length or chunked, and reports how many bytes
// of each answer it could write before the client stopped reading.
type bigHTTPNode struct {
	srv     *httptest.Server
	written chan int64
	hold    <-chan struct{} // when set, the second half of each answer waits for it
}

func newBigHTTPNode(t *testing.T, chunked bool, hold <-chan struct{}) *bigHTTPNode {
	t.Helper()
	a := newAnswerWriter()
	n := &bigHTTPNode{written: make(chan int64, 64), hold: hold}
	n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls, _, _ := jsonrpc.Decode(body)
		size := sizeParam(calls[0].Params)
		w.Header().Set("Content-Type", "application/json")
		if !chunked {
			w.Header().Set("Content-Length", strconv.Itoa(a.length("1", size, false)))
		}
		flush := w.(http.Flusher).Flush
		var mid func()
		if n.hold != nil {
			mid = func() { <-n.hold }
		}
		wrote, _ := a.write(w, "1", size, false, flush, mid)
		n.written <- wrote
	}))
	t.Cleanup(n.srv.Close)
	return n
}

// allocated returns how many bytes the process allocated while f ran: an
// upper bound of how much its heap grew at its peak.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// wantLimit fails the test unless err is the LimitError of limit with max.
func wantLimit(t *testing.T, err error, limit string, max int64) {
	t.Helper()
	var l *portico.LimitError
	if !errors.As(err, &l) || l.Limit != limit || l.Max != max {
		t.Fatalf("got %v, want the %s limit of %d bytes", err, limit, max)
	}
}

// TestResultBoundHTTP: a node's 200 MB answer, with a Content-Length or
// chunked, is refused with the result limit as soon as it passes the
// call's bound: the node could write only about the bound (plus what the
// sockets buffer) before the call gave up, and the process allocated
// about the bound, not the answer.
func TestResultBoundHTTP(t *testing.T) {
	const answer, bound = 200 * mib, 8 * mib
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			n := newBigHTTPNode(t, chunked, nil)
			node := upstream.NewHTTP(n.srv.URL, nil)
			defer node.Close()
			var err error
			alloc := allocated(func() {
				_, err = node.Send(context.Background(), "big", jsontext.Value(fmt.Sprintf("[%d]", answer)), upstream.Limits{MaxResult: bound}, nil)
			})
			wantLimit(t, err, portico.LimitResult, bound)
			wrote := <-n.written
			t.Logf("allocated %.1f MiB; the node wrote %.1f MiB", float64(alloc)/mib, float64(wrote)/mib)
			if alloc > 4*bound {
				t.Errorf("allocated %d bytes for a call bounded by %d", alloc, bound)
			}
			if wrote > bound+32*mib {
				t.Errorf("the node wrote %d bytes before the call gave up: it was read past its bound", wrote)
			}
		})
	}
}

// TestNodeBoundIsTheDefault: with no bound of its own a call is bounded by
// the node's MaxResponseBytes.
func TestNodeBoundIsTheDefault(t *testing.T) {
	n := newBigHTTPNode(t, true, nil)
	node := upstream.NewHTTP(n.srv.URL, &upstream.Options{MaxResponseBytes: 2 * mib})
	defer node.Close()
	_, err := node.Call(context.Background(), "big", jsontext.Value(fmt.Sprintf("[%d]", 3*mib)), nil)
	wantLimit(t, err, portico.LimitResult, 2*mib)
	<-n.written
	// A result of exactly the bound passes, its envelope aside.
	res, err := node.Call(context.Background(), "big", jsontext.Value(fmt.Sprintf("[%d]", 2*mib-2)), nil)
	if err != nil || len(res) != 2*mib {
		t.Fatalf("a result of the bound: %d bytes, %v", len(res), err)
	}
	<-n.written
}

// bigWSNode answers every call on a WebSocket with a result of the size
// its params ask for, its id first or last, in frames of a MiB.
func bigWSNode(t *testing.T, idLast bool) string {
	t.Helper()
	a := newAnswerWriter()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(-1)
		ctx := r.Context()
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			calls, _, _ := jsonrpc.Decode(data)
			mw, err := c.Writer(ctx, websocket.MessageText)
			if err != nil {
				return
			}
			if _, err := a.write(mw, string(calls[0].ID), sizeParam(calls[0].Params), idLast, nil, nil); err != nil {
				return
			}
			if mw.Close() != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// TestResultBoundWebSocket: an answer past its bound on a WebSocket fails
// its call with the result limit; the process holds about the bound, not
// the answer; and a message dropped for its size does not take the
// connection down unless it goes on for several bounds.
func TestResultBoundWebSocket(t *testing.T) {
	ctx := context.Background()
	for _, idLast := range []bool{false, true} {
		t.Run(fmt.Sprintf("idLast=%v", idLast), func(t *testing.T) {
			url := bigWSNode(t, idLast)
			node := upstream.NewWebSocket(url, &upstream.Options{MaxResponseBytes: 8 * mib})
			defer node.Close()
			// 12 MiB, a call bound of 1 MiB: refused, and the message is
			// read to its end, so the next call still has the connection.
			_, err := node.Send(ctx, "big", jsontext.Value(fmt.Sprintf("[%d]", 12*mib)), upstream.Limits{MaxResult: mib}, nil)
			wantLimit(t, err, portico.LimitResult, mib)
			res, err := node.Call(ctx, "small", jsontext.Value("[3]"), nil)
			if err != nil || string(res) != `"xxx"` {
				t.Fatalf("after a refused answer: %s, %v", res, err)
			}
			// 200 MB: refused; the connection closes once the message
			// passes four bounds.
			alloc := allocated(func() {
				_, err = node.Call(ctx, "big", jsontext.Value(fmt.Sprintf("[%d]", 200*mib)), nil)
			})
			if !idLast {
				// Named at its head, the call is refused at its bound.
				wantLimit(t, err, portico.LimitResult, 8*mib)
			} else if !errors.Is(err, portico.ErrUpstreamUnavailable) {
				// Named only at an end that never came: the connection
				// closed under it.
				t.Fatalf("got %v, want the connection's failure", err)
			}
			t.Logf("allocated %.1f MiB", float64(alloc)/mib)
			if alloc > 4*8*mib {
				t.Errorf("allocated %d bytes for a bound of %d", alloc, 8*mib)
			}
		})
	}
}

// TestResultBoundInProcess: an embedded node's answer is bounded as its
// handler writes it.
func TestResultBoundInProcess(t *testing.T) {
	a := newAnswerWriter()
	var wrote atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls, _, _ := jsonrpc.Decode(body)
		n, _ := a.write(w, "1", sizeParam(calls[0].Params), false, nil, nil)
		wrote.Store(n)
	})
	node := upstream.NewInProcess(h, nil)
	var err error
	alloc := allocated(func() {
		_, err = node.Send(context.Background(), "big", jsontext.Value(fmt.Sprintf("[%d]", 200*mib)), upstream.Limits{MaxResult: 8 * mib}, nil)
	})
	wantLimit(t, err, portico.LimitResult, 8*mib)
	if alloc > 4*8*mib || wrote.Load() > 9*mib {
		t.Errorf("allocated %d bytes and took %d for a bound of %d", alloc, wrote.Load(), 8*mib)
	}
}

// A node with no options bounds results as the config's default does
// (limits.max_result_bytes), so a pool built without the config agrees
// with one built from it.
func TestDefaultResultBoundIsTheConfigs(t *testing.T) {
	if got, want := int64(upstream.DefaultMaxResponseBytes), portico.DefaultLimits().MaxResultBytes; got != want {
		t.Fatalf("upstream.DefaultMaxResponseBytes = %d, portico.DefaultLimits().MaxResultBytes = %d", got, want)
	}
}
