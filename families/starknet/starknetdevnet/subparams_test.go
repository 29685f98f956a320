package starknetdevnet

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico/internal/starknetspec"
)

// TestWSUnsubscribe: true when the subscription ends now, false when this
// connection's id has ended already, INVALID_SUBSCRIPTION_ID for an id the
// connection never had; ids are per connection.
func TestWSUnsubscribe(t *testing.T) {
	spec := loadWSSpec(t)
	d, _ := startDevnet(t, Config{})
	a, b := dialWS(t, d, spec), dialWS(t, d, spec)
	one := a.subscribe("starknet_subscribeNewHeads", "")
	a.expect(notifyNewHeads, one)
	if string(one) != `"1"` {
		t.Fatalf("first id %s", one)
	}
	b.subscribe("starknet_subscribePendingTransactions", "")
	if two := b.subscribe("starknet_subscribePendingTransactions", ""); string(two) != `"2"` {
		t.Fatalf("second id on b: %s", two)
	}
	for _, tc := range []struct {
		w      *wsClient
		params string
		result string
		code   int
	}{
		{a, `{"subscription_id":"1"}`, "true", 0},
		{a, `["1"]`, "false", 0},
		{a, `[1]`, "false", 0}, // the spec types this param as an integer
		{a, `["2"]`, "", 66},   // b's, not a's
		{b, `[2]`, "true", 0},
		{b, `{"subscription_id":"2"}`, "false", 0},
		{b, `["0"]`, "", 66},
		{b, `["01"]`, "", 66},
		{b, `["99"]`, "", 66},
		{b, `["abc"]`, "", 66},
		{b, `[-1]`, "", 66},
		{b, `[18446744073709551616]`, "", 66},
	} {
		res, err := tc.w.call("rollup_unsubscribe", tc.params)
		switch {
		case tc.code != 0 && (err == nil || err.Code != tc.code || err.Message != "Invalid subscription id"):
			t.Errorf("unsubscribe %s: %s %v, want %d", tc.params, res, err, tc.code)
		case tc.code == 0 && (err != nil || string(res) != tc.result):
			t.Errorf("unsubscribe %s: %s %v, want %s", tc.params, res, err, tc.result)
		case tc.code == 0:
			if err := spec.CheckResult("starknet_unsubscribe", res); err != nil {
				t.Errorf("unsubscribe result %s: %v", res, err)
			}
		}
	}
	// The connection's limit refuses the next subscription without using
	// up an id.
	l := dialWS(t, d, spec)
	for range connLimits.MaxSubscriptions {
		l.subscribe("starknet_subscribeTransactionStatus", `["0x1"]`)
	}
	_, err := l.call("starknet_subscribeNewHeads", "")
	if err == nil || err.Code != -32055 || err.Message != "too many subscriptions on this connection: limit is 100" {
		t.Fatalf("subscription 101: %v", err)
	}
	if _, err := l.call("starknet_unsubscribe", `["101"]`); err == nil || err.Code != 66 {
		t.Fatalf("unsubscribe of the refused id: %v", err)
	}
	if res := l.must("starknet_unsubscribe", `["100"]`); string(res) != "true" {
		t.Fatalf("unsubscribe 100: %s", res)
	}
	if id := l.subscribe("starknet_subscribeTransactionStatus", `["0x1"]`); string(id) != `"101"` {
		t.Fatalf("id after a refusal: %s", id)
	}
	// An ended subscription sends nothing more.
	seal(t, d)
	traffic(t, d)
	a.quiet()
	if m := b.next(); m.Method != notifyPendingTx || string(m.Params.SubscriptionID) != `"1"` {
		t.Fatalf("b's first subscription: %s", m.Raw)
	}
}

// TestWSOverHTTP: subscriptions need a connection to notify on.
func TestWSOverHTTP(t *testing.T) {
	_, c := startDevnet(t, Config{})
	for _, m := range []string{"starknet_subscribeNewHeads", "starknet_subscribeEvents", "starknet_subscribePendingTransactions", "rollup_unsubscribe"} {
		params := `[]`
		if m == "rollup_unsubscribe" {
			params = `["1"]`
		}
		_, err := c.call(m, params)
		if err == nil || err.Code != -32601 || err.Message != "notifications not supported: subscribe over a WebSocket" {
			t.Errorf("%s over HTTP: %v", m, err)
		}
	}
	_, err := c.call("starknet_subscribeTransactionStatus", `["0x1"]`)
	if err == nil || err.Code != -32601 {
		t.Errorf("subscribeTransactionStatus over HTTP: %v", err)
	}
}

