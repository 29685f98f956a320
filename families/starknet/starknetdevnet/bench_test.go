package starknetdevnet

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

// BenchmarkGetEvents pages over 1,000,000 seeded events (1,000 blocks of
// 1,000) with chunk_size 1000 through real HTTP. "selective" filters on
// the rare selector (1% of events, read through the first-key index);
// "selective-and-address" adds an emitter (0.25%); "all" has no filter.
// Each op fetches one page and follows its token, wrapping at the end.
func BenchmarkGetEvents(b *testing.B) {
	d, c := startDevnet(b, Config{})
	start := time.Now()
	if err := d.SeedEvents(context.Background(), 1000, 1000, 1); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded 1,000,000 events in %v", time.Since(start))
	for _, bc := range []struct{ name, filter string }{
		{"selective", `"keys":[["` + starknettx.Hex(&selRare) + `"]],`},
		{"selective-and-address", `"address":"` + starknettx.Hex(&tokenAddress) + `","keys":[["` + starknettx.Hex(&selRare) + `"]],`},
		{"all", ``},
	} {
		b.Run(bc.name, func(b *testing.B) {
			token, events := "", 0
			for b.Loop() {
				f := bc.filter + `"chunk_size":1000`
				if token != "" {
					f += `,"continuation_token":"` + token + `"`
				}
				res := c.must("starknet_getEvents", `{"filter":{`+f+`}}`)
				var ch struct {
					Events []json.RawMessage `json:"events"`
					Token  *string           `json:"continuation_token"`
				}
				if err := json.Unmarshal(res, &ch); err != nil {
					b.Fatal(err)
				}
				events += len(ch.Events)
				token = ""
				if ch.Token != nil {
					token = *ch.Token
				}
			}
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
		})
	}
}
