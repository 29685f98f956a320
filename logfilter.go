package portico

import "github.com/go-json-experiment/json/jsontext"

// FilterOp is what a call does with a log filter the gateway keeps itself
// (the EVM's eth_newFilter and the calls that name its id), so that a
// filter's logs are read, bounded and priced as the family's log query
// reads them (docs/logs.md).
type FilterOp uint8

// The calls about a log filter.
const (
	// FilterNone: the call is not about a log filter.
	FilterNone FilterOp = iota
	// FilterNew makes a log filter of the call's query.
	FilterNew
	// FilterLogs answers every log the filter matches now.
	FilterLogs
	// FilterChanges answers the logs of the blocks the served chain added
	// since the filter was made or last polled.
	FilterChanges
	// FilterUninstall forgets the filter.
	FilterUninstall
)

// LogFilter is what a params rule learned of a call about a log filter.
type LogFilter struct {
	Op FilterOp
	// ID names the filter, for every op but FilterNew.
	ID string
	// Query and Params, for FilterNew, are the family's log query method
	// (eth_getLogs) and the params that ask it for the filter's logs; the
	// call's Params.Logs describes the same query, for its bounds.
	Query  *Method
	Params jsontext.Value
}
