package gateway

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/gateway/mcp"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/metering/membudget"
)

// The MCP endpoint (issue 39) on the shared listener: /mcp/v3/<key>, or
// /mcp with the key as a bearer token. The key is checked here as on
// /v3/<key> (key, secret, JWT, User-Agent), then package mcp serves the
// protocol; each of its tool calls comes back here as a JSON-RPC body,
// served by handle like an HTTP POST's: the key's allowlists, credits,
// call and log bounds, the access log.
const mcpPrefix = "/mcp"

// serveMCP checks the key of a request to the MCP endpoint; rest is the
// path after /mcp. A wrong or revoked key is answered 401 before any
// session exists.
func (g *Gateway) serveMCP(ctx *fasthttp.RequestCtx, rest []byte) {
	start := time.Now()
	var key string
	switch {
	case hasSegment(rest, httpPrefix):
		key = string(bytes.TrimPrefix(rest[len(httpPrefix):], []byte("/")))
	case len(rest) == 0:
		// The key as a bearer token; a key whose rules want a JWT uses
		// /mcp/v3/<key>, where Authorization carries the JWT.
		if auth := ctx.Request.Header.Peek("Authorization"); len(auth) > 7 && bytes.EqualFold(auth[:7], []byte("Bearer ")) {
			key = string(bytes.TrimSpace(auth[7:]))
		}
	default:
		ctx.SetContentType("text/plain; charset=utf-8")
		ctx.SetStatusCode(fasthttp.StatusNotFound)
		ctx.SetBodyString("404 page not found\n")
		return
	}
	id, err := g.keys.Authenticate(context.Background(), key)
	if err == nil && id.Rules != nil {
		err = g.authorize(&ctx.Request.Header, id)
	}
	if err == nil && id.Rules != nil && !id.Rules.UserAgentAllowed(string(ctx.Request.Header.UserAgent())) {
		err = &portico.ForbiddenError{What: portico.AllowUserAgent, Value: string(ctx.Request.Header.UserAgent())}
	}
	if err != nil {
		g.fail(ctx, err, start)
		return
	}
	g.mcp.Serve(ctx, id)
}

// mcpBackend is the gateway as package mcp sees it.
type mcpBackend struct{ g *Gateway }

var _ mcp.Backend = mcpBackend{}

// Networks lists the networks id may use, with the methods it may call.
func (b mcpBackend) Networks(id apikey.Identity) []mcp.Network {
	st := b.g.current()
	var out []mcp.Network
	for _, n := range sortedNetworks(st) {
		if !networkAllowed(id, n.Name) {
			continue
		}
		e := mcp.Network{Name: n.Name, Family: n.Methods.Family()}
		if n.Served != nil {
			e.Heads, e.HeadsKnown = n.Served.Upstream().HeadsFresh()
		}
		for _, name := range n.Methods.Names() {
			row := n.Methods.Lookup(name)
			if len(id.Methods) > 0 && !n.Methods.AnyOf(row, id.Methods) {
				continue
			}
			e.Methods = append(e.Methods, mcp.Method{Name: name, Cost: row.Cost})
		}
		out = append(out, e)
	}
	return out
}

// networkAllowed applies the key's network allowlist alone (the Origin
// allowlist applies to each call, with the MCP request's Origin).
func networkAllowed(id apikey.Identity, network string) bool {
	return len(id.Networks) == 0 || slices.Contains(id.Networks, network)
}

// Family returns the family of a network id may use.
func (b mcpBackend) Family(id apikey.Identity, network string) (portico.Family, bool) {
	n := b.g.current().byName[network]
	if n == nil || !networkAllowed(id, network) {
		return "", false
	}
	return n.Methods.Family(), true
}

// Call serves body on the named network for id, as an HTTP POST to the
// network with the given Origin would be served.
func (b mcpBackend) Call(ctx context.Context, id apikey.Identity, origin, network string, body []byte) (mcp.Answer, error) {
	g := b.g
	st, n := g.acquire(func(s *state) *Network { return s.byName[network] })
	if n == nil {
		return mcp.Answer{}, fmt.Errorf("%w: %q", portico.ErrNetworkUnknown, network)
	}
	defer n.use.release()
	if err := allowed(id, n.Name, origin); err != nil {
		return mcp.Answer{}, err
	}
	out, status, info := g.handle(ctx, request{net: n, id: id, st: st}, body, nil)
	a := mcp.Answer{Body: out, Status: status, Verifying: info.verifying, Verified: info.verified}
	if info.bill != nil {
		a.Metered, a.Charged, a.Remaining = true, info.bill.Charged, info.bill.Remaining()
	}
	return a, nil
}

// Bounds are the MCP sessions' bounds: a session counts like a WebSocket
// connection of its key (limits.max_ws_connections_per_key, counted on
// its own) and idles out like one (limits.ws_idle_timeout).
func (b mcpBackend) Bounds() mcp.Bounds {
	l := &b.g.current().limits
	return mcp.Bounds{SessionsPerKey: l.MaxWSConnectionsPerKey, Idle: l.WSIdleTimeout}
}

// Memory is the key's memory budget, under the process's.
func (b mcpBackend) Memory(key string) *membudget.Budget { return b.g.keyMem.Of(key) }

// sortedNetworks returns the networks of st by name.
func sortedNetworks(st *state) []*Network {
	out := make([]*Network, 0, len(st.byName))
	for _, n := range st.byName {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *Network) int { return strings.Compare(a.Name, b.Name) })
	return out
}
