package server

import (
	"testing"

	"github.com/porticohq/portico/config"
)

// TestTracingOff: without an endpoint, or with OTEL_SDK_DISABLED, there
// are no traces.
func TestTracingOff(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		cfg  config.Tracing
		env  map[string]string
		want bool
	}{
		{config.Tracing{}, nil, false},
		{config.Tracing{Endpoint: "http://127.0.0.1:4318"}, nil, true},
		{config.Tracing{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{config.Tracing{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{config.Tracing{Endpoint: "http://127.0.0.1:4318"}, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{config.Tracing{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	}
	for _, c := range cases {
		if got := tracingOn(c.cfg, env(c.env)); got != c.want {
			t.Errorf("%+v %v: on=%v, want %v", c.cfg, c.env, got, c.want)
		}
	}
}
