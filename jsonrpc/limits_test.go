package jsonrpc_test

import (
	"testing"
	"time"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/jsonrpc"
)

// TestDefaultLimitsAreTheConfigs: a Server's and a connection's defaults
// are the config's defaults (portico.DefaultLimits) mapped once, and the
// connection's own bounds are as they were.
func TestDefaultLimitsAreTheConfigs(t *testing.T) {
	c := jsonrpc.DefaultConnLimits()
	want := jsonrpc.ConnLimits{MaxMessageBytes: 5 << 20, MaxInFlight: 64, PauseQueueBytes: 4 << 20, MaxQueue: 1024, MaxQueueBytes: 16 << 20,
		IdleTimeout: 10 * time.Minute, PingInterval: 30 * time.Second, WriteTimeout: 10 * time.Second, CloseTimeout: 30 * time.Second,
		MaxSubscriptions: 100}
	if c != want {
		t.Errorf("DefaultConnLimits() = %+v, want %+v", c, want)
	}
	l := jsonrpc.DefaultLimits()
	if l.MaxBodyBytes != 5<<20 || l.MaxBatch != 100 || l.MaxConnections != 1024 || l.Conn != want {
		t.Errorf("DefaultLimits() = %+v", l)
	}
	p := portico.DefaultLimits()
	p.MaxBatch, p.MaxWSMessageBytes, p.MaxSubscriptionsPerConnection = 7, 1<<10, 3
	if got := jsonrpc.LimitsOf(p); got.MaxBatch != 7 || got.Conn.MaxMessageBytes != 1<<10 || got.Conn.MaxSubscriptions != 3 {
		t.Errorf("LimitsOf does not follow the config's limits: %+v", got)
	}
}
