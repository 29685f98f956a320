package evm

import (
	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/rpcparams"
)

// Log filters are kept by the gateway, not by a node (docs/logs.md): a
// filter made with eth_newFilter is read with eth_getLogs, so its logs are
// bounded, split, priced (and verified) as a query for them would be,
// and a filter made over the whole chain cannot have a node scan it for
// the price of one call. Block and pending-transaction filters stay on
// the node that made them: eth_getFilterChanges and eth_uninstallFilter
// of an id the gateway did not make go to the nodes as before.

// filterRules are the rules of the log filter methods.
func filterRules() []portico.Method {
	return []portico.Method{
		{Name: "eth_newFilter", Params: NewFilterParams},
		{Name: "eth_getFilterLogs", Params: filterID(portico.FilterLogs)},
		{Name: "eth_getFilterChanges", Params: filterID(portico.FilterChanges)},
		{Name: "eth_uninstallFilter", Params: filterID(portico.FilterUninstall)},
	}
}

// logsQuery is the method a filter's logs are read with.
var logsQuery = &portico.Method{Name: "eth_getLogs", Params: GetLogsParams}

// NewFilterParams checks [filter] as eth_getLogs does, and refuses what
// eth_getLogs leaves its nodes to refuse (go-ethereum's words): a blockHash
// with a range, a range whose start is after its end. A filter that ends
// past the head is a filter for logs to come, as on a node.
func NewFilterParams(raw jsontext.Value) (portico.Params, error) {
	p, err := GetLogsParams(raw)
	if err != nil {
		return portico.Params{}, err
	}
	if p.Logs == nil && p.Block.Kind != portico.BlockHash {
		f, _ := rpcparams.Positional(raw, 1, "filter")
		obj, _ := rpcparams.Object(f[0], 1, "filter", logFilterFields...)
		if _, ok := obj["blockHash"]; ok {
			return portico.Params{}, rpcparams.Errorf(1, "filter.blockHash", "can't specify fromBlock/toBlock with blockHash")
		}
		return portico.Params{}, rpcparams.Errorf(1, "filter.fromBlock", "invalid block range params: fromBlock is after toBlock")
	}
	if p.Logs != nil {
		// Created, not run: a future end is no fault of a filter.
		p.Logs.Wrong = nil
	}
	return portico.Params{Send: raw, Logs: p.Logs, Block: p.Block,
		Filter: &portico.LogFilter{Op: portico.FilterNew, Query: logsQuery, Params: raw}}, nil
}

// filterID is the rule of a call that names a filter: [id].
func filterID(op portico.FilterOp) func(jsontext.Value) (portico.Params, error) {
	return func(raw jsontext.Value) (portico.Params, error) {
		p, err := rpcparams.Positional(raw, 1, "filterId")
		if err != nil {
			return portico.Params{}, err
		}
		id, err := rpcparams.String(p[0], 1, "filterId")
		if err != nil {
			return portico.Params{}, err
		}
		return portico.Params{Send: raw, Filter: &portico.LogFilter{Op: op, ID: id}}, nil
	}
}

// wrongRange is go-ethereum's refusal of a log query whose range the
// served chain shows to be wrong (eth/filters: errInvalidBlockRange,
// errBlockRangeIntoFuture), word for word, so that a client (and the
// execution-apis test eth_getLogs/filter-error-future-block-range) gets
// the answer a node would give, byte for byte.
func wrongRange(from, to, head uint64) error {
	switch {
	case from > to:
		return &rangeError{"invalid block range params"}
	case to > head:
		return &rangeError{"block range extends beyond current head block"}
	}
	return nil
}

// rangeError is a wrongRange refusal: invalid params, -32602, as
// go-ethereum answers.
type rangeError struct{ msg string }

func (e *rangeError) Error() string { return e.msg }

// ErrorCode returns -32602, go-ethereum's code for these refusals.
func (e *rangeError) ErrorCode() int { return -32602 }
