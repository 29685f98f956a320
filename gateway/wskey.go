package gateway

import (
	"context"
	"errors"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/metering/apikey"
)

// An open WebSocket follows its key as the store has it (issue 33,
// docs/keys.md): each message is checked against the key through the same
// cached lookup an HTTP request takes (Authenticator, whose cache is
// store.key_cache_ttl), so a changed method or contract list and changed
// bounds apply to the next message; a revoked key, or one whose network,
// origin or User-Agent list now refuses what the handshake sent, refuses
// the next message and closes the socket with 1008 and the reason. A
// socket that sends nothing (a subscriber) is checked every keyTTL, one
// lookup per key, by the sweep below. The secret and the JWT stay checked
// at the handshake only, as before: a rotation or a token's expiry does
// not close an open socket.

// DefaultKeyTTL is how often open WebSockets are checked against their key
// when Config.KeyTTL is 0: the store's default key cache.
const DefaultKeyTTL = 5 * time.Second

// socket is an open WebSocket as the gateway tracks it: its network, what
// its handshake sent, and its key (shared with the key's other sockets).
type socket struct {
	network string
	// origin and ua are what the handshake sent, for the lists that
	// apply to a whole request.
	origin, ua string
	// secret and jwt say the handshake passed the key's secret or JWT:
	// a socket opened without one is closed when the key comes to
	// require it.
	secret, jwt bool
	// version is the version of the key this socket was last checked
	// against (under key.mu).
	version uint64
	key     *wsKey
}

// wsKey is a key of open sockets, one for all the sockets of the key (an
// idle subscriber holds only its socket's own few fields: issue 17's
// bound on memory per subscriber).
type wsKey struct {
	// key is the API key of the path, kept to look it up again (through
	// the authenticator's cache); it is never logged.
	key string

	mu   sync.Mutex
	id   apikey.Identity // as last seen
	refs int             // sockets open (under Gateway.mu)
}

// newSocket is the socket of a handshake that passed every check as id;
// track shares its wsKey with the key's other sockets.
func newSocket(network, key, origin, ua string, id apikey.Identity) *socket {
	s := &socket{network: network, origin: origin, ua: ua, version: id.Version, key: &wsKey{key: key, id: id}}
	if r := id.Rules; r != nil {
		s.secret, s.jwt = len(r.Secrets) > 0, r.JWT != nil
	}
	return s
}

// follow takes the key as a lookup found it now (id, or the lookup's
// err) and returns the identity to serve the socket's next message with,
// or the error that refuses it: then the socket is to close. When the
// store could not be asked (an error other than an unknown key), the key
// stays as last seen.
func (s *socket) follow(id apikey.Identity, err error) (apikey.Identity, error) {
	k := s.key
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err == nil && id.Version != 0 && id.Version == s.version:
		return id, nil
	case err == nil:
		if err := s.admits(id); err != nil {
			return apikey.Identity{}, err
		}
		s.version = id.Version
		if id.Version >= k.id.Version {
			k.id = id
		}
		return id, nil
	case errors.Is(err, portico.ErrKeyUnknown):
		return apikey.Identity{}, err
	}
	return k.id, nil
}

// name is the key's name, for logs.
func (k *wsKey) name() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.id.Name
}

// shareKeyLocked gives s the wsKey of the key's other open sockets, when
// there are some. g.mu is held.
func (g *Gateway) shareKeyLocked(s *socket) {
	if k := g.wsKeyOf[s.key.key]; k != nil {
		k.mu.Lock()
		if s.key.id.Version > k.id.Version {
			k.id = s.key.id
		}
		k.mu.Unlock()
		s.key = k
	} else {
		g.wsKeyOf[s.key.key] = s.key
	}
	s.key.refs++
}

// unshareKeyLocked lets go of s's wsKey once no socket of the key is
// open. g.mu is held.
func (g *Gateway) unshareKeyLocked(s *socket) {
	if s.key.refs--; s.key.refs == 0 {
		delete(g.wsKeyOf, s.key.key)
	}
}

