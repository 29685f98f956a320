package sessionserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/porticohq/portico/auth/sessionapi"
)

// inProcessURL is the base URL of an in-process client. The host is never
// resolved (the transport calls the handler); .invalid (RFC 2606) makes
// sure it could not reach anything if it were.
const inProcessURL = "http://sessionserver.invalid/"

// Client returns a client that calls this server in-process, with no
// listener and no network hop: the same handler, checks and limits as over
// HTTP. The auth server's login pages use it to reach the session server
// they are served beside, so the pages need not know where it listens.
func (s *Server) Client() *sessionapi.Client {
	return &sessionapi.Client{BaseURL: inProcessURL, HTTP: &http.Client{Transport: handlerTransport{s.Handler()}}}
}

// inProcessKey marks the context of a request made through Client: the
// server's own, which no client limit applies to.
type inProcessKey struct{}

// handlerTransport is an http.RoundTripper that answers each request with
// a handler in this process.
type handlerTransport struct{ h http.Handler }

// RoundTrip serves req with the handler and returns what it wrote.
func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// A handler sees a server request: a body that is never nil and the
	// request URI; the client's request itself stays untouched.
	sreq := req.Clone(context.WithValue(req.Context(), inProcessKey{}, true))
	if sreq.Body == nil {
		sreq.Body = http.NoBody
	}
	sreq.RequestURI = req.URL.RequestURI()
	rec := &recorder{header: http.Header{}}
	t.h.ServeHTTP(rec, sreq)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", rec.status, http.StatusText(rec.status)),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()),
		Request:       req,
	}, nil
}

// recorder is the http.ResponseWriter of an in-process request.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
