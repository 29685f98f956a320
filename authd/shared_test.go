package authd

import (
	"errors"
	"testing"
	"time"

	"github.com/porticohq/portico/authd/sessionserver"
	"github.com/porticohq/portico/internal/testsvc"
)

// TestRedisLimitsAcrossServers: two auth servers with Config.Redis count
// one client's session reads together, as one server would.
func TestRedisLimitsAcrossServers(t *testing.T) {
	url, prefix := testsvc.Redis(t)
	var urls []string
	for range 2 {
		_, u := serve(t, Config{Networks: []string{"sapphire_devnet"}, Redis: url, RedisPrefix: prefix,
			SessionLimits: sessionserver.Limits{Reads: 3, Window: time.Minute}})
		urls = append(urls, u)
	}
	for i := range 3 {
		if status, body := get(t, urls[i%2]+"/store/get?key=nothing"); status == 429 {
			t.Fatalf("read %d: %d %s", i+1, status, body)
		}
	}
	for i, u := range urls {
		if status, body := get(t, u+"/store/get?key=nothing"); status != 429 {
			t.Fatalf("server %d: a fourth read of 3 over two servers: %d %s", i, status, body)
		}
	}
}

// TestRedisConfigErrors: a bad Redis URL names the field.
func TestRedisConfigErrors(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:6379", "redis://127.0.0.1:1/0"} {
		_, err := New(t.Context(), Config{PublicURL: "http://127.0.0.1:1", Networks: []string{"sapphire_devnet"}, Redis: u})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "Redis" {
			t.Fatalf("%s: %v", u, err)
		}
	}
}