// admits checks what the handshake was checked for against the key's
// settings now: its network, origin and User-Agent lists, and a secret or
// JWT the handshake did not need.
func (s *socket) admits(id apikey.Identity) error {
	if err := allowed(id, s.network, s.origin); err != nil {
		return err
	}
	r := id.Rules
	if r == nil {
		return nil
	}
	if !r.UserAgentAllowed(s.ua) {
		return &portico.ForbiddenError{What: portico.AllowUserAgent, Value: s.ua}
	}
	if len(r.Secrets) > 0 && !s.secret {
		return portico.ErrSecretMissing
	}
	if r.JWT != nil && !s.jwt {
		_, err := r.JWT.Verify("", id.Name, time.Now()) // the "token missing" error
		return err
	}
	return nil
}

// keyNow looks up the socket's key as the store has it now.
func (g *Gateway) keyNow(ctx context.Context, s *socket) (apikey.Identity, error) {
	// A lookup that fails for the store's sake is logged by the sweep,
	// once per key, not here once per message.
	return s.follow(g.keys.Authenticate(ctx, s.key.key))
}

// refusedByKey answers a message the key refuses now, and closes the
// socket once the answer is out: status 1008 (policy violation) with the
// error's message as the reason.
func refusedByKey(ctx context.Context, c *jsonrpc.Conn, err error) []byte {
	e, _, _ := jsonrpc.ErrorFor(err)
	reason := closeReason(e.Message)
	if !jsonrpc.AfterAnswer(ctx, func() { c.CloseAfterQueued(websocket.StatusPolicyViolation, reason) }) {
		c.Close(websocket.StatusPolicyViolation, reason)
	}
	return jsonrpc.AppendError(nil, nil, e)
}

// closeByKey closes a socket its key refuses now, with the reason.
func closeByKey(c *jsonrpc.Conn, err error) {
	e, _, _ := jsonrpc.ErrorFor(err)
	c.Close(websocket.StatusPolicyViolation, closeReason(e.Message))
}

// maxCloseReason is the longest reason a close frame carries (RFC 6455
// 5.5: a control frame's payload is at most 125 bytes, 2 of them the
// code).
const maxCloseReason = 123

// closeReason cuts msg to what a close frame carries, on a character
// boundary.
func closeReason(msg string) string {
	if len(msg) <= maxCloseReason {
		return msg
	}
	msg = msg[:maxCloseReason]
	for len(msg) > 0 && !utf8.ValidString(msg) {
		msg = msg[:len(msg)-1]
	}
	return msg
}

// armSweepLocked starts the check of open sockets against their keys
// when the first one opens. g.mu is held.
func (g *Gateway) armSweepLocked() {
	if g.sweeping || g.closing {
		return
	}
	g.sweeping = true
	if g.sweep == nil {
		g.sweep = time.AfterFunc(g.keyTTL, g.sweepKeys)
		return
	}
	g.sweep.Reset(g.keyTTL)
}

// sweepKeys checks every open socket against its key, one lookup per key
// (through the authenticator's cache, like a message), and closes those
// the key refuses now: a socket that only receives notifications follows
// its key too, within twice store.key_cache_ttl. It runs every keyTTL
// while sockets are open.
func (g *Gateway) sweepKeys() {
	g.mu.Lock()
	if g.closing {
		g.sweeping = false
		g.mu.Unlock()
		return
	}
	g.sweeps.Add(1)
	// Sockets are tracked and share their keys under g.mu: each s.key
	// read here is the shared one.
	byKey := map[*wsKey][]*jsonrpc.Conn{}
	socks, _ := g.conns.Open()
	for c, s := range socks {
		byKey[s.key] = append(byKey[s.key], c)
	}
	g.mu.Unlock()
	defer g.sweeps.Done()
	for k, conns := range byKey {
		ctx, cancel := context.WithTimeout(context.Background(), g.keyTTL)
		id, err := g.keys.Authenticate(ctx, k.key)
		cancel()
		if err != nil && !errors.Is(err, portico.ErrKeyUnknown) {
			g.log.Warn("websocket: key lookup failed; open sockets keep the key as last seen", "key", k.name(), "err", err)
			continue
		}
		for _, c := range conns {
			if _, err := socks[c].follow(id, err); err != nil {
				closeByKey(c, err)
			}
		}
	}
	g.mu.Lock()
	if g.sweeping = g.conns.Len() > 0 && !g.closing; g.sweeping {
		g.sweep.Reset(g.keyTTL)
	}
	g.mu.Unlock()
}
