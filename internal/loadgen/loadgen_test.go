package loadgen_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/porticohq/portico/internal/loadgen"
)

func TestRunCountsRequestsAndErrors(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%4 == 0 {
			w.Write([]byte(`{"error":{}}`))
			return
		}
		w.Write([]byte(`{"result":1}`))
	}))
	defer srv.Close()
	res, err := loadgen.Run(context.Background(), loadgen.Config{
		URL: srv.URL, Body: []byte(`{}`), Concurrency: 2, Duration: 200 * time.Millisecond,
		Check: func(_ int, b []byte) bool { return string(b) == `{"result":1}` },
	})
	if err != nil {
		t.Fatal(err)
	}
	served := int(n.Load())
	// Requests cut off at the end of the run are not counted.
	if res.Requests == 0 || res.Requests > served || res.Errors == 0 || res.Errors > res.Requests/2 {
		t.Fatalf("result %+v, served %d", res, served)
	}
	if res.P50 <= 0 || res.P99 < res.P50 {
		t.Fatalf("percentiles %+v", res)
	}
}

func TestRunCountsTimeoutsApart(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 == 0 {
			select { // a node that never answers, until the client leaves
			case <-r.Context().Done():
			case <-time.After(time.Second):
			}
			return
		}
		w.Write([]byte(`{"result":1}`))
	}))
	defer srv.Close()
	res, err := loadgen.Run(context.Background(), loadgen.Config{
		URL: srv.URL, Body: []byte(`{}`), Concurrency: 2, Duration: 300 * time.Millisecond,
		Timeout: 20 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Timeouts == 0 || res.Errors != 0 || res.Requests != res.Timeouts+int(res.RPS*res.Elapsed.Seconds()+0.5) {
		t.Fatalf("result %+v", res)
	}
	if res.P99 >= 20*time.Millisecond {
		t.Fatalf("a timed-out request counted as a sample: %+v", res)
	}
}
