package admin

import (
	"cmp"
	"slices"

	"github.com/porticohq/portico/store"
)

// The values of the usage endpoint's group parameter.
const (
	groupKey    = "key"    // one row per day and key, methods summed
	groupMethod = "method" // one row per day and method, keys summed
)

// groupUsage sums rows per day and key or per day and method, ordered by
// day and then name. A chart of the last 30 days needs only these sums,
// and with many keys and methods they are far fewer rows than the
// day × key × method table.
func groupUsage(rows []store.Usage, by string) []UsageJSON {
	type slot struct {
		day   string
		keyID int64
		name  string
	}
	sums := map[slot]*UsageJSON{}
	for _, u := range rows {
		s, row := slot{day: u.Day, keyID: u.KeyID}, UsageJSON{Day: u.Day, Key: u.KeyName}
		if by == groupMethod {
			s, row = slot{day: u.Day, name: u.Method}, UsageJSON{Day: u.Day, Method: u.Method}
		}
		sum := sums[s]
		if sum == nil {
			sum = &row
			sums[s] = sum
		}
		sum.Calls += u.Calls
		sum.Credits += u.Credits
	}
	out := make([]UsageJSON, 0, len(sums))
	for _, u := range sums {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b UsageJSON) int {
		return cmp.Or(cmp.Compare(a.Day, b.Day), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Method, b.Method))
	})
	return out
}
