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
