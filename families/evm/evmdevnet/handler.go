package evmdevnet

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum/rpc"
	"github.com/porticohq/portico/jsonrpc"
)

// Handler returns the node's JSON-RPC handler for a gateway in the same
// process, or nil before Start. It serves the namespaces of Modules only,
// as the node's HTTP endpoint does: geth's in-process server holds every
// namespace (admin included), and calls outside Modules get geth's own
// method-not-found answer without reaching it.
func (d *Devnet) Handler() http.Handler {
	if !d.started {
		return nil
	}
	h, err := d.stack.RPCHandler()
	if err != nil {
		return nil
	}
	return &modulesOnly{next: h}
}

// Dial returns a client of the node's in-process RPC server (every
// namespace, subscriptions included), or nil before Start; Close it when
// done.
func (d *Devnet) Dial() *rpc.Client {
	if !d.started {
		return nil
	}
	h, err := d.stack.RPCHandler()
	if err != nil {
		return nil
	}
	return rpc.DialInProc(h)
}

// Info says what the running devnet offers, for a ready line: its
// endpoints, chain id, and the prefunded dev accounts with their keys.
func (d *Devnet) Info() string {
	var b strings.Builder
	fmt.Fprintf(&b, "embedded go-ethereum devnet at %s, chain id %s, prefunded dev accounts (test keys, never use them elsewhere):", d.HTTPURL(), d.ChainID())
	for _, a := range d.Accounts() {
		fmt.Fprintf(&b, "\n  %s  key %s", a.Address.Hex(), a.KeyHex())
	}
	return b.String()
}

// maxInProcBody bounds a request body handed to the in-process server, as
// the node's HTTP endpoint bounds it.
const maxInProcBody = 5 << 20

// modulesOnly keeps calls outside Modules from geth's in-process server.
type modulesOnly struct{ next http.Handler }

func (m *modulesOnly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxInProcBody+1))
	if err != nil || len(body) > maxInProcBody {
		http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	calls, batch, derr := jsonrpc.Decode(body)
	if derr != nil || allServed(calls) {
		// geth answers malformed bodies itself, in its own words.
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.next.ServeHTTP(w, r)
		return
	}
	if !batch {
		writeJSON(w, notAvailable(calls[0]))
		return
	}
	// A batch with calls outside Modules: each served call goes to geth on
	// its own, the others get the error.
	out := []byte{'['}
	for i, c := range calls {
		if i > 0 {
			out = append(out, ',')
		}
		if c.Err != nil || !served(c.Method) {
			out = append(out, notAvailable(c)...)
			continue
		}
		sub := jsonrpc.AppendRequest(nil, c.ID, c.Method, c.Params)
		rec := &recorder{header: http.Header{}}
		req := r.Clone(r.Context())
		req.Body = io.NopCloser(bytes.NewReader(sub))
		req.ContentLength = int64(len(sub))
		m.next.ServeHTTP(rec, req)
		out = append(out, bytes.TrimSpace(rec.body.Bytes())...)
	}
	writeJSON(w, append(out, ']'))
}

func allServed(calls []jsonrpc.Call) bool {
	for _, c := range calls {
		if c.Err == nil && !served(c.Method) {
			return false
		}
	}
	return true
}

// served reports whether method is in one of Modules' namespaces.
func served(method string) bool {
	ns, _, ok := strings.Cut(method, "_")
	return ok && slices.Contains(Modules(), ns)
}

// notAvailable is geth's answer to a method outside the served
// namespaces (or the call's own envelope error).
func notAvailable(c jsonrpc.Call) []byte {
	e := c.Err
	if e == nil {
		e = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the method " + c.Method + " does not exist/is not available"}
	}
	return jsonrpc.AppendError(nil, c.ID, e)
}

func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// recorder collects one sub-call's answer.
type recorder struct {
	header http.Header
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(int)             {}
func (r *recorder) Flush()                      {}
