package server

import (
	"bytes"
	"strings"
	"sync/atomic"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/porticohq/portico/admin"
	"github.com/porticohq/portico/admin/dashboard"
)

// withDashboard serves the dashboard at /dashboard/ on the shared
// listener in front of next. api is the admin API, which the dashboard
// calls in-process for everything it shows and changes. The returned
// links must be published once the networks' listeners are bound.
// The two check the token with one Checker, so wrong tokens sent to
// either are slowed together.
func (m *Server) withDashboard(next fasthttp.RequestHandler, api *admin.API) (fasthttp.RequestHandler, *dashboardLinks, error) {
	links := &dashboardLinks{}
	d, err := dashboard.New(dashboard.Config{Admin: api, Token: m.Config.Admin.Token, Tokens: api.Tokens(), Networks: links.get, Logger: m.log})
	if err != nil {
		return nil, nil, err
	}
	// Like the admin API, the dashboard is low-traffic net/http code.
	h := fasthttpadaptor.NewFastHTTPHandler(d)
	prefix := []byte(strings.TrimSuffix(dashboard.Prefix, "/"))
	return func(ctx *fasthttp.RequestCtx) {
		if p := ctx.Path(); bytes.HasPrefix(p, prefix) && (len(p) == len(prefix) || p[len(prefix)] == '/') {
			h(ctx)
			return
		}
		next(ctx)
	}, links, nil
}

// dashboardLinks are the networks' endpoint URL bases that the dashboard
// shows with a new key. The shared listener serves before the networks'
// own listeners are bound, so they are published afterwards.
type dashboardLinks struct {
	nets atomic.Pointer[[]dashboard.Network]
}

func (l *dashboardLinks) get() []dashboard.Network {
	if p := l.nets.Load(); p != nil {
		return *p
	}
	return nil
}

// publish sets the links from the networks' endpoints, as the ready
// lines print them. A nil l (no dashboard) does nothing.
func (l *dashboardLinks) publish(shared string, eps []Endpoint) {
	if l == nil {
		return
	}
	nets := make([]dashboard.Network, 0, len(eps))
	for _, ep := range eps {
		base := ep.base(shared)
		nets = append(nets, dashboard.Network{Name: ep.Name, Family: string(ep.Family), HTTP: base, WS: "ws" + strings.TrimPrefix(base, "http")})
	}
	l.nets.Store(&nets)
}
