package jsonrpc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// testHandler answers the methods of the wire scripts.
func testHandler(ctx context.Context, method string, params jsontext.Value) (any, error) {
	switch method {
	case "echo":
		if params == nil {
			return jsontext.Value("null"), nil
		}
		return params, nil
	case "struct":
		return struct {
			C []bool         `json:"c"`
			A int            `json:"a"`
			B string         `json:"b"`
			M map[string]int `json:"m"`
		}{[]bool{true}, 1, "x", map[string]int{"c": 3, "b": 2, "a": 1}}, nil
	case "params":
		return nil, &portico.ParamsError{Position: 1, Field: "x", Reason: "want a number, got nothing"}
	case "data":
		return nil, &jsonrpc.Error{Code: -32015, Message: "node says no", Data: jsontext.Value(`{"why":"because"}`)}
	case "fail":
		return nil, errors.New("a cause that must not reach the client")
	case "panic":
		panic("boom")
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method " + method + " not found"}
}

// TestServerHTTP runs testdata/server/http.txt: each request body posted
// to a Server, and the status and body it answers.
func TestServerHTTP(t *testing.T) {
	f, err := os.Open("testdata/server/http.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		limits      jsonrpc.Limits
		header      = map[string]string{}
		method      = http.MethodPost
		req         string
		line, cases int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case text == "" || strings.HasPrefix(text, "#"):
		case strings.HasPrefix(text, "@limit "):
			var name string
			var n int64
			fmt.Sscan(strings.TrimPrefix(text, "@limit "), &name, &n)
			switch name {
			case "batch":
				limits.MaxBatch = int(n)
			case "body":
				limits.MaxBodyBytes = n
			}
		case strings.HasPrefix(text, "@header "):
			k, v, _ := strings.Cut(strings.TrimPrefix(text, "@header "), " ")
			header[k] = v
		case strings.HasPrefix(text, "@method "):
			method = strings.TrimPrefix(text, "@method ")
		case strings.HasPrefix(text, "--> "):
			req = strings.TrimPrefix(text, "--> ")
		case strings.HasPrefix(text, "<-- "):
			cases++
			want := strings.TrimPrefix(text, "<-- ")
			wantStatus, wantBody, _ := strings.Cut(want, " ")
			srv := jsonrpc.NewServer(jsonrpc.HandlerFunc(testHandler), jsonrpc.ServerOptions{Limits: limits})
			r := httptest.NewRequest(method, "/", strings.NewReader(req))
			r.Header.Set("Content-Type", "application/json")
			for k, v := range header {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			if got := strconv.Itoa(w.Code); got != wantStatus || w.Body.String() != wantBody {
				t.Errorf("line %d: %s\n got %s %s\nwant %s %s", line, req, got, w.Body.String(), wantStatus, wantBody)
			}
			if wantBody != "" && w.Header().Get("Content-Type") != "application/json" {
				t.Errorf("line %d: Content-Type %q", line, w.Header().Get("Content-Type"))
			}
			limits, header, method = jsonrpc.Limits{}, map[string]string{}, http.MethodPost
		default:
			t.Fatalf("line %d: cannot read %q", line, text)
		}
	}
	if cases < 20 {
		t.Fatalf("only %d cases read", cases)
	}
}
