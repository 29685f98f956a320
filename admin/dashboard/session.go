package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"sync"
	"time"
)

// cookieName is the session cookie. It cannot take the __Host- prefix,
// which requires Secure, because the shared listener usually speaks plain
// HTTP on loopback.
const cookieName = "portico_dashboard"

// session is one sign-in.
type session struct {
	// csrf must come with every request that changes something.
	csrf    string
	expires time.Time
}

// sessions holds the sign-ins, by the SHA-256 of their id so that the
// map's key comparisons say nothing about ids a client guesses.
type sessions struct {
	mu  sync.Mutex
	m   map[[sha256.Size]byte]session
	max int
	ttl time.Duration
}

func newSessions(max int, ttl time.Duration) *sessions {
	return &sessions{m: map[[sha256.Size]byte]session{}, max: max, ttl: ttl}
}

// create starts a session at now and returns its id, the cookie's value.
// When max sessions are held, the oldest ends.
func (s *sessions) create(now time.Time) (string, session) {
	id := rand.Text()
	ses := session{csrf: rand.Text(), expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.m {
		if !now.Before(v.expires) {
			delete(s.m, k)
		}
	}
	if len(s.m) >= s.max {
		var oldest [sha256.Size]byte
		var first time.Time
		for k, v := range s.m {
			if first.IsZero() || v.expires.Before(first) {
				oldest, first = k, v.expires
			}
		}
		delete(s.m, oldest)
	}
	s.m[sha256.Sum256([]byte(id))] = ses
	return id, ses
}

// get returns the live session with id; an expired one is dropped.
func (s *sessions) get(id string, now time.Time) (session, bool) {
	if id == "" {
		return session{}, false
	}
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.m[k]
	if ok && !now.Before(ses.expires) {
		delete(s.m, k)
		return session{}, false
	}
	return ses, ok
}

// end drops the session with id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, sha256.Sum256([]byte(id)))
}

// len is the number of sessions held, expired ones included until the
// next sign-in sweeps them.
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// validCSRF reports whether got is the session's CSRF token.
func (ses session) validCSRF(got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(ses.csrf)) == 1
}

// cookieValue is the session cookie's value in r, or "".
func cookieValue(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	return c.Value
}

// sessionCookie is the cookie that holds id for maxAge seconds; a
// negative maxAge deletes it.
func sessionCookie(r *http.Request, id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: cookieName, Value: id, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: overTLS(r), SameSite: http.SameSiteStrictMode}
}

// overTLS reports whether the browser reached us over TLS: directly, or
// through a proxy that says so. A client that lies only makes its own
// cookie unusable over plain HTTP.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}