// TestWSBadParams: a table of params the spec does not allow, with the
// spec's errors or -32602 naming the field.
func TestWSBadParams(t *testing.T) {
	spec := loadWSSpec(t)
	d, _ := startDevnet(t, Config{})
	buildChain(t, d, 1, 1)
	w := dialWS(t, d, spec)
	felt := func(i int) string { return `"0x` + strconv.FormatInt(int64(i+1), 16) + `"` }
	many := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = felt(i)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	const blockWant = `want {"block_hash": felt}, {"block_number": integer} or "latest"`
	cases := []struct {
		name, method, params string
		code                 int
		msg                  string
	}{
		{"heads pending", "starknet_subscribeNewHeads", `{"block_id":"pending"}`, -32602, `invalid params: block_id: ` + blockWant + `, got string "pending"`},
		{"heads l1_accepted", "starknet_subscribeNewHeads", `["l1_accepted"]`, -32602, `invalid params: param 1 (block_id): ` + blockWant + `, got string "l1_accepted"`},
		{"heads number", "starknet_subscribeNewHeads", `[1]`, -32602, `invalid params: param 1 (block_id): ` + blockWant + `, got number 1`},
		{"heads both", "starknet_subscribeNewHeads", `{"block_id":{"block_number":1,"block_hash":"0x1"}}`, -32602, `invalid params: block_id: set exactly one of block_hash and block_number`},
		{"heads future", "starknet_subscribeNewHeads", `{"block_id":{"block_number":2}}`, 24, "Block not found"},
		{"heads unknown hash", "rollup_subscribeNewHeads", `{"block_id":{"block_hash":"0x123"}}`, 24, "Block not found"},
		{"heads too many params", "starknet_subscribeNewHeads", `["latest","latest"]`, -32602, `invalid params: param 2: too many params: want at most 1 [block_id], got 2`},
		{"heads unknown field", "starknet_subscribeNewHeads", `{"block":"latest"}`, -32602, `invalid params: block: unknown field; allowed fields are block_id`},
		{"heads params string", "starknet_subscribeNewHeads", `"latest"`, -32600, ""},
		{"events bad address", "starknet_subscribeEvents", `{"from_address":"0xzz"}`, -32602, `invalid params: from_address: want a felt, 0x and 1 to 64 hex digits below the Stark prime, got string "0xzz"`},
		{"events address list", "starknet_subscribeEvents", `{"from_address":["0x1"]}`, -32602, `invalid params: from_address: want a string, got an array`},
		{"events keys not nested", "starknet_subscribeEvents", `[null,["0x1"]]`, -32602, `invalid params: param 2 (keys[0]): want an array, got string "0x1"`},
		{"events too many positions", "starknet_subscribeEvents", `{"keys":[` + strings.Repeat(`[],`, MaxKeyPositions) + `[]]}`, 34, "Too many keys provided in a filter"},
		{"events too many keys", "rollup_subscribeEvents", `{"keys":[` + many(MaxKeys+1) + `]}`, 34, "Too many keys provided in a filter"},
		{"events pending", "starknet_subscribeEvents", `[null,null,"pending"]`, -32602, `invalid params: param 3 (block_id): ` + blockWant + `, got string "pending"`},
		{"events future", "starknet_subscribeEvents", `{"block_id":{"block_number":9}}`, 24, "Block not found"},
		{"events unknown field", "starknet_subscribeEvents", `{"address":"0x1"}`, -32602, `invalid params: address: unknown field; allowed fields are from_address, keys, block_id`},
		{"status missing", "starknet_subscribeTransactionStatus", `{}`, -32602, `invalid params: transaction_hash: missing; it is required`},
		{"status none", "starknet_subscribeTransactionStatus", ``, -32602, `invalid params: want an object {transaction_hash} or an array, got nothing`},
		{"status empty", "starknet_subscribeTransactionStatus", `[]`, -32602, `invalid params: param 1 (transaction_hash): missing; want 1 to 1 params [transaction_hash], got 0`},
		{"status bad hash", "starknet_subscribeTransactionStatus", `["0x"]`, -32602, `invalid params: param 1 (transaction_hash): want a felt, 0x and 1 to 64 hex digits below the Stark prime, got string "0x"`},
		{"status block_id", "starknet_subscribeTransactionStatus", `{"transaction_hash":"0x1","block_id":"latest"}`, -32602, `invalid params: block_id: unknown field; allowed fields are transaction_hash`},
		{"pending details string", "starknet_subscribePendingTransactions", `{"transaction_details":"yes"}`, -32602, `invalid params: transaction_details: want a boolean, got string "yes"`},
		{"pending sender not a list", "starknet_subscribePendingTransactions", `[true,"0x1"]`, -32602, `invalid params: param 2 (sender_address): want an array, got string "0x1"`},
		{"pending bad sender", "starknet_subscribePendingTransactions", `{"sender_address":["0x1",7]}`, -32602, `invalid params: sender_address[1]: want a string, got number 7`},
		{"pending too many senders", "starknet_subscribePendingTransactions", `{"sender_address":` + many(MaxSenderAddresses+1) + `}`, 67, "Too many addresses in filter sender_address filter"},
		{"unsubscribe missing", "starknet_unsubscribe", `{}`, -32602, `invalid params: subscription_id: missing; it is required`},
		{"unsubscribe bool", "starknet_unsubscribe", `[true]`, -32602, `invalid params: param 1 (subscription_id): want a subscription id (a string, or an integer), got boolean true`},
		{"unsubscribe fraction", "starknet_unsubscribe", `[1.5]`, -32602, `invalid params: param 1 (subscription_id): want a subscription id (a string, or an integer), got number 1.5`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.call(tc.method, tc.params)
			if err == nil || err.Code != tc.code || tc.msg != "" && err.Message != tc.msg {
				t.Fatalf("got %v, want %d %s", err, tc.code, tc.msg)
			}
		})
	}
	// The sender limit itself is allowed.
	w.subscribe("starknet_subscribePendingTransactions", `{"sender_address":`+many(MaxSenderAddresses)+`}`)
	w.quiet()
}

