package admin_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/porticohq/portico/admin"
	"github.com/porticohq/portico/admin/admintoken"
	"github.com/porticohq/portico/store"
)

// clock is a fake clock; Sleep moves it on at once.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return nil
}

// The attack of issue 23: 24,042 wrong bearer tokens in 10 s, all
// answered at once. Now 1,000 wrong tokens from one address are slowed
// (8 answered in the first 10 s, then one every 30 s), and the right token
// from the same address still gets in, held at most 30 s. A request with
// no bearer token guesses nothing and is answered at once.
func TestWrongTokensSlowed(t *testing.T) {
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "portico.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	c := &clock{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	tokens, err := admintoken.New(admintoken.Config{Token: token, Now: c.Now, Sleep: c.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	api, err := admin.New(admin.Config{Tokens: tokens, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	send := func(auth string) int {
		r := httptest.NewRequest("GET", "/admin/v1/keys", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		r.RemoteAddr = "203.0.113.9:41000"
		w := httptest.NewRecorder()
		api.ServeHTTP(w, r)
		return w.Code
	}
	start := c.Now()
	in10s := 0
	for i := range 1000 {
		if code := send(fmt.Sprintf("Bearer wrong-%04d-%s", i, token)); code != 401 {
			t.Fatalf("wrong token %d: %d", i, code)
		}
		if c.Now().Sub(start) <= 10*time.Second {
			in10s++
		}
	}
	if in10s > 8 {
		t.Errorf("%d wrong tokens answered in the first 10 s, want at most 8", in10s)
	}
	if took := c.Now().Sub(start); took < 8*time.Hour {
		t.Errorf("1,000 wrong tokens answered in %v", took)
	}
	for range 20 {
		before := c.Now()
		if code := send(""); code != 401 || c.Now() != before {
			t.Fatalf("no bearer token: %d after %v", code, c.Now().Sub(before))
		}
	}
	before := c.Now()
	if code := send("Bearer " + token); code != 200 {
		t.Fatalf("the right token from the guessing address: %d, want 200", code)
	}
	if held := c.Now().Sub(before); held <= 0 || held > 30*time.Second {
		t.Errorf("the right token was held %v, want some, at most 30s", held)
	}
	if api.Tokens() != tokens {
		t.Error("Tokens is not the Checker given")
	}
}
