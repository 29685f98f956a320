// Package mcp serves the Model Context Protocol (issue 39): the tools,
// resources, prompts and sessions an AI agent uses to read chains through Portico,
// on the official Go SDK's Streamable HTTP transport. It holds no chain
// logic and checks nothing about calls itself: every tool call becomes a
// JSON-RPC body that the gateway serves through its Backend, with the
// key's allowlists, credits, call and log bounds and access log, exactly
// as if the agent had posted it to /v3/<key>. What this package bounds is
// its own: the sessions of each key and the memory they hold.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/metering/apikey"
	"github.com/porticohq/portico/metering/membudget"
)

// Backend is what the MCP server asks of the gateway.
type Backend interface {
	// Networks lists the networks id may use, by name.
	Networks(id apikey.Identity) []Network
	// Family is the family of the network named network, when id may
	// use it.
	Family(id apikey.Identity, network string) (portico.Family, bool)
	// Call serves a JSON-RPC request body (a call or a batch) on the
	// network named network for id, through the same checks, metering
	// and logs as an HTTP POST with the given Origin header. The error
	// is a refusal of the whole body before it was read (an unknown
	// network, one outside the key's allowlists); every other failure is
	// in the answer's body.
	Call(ctx context.Context, id apikey.Identity, origin, network string, body []byte) (Answer, error)
	// Bounds are the bounds on sessions now (they follow a reload).
	Bounds() Bounds
	// Memory is the budget the sessions of the key named key count
	// against (under the process's).
	Memory(key string) *membudget.Budget
}

// Network is one network a key may use, as list_networks and the
// resources show it.
type Network struct {
	Name   string
	Family portico.Family
	// Heads are the network's tracked heads; HeadsKnown is false while
	// none are.
	Heads      portico.Heads
	HeadsKnown bool
	// Methods are the methods the key may call on it, with their costs,
	// sorted by name.
	Methods []Method
}

// Method is one row of a network's method table.
type Method struct {
	Name string `json:"name"`
	Cost int    `json:"cost"`
}

// Answer is the gateway's answer to a body.
type Answer struct {
	// Body is the JSON-RPC response (an array for a batch).
	Body []byte
	// Status is the HTTP status the answer would carry.
	Status int
	// Verifying counts the calls on a network that verifies answers, and
	// Verified those whose answer was checked (X-Portico-Verified).
	Verifying, Verified int
	// Metered says the body was charged: Charged credits, Remaining
	// after it.
	Metered            bool
	Charged, Remaining int64
}

// Bounds are the bounds on MCP sessions.
type Bounds struct {
	// SessionsPerKey bounds the open sessions of one key; 0 means no
	// bound.
	SessionsPerKey int
	// Idle closes a session that sent nothing for this long; 0 means
	// DefaultIdle.
	Idle time.Duration
}

// DefaultIdle is how long an idle session is kept when Bounds says
// nothing.
const DefaultIdle = 10 * time.Minute

// SessionBytes is what one open session is counted as in its key's
// memory budget: its state in the SDK (queues, maps, schemas resolved
// once per server, not per session) stays well under it.
const SessionBytes = 64 << 10

// sessionHeader is the Streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// identityKey is the fasthttp user value under which Serve leaves the
// caller's identity for the SDK's token check.
type identityKey struct{}

// Server is the MCP endpoint: one SDK server and its Streamable HTTP
// handler, shared by every key; each request carries its key's identity.
type Server struct {
	b       Backend
	log     *slog.Logger
	srv     *sdk.Server
	handler fasthttp.RequestHandler

	mu       sync.Mutex
	sessions map[string]int // open sessions per key name (and those being opened)
}

// Options configure a Server.
type Options struct {
	// Logger receives the SDK's errors; nil discards them.
	Logger *slog.Logger
	// Version is the server version the initialize answer reports.
	Version string
}

// New builds the MCP server over b; it starts nothing.
func New(b Backend, o Options) *Server {
	s := &Server{b: b, log: o.Logger, sessions: map[string]int{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "portico", Title: "Portico chain gateway", Version: version},
		&sdk.ServerOptions{Instructions: instructions, Logger: s.log})
	s.addTools()
	s.addResources()
	s.addPrompts()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, &sdk.StreamableHTTPOptions{
		// Every answer is one JSON body: the server sends nothing on its
		// own, so no stream is held open (GET is refused in Serve).
		JSONResponse: true,
		Logger:       s.log,
		// The key is the credential, checked before the SDK sees the
		// request; the SDK's guard is for servers that have none.
		DisableLocalhostProtection: true,
		SessionTimeout:             s.idle(),
	})
	// The SDK binds each session to the key that opened it (its
	// TokenInfo's UserID) and hands the identity to every tool call.
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		id, ok := ctx.Value(identityKey{}).(apikey.Identity)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id.Name, Extra: map[string]any{identityExtra: id}}, nil
	}
	guarded := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	s.handler = fasthttpadaptor.NewFastHTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		guarded.ServeHTTP(w, r.WithContext(detach(r.Context())))
	}))
	return s
}

// detach is the context the SDK gets with a request: the identity alone,
// not the request's fasthttp context. The SDK keeps a session's first
// request context for the session's life, past the request, and fasthttp
// reuses a request's context for the next request once it is answered:
// the session's tool calls read it while another request's reset wrote
// it (a data race the race detector found).
func detach(ctx context.Context) context.Context {
	out := context.Background()
	if id, ok := ctx.Value(identityKey{}).(apikey.Identity); ok {
		out = context.WithValue(out, identityKey{}, id)
	}
	return out
}

