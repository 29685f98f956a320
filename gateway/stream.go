package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/coder/websocket"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/metering/membudget"
)

// Streams in the process (issue 38): a webhook's worker subscribes to a
// network as its key, over a WebSocket that never leaves the process (a
// pipe), served by the same core as a client's: the key's allowlists and
// bounds, the notifications' charges, the topics' reorg handling and
// resumeFrom. The worker reads the notifications; a worker that reads
// slowly has its connection's queue fill and is cut off, as a slow client
// is, and subscribes again from where it was.

// Stream subscribes on network as id with the subscribe call body (a
// JSON-RPC request) and calls each with the result of every notification,
// in order, until ctx ends, the subscription ends or each returns an
// error; it returns why it ended. An error answer to the subscribe call
// is returned as a *jsonrpc.Error.
func (g *Gateway) Stream(ctx context.Context, id apikey.Identity, network string, body []byte, each func(result json.RawMessage) error) error {
	if n := g.current().byName[network]; n == nil || !networkAllowed(id, network) {
		return fmt.Errorf("%w: %q", portico.ErrNetworkUnknown, network)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ln := newPipeListener()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.serveStream(w, r, id, network)
	})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = srv.Serve(ln) }()
	defer func() { _ = srv.Close(); wg.Wait() }()
	ws, _, err := websocket.Dial(ctx, "ws://portico.internal/", &websocket.DialOptions{HTTPClient: &http.Client{
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return ln.dial(ctx) }},
	}})
	if err != nil {
		return fmt.Errorf("gateway: stream: %w", err)
	}
	defer func() { _ = ws.CloseNow() }()
	ws.SetReadLimit(-1)
	if err := ws.Write(ctx, websocket.MessageText, body); err != nil {
		return fmt.Errorf("gateway: stream: %w", err)
	}
	// Messages are read as they come, so that pings are answered while
	// each works; up to streamQueue wait, their bytes held against the
	// key's memory budget. A reader that falls further behind is cut
	// off, as a slow client is, and subscribes again from where it was.
	mem := g.keyMem.Of(id.Name)
	msgs := make(chan []byte, streamQueue)
	readErr := make(chan error, 1)
	go func() {
		defer close(msgs)
		for {
			_, msg, err := ws.Read(ctx)
			if err == nil && !mem.Take(int64(len(msg))) {
				err = errStreamBehind
			}
			if err != nil {
				readErr <- err
				return
			}
			select {
			case msgs <- msg:
			default:
				mem.Give(int64(len(msg)))
				readErr <- errStreamBehind
				return
			}
		}
	}()
	defer func() {
		cancel()
		for msg := range msgs {
			mem.Give(int64(len(msg)))
		}
	}()
	first := true
	for msg := range msgs {
		err := streamMessage(msg, first, each)
		mem.Give(int64(len(msg)))
		if err != nil {
			return err
		}
		first = false
	}
	err = <-readErr
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("gateway: stream ended: %w", err)
}

// streamQueue bounds the notifications a stream's reader holds.
const streamQueue = 256

// errStreamBehind ends a stream whose reader fell behind.
var errStreamBehind = errors.New("the reader fell behind")

// streamMessage hands one message of a stream to each: the result of a
// notification; the first message, the subscription's id, is skipped; an
// error answer ends the stream.
func streamMessage(msg []byte, first bool, each func(json.RawMessage) error) error {
	var ans struct {
		Error  *jsonrpc.Error `json:"error"`
		Method string         `json:"method"`
		Params struct {
			Result json.RawMessage `json:"result"`
		} `json:"params"`
	}
	if err := json.Unmarshal(msg, &ans); err != nil {
		return fmt.Errorf("gateway: stream: %w", err)
	}
	switch {
	case ans.Error != nil:
		return ans.Error
	case ans.Method != "":
		return each(ans.Params.Result)
	case first:
		return nil // the subscription id
	}
	return nil
}

// serveStream serves the pipe's WebSocket as a client's, for id on the
// named network.
func (g *Gateway) serveStream(w http.ResponseWriter, r *http.Request, id apikey.Identity, name string) {
	lim := &g.current().limits
	limits := jsonrpc.ConnLimitsOf(*lim)
	limits.MaxInFlight = maxInFlightPerSocket
	limits.Memory = membudget.New("stream", lim.ConnectionMemoryBytes, g.keyMem.Of(id.Name))
	c, err := jsonrpc.Accept(w, r, nil, limits)
	if err != nil {
		return
	}
	c.Serve(context.Background(), func(ctx context.Context, body []byte) []byte {
		rq := request{id: id}
		if rq.st, rq.net = g.acquire(func(s *state) *Network { return s.byName[name] }); rq.net == nil {
			e, _, _ := jsonrpc.ErrorFor(networkGone(name))
			return jsonrpc.AppendError(nil, nil, &jsonrpc.Error{Code: e.Code, Message: networkGone(name).Error()})
		}
		defer rq.net.use.release()
		out, _, _ := g.handle(ctx, rq, body, nil)
		return out
	})
}

// pipeListener is a net.Listener whose connections are in-memory pipes.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// dial connects to the listener.
func (l *pipeListener) dial(ctx context.Context) (net.Conn, error) {
	a, b := net.Pipe()
	select {
	case l.conns <- a:
		return b, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Accept returns the next dialled connection.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting.
func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr names the listener.
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "portico.internal" }

// KeyMemory is the memory budget of the key named key, under the
// process's.
func (g *Gateway) KeyMemory(key string) *membudget.Budget { return g.keyMem.Of(key) }

// Call serves one JSON-RPC body on network as id (a webhook's look-ups,
// such as an address's transactions in a block), as an HTTP POST would be.
func (g *Gateway) Call(ctx context.Context, id apikey.Identity, network string, body []byte) ([]byte, error) {
	st, n := g.acquire(func(s *state) *Network { return s.byName[network] })
	if n == nil {
		return nil, fmt.Errorf("%w: %q", portico.ErrNetworkUnknown, network)
	}
	defer n.use.release()
	if err := allowed(id, n.Name, ""); err != nil {
		return nil, err
	}
	out, _, _ := g.handle(ctx, request{net: n, id: id, st: st}, body, nil)
	return out, nil
}
