package auth

import (
	"net/url"
	"strings"
)

// SDKURLFor returns the login pages' base URL for a build environment, as
// the v7 Swift SDK (7.4.0 and later) chooses it. The network plays no part.
func SDKURLFor(env BuildEnv) string {
	switch env {
	case Staging:
		return "https://staging-auth.web3auth.io/v6"
	case Testing:
		return "https://develop-auth.web3auth.io"
	default:
		return "https://auth.web3auth.io/v6"
	}
}

// DefaultSessionServerURL is the session server the v7 Swift SDK's
// session manager (3.x) talks to when no other is configured.
const DefaultSessionServerURL = "https://broadcast-server.tor.us/"

// Endpoints are the two servers a login uses.
type Endpoints struct {
	// SDKURL is the login pages' base URL; the login starts at SDKURL + "/start".
	SDKURL string
	// SessionServerURL is the session server's base URL, ending in "/".
	SessionServerURL string
}

// ResolveEndpoints picks the endpoints for p: SDKURL from p.SDKURL, else
// from p.BuildEnv. The session server is sessionServer if set; otherwise,
// with a custom SDKURL, the same origin (portico auth serve serves the
// pages and the session server together); otherwise DefaultSessionServerURL.
func ResolveEndpoints(p InitParams, sessionServer string) Endpoints {
	e := Endpoints{SDKURL: strings.TrimRight(p.SDKURL, "/"), SessionServerURL: sessionServer}
	if e.SDKURL == "" {
		e.SDKURL = SDKURLFor(p.BuildEnv)
	}
	if e.SessionServerURL == "" {
		e.SessionServerURL = DefaultSessionServerURL
		if p.SDKURL != "" {
			if u, err := url.Parse(p.SDKURL); err == nil {
				e.SessionServerURL = u.Scheme + "://" + u.Host + "/"
			}
		}
	}
	if !strings.HasSuffix(e.SessionServerURL, "/") {
		e.SessionServerURL += "/"
	}
	return e
}
