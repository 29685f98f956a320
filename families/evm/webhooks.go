package evm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/porticohq/portico"
)

// Webhooks is the EVM family's part of webhooks (issue 38): newHeads and
// logs read through eth_subscribe, resumed with resumeFrom; an address's
// activity (the transactions from or to it and its logs) read per head
// with eth_getBlockByHash and eth_getLogs.
type Webhooks struct{}

var _ portico.Webhooks = Webhooks{}

var addressForm = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)

// addressFilter is the filter of an address event.
type addressFilter struct {
	Address string `json:"address"`
}

// Check checks an event's filter: none for newHeads, a logs filter for
// logs, {"address": "0x…"} for address.
func (Webhooks) Check(event string, filter json.RawMessage) error {
	switch event {
	case "newHeads":
		if len(filter) > 0 && string(filter) != "null" && string(filter) != "{}" {
			return errors.New("newHeads takes no filter")
		}
	case "logs":
		if len(filter) == 0 {
			return nil
		}
		params, _ := json.Marshal([]json.RawMessage{json.RawMessage(`"logs"`), filter})
		if _, err := SubscribeParams(params); err != nil {
			return err
		}
	case "address":
		var f addressFilter
		if err := json.Unmarshal(filter, &f); err != nil || !addressForm.MatchString(f.Address) {
			return errors.New(`address wants {"address": "0x" and 40 hex digits}`)
		}
	default:
		return fmt.Errorf("the EVM family has no %q event", event)
	}
	return nil
}

// Subscribe returns the eth_subscribe call of event: newHeads with
// {"resumeFrom": hash} as its second param, logs with resumeFrom in the
// filter; address follows newHeads.
func (Webhooks) Subscribe(event string, filter json.RawMessage, resumeFrom string) ([]byte, bool, error) {
	var params []any
	switch event {
	case "newHeads", "address":
		params = []any{"newHeads"}
		if resumeFrom != "" {
			params = append(params, map[string]string{"resumeFrom": resumeFrom})
		}
	case "logs":
		f := map[string]json.RawMessage{}
		if len(filter) > 0 && string(filter) != "null" {
			if err := json.Unmarshal(filter, &f); err != nil {
				return nil, false, err
			}
		}
		if resumeFrom != "" {
			f["resumeFrom"], _ = json.Marshal(resumeFrom)
		}
		params = []any{"logs", f}
	default:
		return nil, false, fmt.Errorf("the EVM family has no %q event", event)
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "eth_subscribe", "params": params})
	return body, event != "logs", err
}

// wireHead is what a webhook reads of a header.
type wireHead struct {
	Number     string `json:"number"`
	Hash       string `json:"hash"`
	ParentHash string `json:"parentHash"`
}

// wireLog is what a webhook reads of a log.
type wireLog struct {
	BlockNumber string `json:"blockNumber"`
	BlockHash   string `json:"blockHash"`
	LogIndex    string `json:"logIndex"`
	Removed     bool   `json:"removed"`
}

// hexNumber reads a hex quantity.
func hexNumber(s string) (int64, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 63)
	return int64(n), err
}

// Read turns a notification into the webhook's events.
func (Webhooks) Read(ctx context.Context, call portico.WebhookCaller, event string, filter, result json.RawMessage) ([]portico.WebhookEvent, error) {
	switch event {
	case "logs":
		var l wireLog
		if err := json.Unmarshal(result, &l); err != nil {
			return nil, fmt.Errorf("evm webhook: log: %w", err)
		}
		n, err := hexNumber(l.BlockNumber)
		if err != nil {
			return nil, fmt.Errorf("evm webhook: log blockNumber: %w", err)
		}
		return []portico.WebhookEvent{{Number: n, Hash: l.BlockHash, Removed: l.Removed, Item: l.LogIndex, Data: result}}, nil
	}
	var h wireHead
	if err := json.Unmarshal(result, &h); err != nil {
		return nil, fmt.Errorf("evm webhook: head: %w", err)
	}
	n, err := hexNumber(h.Number)
	if err != nil {
		return nil, fmt.Errorf("evm webhook: head number: %w", err)
	}
	ev := portico.WebhookEvent{Number: n, Hash: h.Hash, ParentHash: h.ParentHash, Data: result}
	if event == "address" {
		var f addressFilter
		if err := json.Unmarshal(filter, &f); err != nil {
			return nil, err
		}
		if ev.Data, err = addressActivity(ctx, call, h.Hash, strings.ToLower(f.Address)); err != nil {
			return nil, err
		}
		ev.Quiet = ev.Data == nil
	}
	return []portico.WebhookEvent{ev}, nil
}

// addressActivity is the transactions of block hash from or to address
// and the logs address emitted in it: {"transactions": […], "logs": […]},
// nil when there are none.
func addressActivity(ctx context.Context, call portico.WebhookCaller, hash, address string) (json.RawMessage, error) {
	var block struct {
		Transactions []json.RawMessage `json:"transactions"`
	}
	if err := callInto(ctx, call, "eth_getBlockByHash", []any{hash, true}, &block); err != nil {
		return nil, err
	}
	txs := []json.RawMessage{}
	for _, raw := range block.Transactions {
		var tx struct {
			From string  `json:"from"`
			To   *string `json:"to"`
		}
		if json.Unmarshal(raw, &tx) != nil {
			continue
		}
		if strings.EqualFold(tx.From, address) || (tx.To != nil && strings.EqualFold(*tx.To, address)) {
			txs = append(txs, raw)
		}
	}
	logs := []json.RawMessage{}
	if err := callInto(ctx, call, "eth_getLogs", []any{map[string]string{"blockHash": hash, "address": address}}, &logs); err != nil {
		return nil, err
	}
	if len(txs) == 0 && len(logs) == 0 {
		return nil, nil
	}
	return json.Marshal(map[string]any{"transactions": txs, "logs": logs})
}

// callInto makes one call through call and decodes its result into dst.
func callInto(ctx context.Context, call portico.WebhookCaller, method string, params []any, dst any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	out, err := call(ctx, body)
	if err != nil {
		return err
	}
	var ans struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out, &ans); err != nil {
		return fmt.Errorf("evm webhook: %s: %w", method, err)
	}
	if ans.Error != nil {
		return fmt.Errorf("evm webhook: %s: %d %s", method, ans.Error.Code, ans.Error.Message)
	}
	if string(ans.Result) == "null" {
		return fmt.Errorf("evm webhook: %s: no such block", method)
	}
	return json.Unmarshal(ans.Result, dst)
}