// TestWSSchemaRejects makes sure the WebSocket schema checks can fail, and
// that the two wrapped schemas of spec 0.8.1 are the ones unwrapped.
func TestWSSchemaRejects(t *testing.T) {
	spec := loadWSSpec(t)
	if got := spec.Unwrapped(starknetspec.APIFile); !slices.Equal(got, []string{"TXN_WITH_HASH"}) {
		t.Errorf("unwrapped in %s: %v", specFile, got)
	}
	if got := spec.Unwrapped(starknetspec.WSFile); !slices.Equal(got, []string{"SUBSCRIPTION_ID"}) {
		t.Errorf("unwrapped in %s: %v", starknetspec.WSFile, got)
	}
	for _, tc := range []struct{ method, id, result string }{
		{notifyNewHeads, `"1"`, `{"block_hash":"0x1"}`},
		{notifyNewHeads, `1`, `{"block_hash":"0x1","parent_hash":"0x1","block_number":1,"new_root":"0x1","timestamp":1,"sequencer_address":"0x1","l1_gas_price":{"price_in_fri":"0x1","price_in_wei":"0x1"},"l2_gas_price":{"price_in_fri":"0x1","price_in_wei":"0x1"},"l1_data_gas_price":{"price_in_fri":"0x1","price_in_wei":"0x1"},"l1_da_mode":"BLOB","starknet_version":"0.13.4"}`},
		{notifyEvents, `"1"`, `{"from_address":"0x1","keys":[],"data":[]}`},
		{notifyTxStatus, `"1"`, `{"transaction_hash":"0x1","status":{"finality_status":"PENDING"}}`},
		{notifyPendingTx, `"1"`, `7`},
		{notifyPendingTx, `"1"`, `{"transaction_hash":"0x1","type":"INVOKE"}`},
		{notifyReorg, `"1"`, `{"starting_block_hash":"0x1","starting_block_number":1,"ending_block_hash":"0x2"}`},
	} {
		if err := spec.CheckNotification(tc.method, []byte(tc.id), []byte(tc.result)); err == nil {
			t.Errorf("%s accepted id %s result %s", tc.method, tc.id, tc.result)
		}
	}
}

func FuzzDecodeSubscriptionParams(f *testing.F) {
	for _, s := range []string{
		`{"block_id":{"block_number":3}}`,
		`["latest"]`,
		`{"from_address":"0x1","keys":[["0x2"],[]],"block_id":{"block_hash":"0x3"}}`,
		`[null,[[],["0x1"]],null]`,
		`{"transaction_hash":"0x1"}`,
		`{"transaction_details":true,"sender_address":["0x1"]}`,
		`["7"]`,
		`[7]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !jsontext.Value(s).IsValid() {
			return
		}
		raw := jsontext.Value(s)
		errs := []error{}
		_, err := decodeNewHeadsParams(raw)
		errs = append(errs, err)
		flt, from, err := decodeSubscribeEventsParams(raw)
		errs = append(errs, err)
		if err == nil {
			if len(flt.keys) > MaxKeyPositions || len(flt.addresses) > 1 {
				t.Fatalf("accepted out-of-range filter %+v", flt)
			}
			if from != nil && from.tag != "" && from.tag != "latest" {
				t.Fatalf("accepted start %+v", from)
			}
		}
		_, err = decodeTxStatusParams(raw)
		errs = append(errs, err)
		p, err := decodePendingTxParams(raw)
		errs = append(errs, err)
		if err == nil && len(p.senders) > MaxSenderAddresses {
			t.Fatalf("accepted %d senders", len(p.senders))
		}
		_, err = decodeUnsubscribeParams(raw)
		errs = append(errs, err)
		for _, err := range errs {
			var coded interface{ ErrorCode() int }
			if err != nil && !asCoded(err, &coded) {
				t.Fatalf("error without a code: %v", err)
			}
		}
	})
}
