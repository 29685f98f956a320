package upstream_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
	"github.com/porticohq/portico/network/upstream"
)

// TestInProcess calls an in-process handler the way the gateway calls an
// embedded devnet, including the ways it can fail.
func TestInProcess(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json":
			http.Error(w, "bad request", http.StatusBadRequest)
		case strings.Contains(string(body), `"ok"`):
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"echo":` + string(body) + `}}`))
		case strings.Contains(string(body), `"fail"`):
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"header not found"}}`))
		case strings.Contains(string(body), `"busy"`):
			w.WriteHeader(http.StatusServiceUnavailable)
		case strings.Contains(string(body), `"panic"`):
			panic("boom")
		case strings.Contains(string(body), `"hang"`):
			time.Sleep(2 * time.Second) // ignores its context
		case strings.Contains(string(body), `"big"`):
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("x", 2048) + `"}`))
		case strings.Contains(string(body), `"junk"`):
			w.Write([]byte(`<html>`))
		}
	})
	node := upstream.NewInProcess(h, &upstream.Options{MaxResponseBytes: 1024})

	ctx := context.Background()
	res, err := node.Call(ctx, "ok", []byte(`[1]`), nil)
	if err != nil || string(res) != `{"echo":{"jsonrpc":"2.0","id":1,"method":"ok","params":[1]}}` {
		t.Fatalf("ok: %s, %v", res, err)
	}
	// The result lands after what the caller's buffer holds.
	res, err = node.Call(ctx, "ok", []byte(`[2]`), []byte(`{"id":7,"result":`))
	if err != nil || string(res) != `{"id":7,"result":{"echo":{"jsonrpc":"2.0","id":1,"method":"ok","params":[2]}}` {
		t.Fatalf("ok into a buffer: %s, %v", res, err)
	}
	var rpcErr *jsonrpc.Error
	if _, err := node.Call(ctx, "fail", nil, nil); !errors.As(err, &rpcErr) || rpcErr.Code != -32000 || rpcErr.Message != "header not found" {
		t.Fatalf("fail: %v", err)
	}
	for _, m := range []string{"busy", "panic", "junk"} {
		if _, err := node.Call(ctx, m, nil, nil); !errors.Is(err, portico.ErrUpstreamUnavailable) {
			t.Errorf("%s: got %v, want an unavailable node", m, err)
		}
	}
	// A result past the node's bound is this process's limit, not the
	// node's failure.
	var limErr *portico.LimitError
	if _, err := node.Call(ctx, "big", nil, nil); !errors.As(err, &limErr) || limErr.Limit != portico.LimitResult || limErr.Max != 1024 {
		t.Errorf("big: got %v, want the result limit of 1024 bytes", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := node.Call(dctx, "hang", nil, nil); !errors.Is(err, portico.ErrUpstreamTimeout) {
		t.Errorf("hang: got %v, want a timeout", err)
	}
}