// identityExtra is the TokenInfo.Extra entry holding the identity.
const identityExtra = "portico.identity"

func (s *Server) idle() time.Duration {
	if d := s.b.Bounds().Idle; d > 0 {
		return d
	}
	return DefaultIdle
}

// instructions tell a model what the server is for.
const instructions = "Portico is a JSON-RPC gateway in front of blockchain nodes. " +
	"Call list_networks first: it names the networks this API key may use, their chain family (evm, solana, starknet) and their latest block. " +
	"Then use the typed tools (get_balance, get_block, get_transaction, get_logs, call_contract on evm; get_account, get_signatures_for_address on solana; get_events on starknet), " +
	"or rpc_call for any other method the key may call. Every call costs credits from the key's daily balance; each answer says what it cost and what is left."

// Serve answers one request to the MCP endpoint for the key id, which
// the gateway has authenticated (key, secret, JWT, User-Agent). The body
// is bounded by the server's body limit before it gets here.
func (s *Server) Serve(ctx *fasthttp.RequestCtx, id apikey.Identity) {
	switch {
	case ctx.IsGet():
		// No stream of the server's own: the spec's answer is 405.
		ctx.Response.Header.Set("Allow", "POST, DELETE")
		ctx.Error("Method Not Allowed: this server sends nothing on its own; POST messages", fasthttp.StatusMethodNotAllowed)
		return
	case ctx.IsPost(), ctx.IsDelete():
	default:
		ctx.Response.Header.Set("Allow", "POST, DELETE")
		ctx.Error("Method Not Allowed", fasthttp.StatusMethodNotAllowed)
		return
	}
	// The credential was checked; the SDK sees a stand-in token, so that
	// neither the key nor a JWT reaches the tools.
	ctx.Request.Header.Set("Authorization", "Bearer checked")
	ctx.SetUserValue(identityKey{}, id)
	if !ctx.IsPost() || len(ctx.Request.Header.Peek(sessionHeader)) > 0 {
		s.handler(ctx)
		return
	}
	// A POST without a session opens one: admitted within the key's
	// bounds first.
	release, err := s.admit(id)
	if err != nil {
		refuse(ctx, err)
		return
	}
	s.handler(ctx)
	sid := string(ctx.Response.Header.Peek(sessionHeader))
	var opened *sdk.ServerSession
	if sid != "" {
		for ss := range s.srv.Sessions() {
			if ss.ID() == sid {
				opened = ss
				break
			}
		}
	}
	if opened == nil {
		release()
		return
	}
	go func() {
		_ = opened.Wait()
		release()
	}()
}

// ErrSessions is the refusal of a session beyond the key's bound.
var ErrSessions = errors.New("too many MCP sessions for this API key")

// SessionsError is the refusal of a new session beyond the key's bound
// on sessions (HTTP 429).
type SessionsError struct{ Max int }

// Error says what was refused and how to make room.
func (e *SessionsError) Error() string {
	return ErrSessions.Error() + ": limit is " + strconv.Itoa(e.Max) + "; close one (HTTP DELETE) or let it idle out"
}

// Unwrap returns ErrSessions.
func (e *SessionsError) Unwrap() error { return ErrSessions }

// admit counts a new session of id within the bounds, and its memory
// in the key's budget. release ends it.
func (s *Server) admit(id apikey.Identity) (release func(), err error) {
	max := s.b.Bounds().SessionsPerKey
	s.mu.Lock()
	if max > 0 && s.sessions[id.Name] >= max {
		s.mu.Unlock()
		return nil, &SessionsError{Max: max}
	}
	s.sessions[id.Name]++
	s.mu.Unlock()
	mem := s.b.Memory(id.Name)
	if err := mem.TakeErr(SessionBytes); err != nil {
		s.forget(id.Name)
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			mem.Give(SessionBytes)
			s.forget(id.Name)
		})
	}, nil
}

func (s *Server) forget(key string) {
	s.mu.Lock()
	if s.sessions[key]--; s.sessions[key] <= 0 {
		delete(s.sessions, key)
	}
	s.mu.Unlock()
}

// Sessions returns the open sessions of the key named key.
func (s *Server) Sessions(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[key]
}

// refuse answers a session that was not admitted: a JSON-RPC error with
// no id, as the transport answers what it cannot serve.
func refuse(ctx *fasthttp.RequestCtx, err error) {
	status, code := fasthttp.StatusTooManyRequests, portico.CodeLimitExceeded
	var refused *membudget.Refused
	if errors.As(err, &refused) {
		status, code = fasthttp.StatusServiceUnavailable, portico.CodeMemoryBusy
		ctx.Response.Header.Set("Retry-After", "1")
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	msg, _ := json.Marshal(err.Error())
	ctx.SetBodyString(`{"jsonrpc":"2.0","id":null,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(msg) + `}}`)
}

// Close closes every open session.
func (s *Server) Close() {
	for ss := range s.srv.Sessions() {
		_ = ss.Close()
	}
}

// identity is the caller of a tool call or resource read.
func identity(extra *sdk.RequestExtra) (apikey.Identity, string, bool) {
	if extra == nil || extra.TokenInfo == nil {
		return apikey.Identity{}, "", false
	}
	id, ok := extra.TokenInfo.Extra[identityExtra].(apikey.Identity)
	origin := ""
	if extra.Header != nil {
		origin = extra.Header.Get("Origin")
	}
	return id, origin, ok
}
