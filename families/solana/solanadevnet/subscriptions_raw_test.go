package solanadevnet

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/gagliardetto/solana-go/rpc/jsonrpc"

	portico "github.com/porticohq/portico/jsonrpc"
)

// jsonrpcDefaultMaxSubscriptions is the core's per-connection limit, which
// the devnet's server keeps.
func jsonrpcDefaultMaxSubscriptions() int { return portico.DefaultConnLimits().MaxSubscriptions }

// rawWS is a bare WebSocket JSON-RPC client: it sees the exact bytes the
// devnet sends, and errors that solana-go's ws client hides.
type rawWS struct {
	t       *testing.T
	c       *websocket.Conn
	id      int
	pending []string // notifications read while waiting for an answer
}

func dialRaw(t *testing.T, d *Devnet) *rawWS {
	t.Helper()
	c, _, err := websocket.Dial(waitCtx(t), d.WSURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(64 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &rawWS{t: t, c: c}
}

func (w *rawWS) read() string {
	w.t.Helper()
	_, b, err := w.c.Read(waitCtx(w.t))
	if err != nil {
		w.t.Fatal(err)
	}
	return string(b)
}

// call sends a request and returns its raw result, or its error.
func (w *rawWS) call(method, params string) (string, *jsonrpc.RPCError) {
	w.t.Helper()
	w.id++
	req := `{"jsonrpc":"2.0","id":` + strconv.Itoa(w.id) + `,"method":"` + method + `","params":` + params + `}`
	if err := w.c.Write(waitCtx(w.t), websocket.MessageText, []byte(req)); err != nil {
		w.t.Fatal(err)
	}
	for {
		msg := w.read()
		var m struct {
			ID     *int              `json:"id"`
			Result json.RawMessage   `json:"result"`
			Error  *jsonrpc.RPCError `json:"error"`
		}
		if err := json.Unmarshal([]byte(msg), &m); err != nil {
			w.t.Fatalf("%v: %s", err, msg)
		}
		if m.ID == nil {
			w.pending = append(w.pending, msg)
			continue
		}
		if *m.ID != w.id {
			w.t.Fatalf("answer to %d while waiting for %d: %s", *m.ID, w.id, msg)
		}
		return string(m.Result), m.Error
	}
}

// next returns the next notification.
func (w *rawWS) next() string {
	w.t.Helper()
	if len(w.pending) > 0 {
		msg := w.pending[0]
		w.pending = w.pending[1:]
		return msg
	}
	return w.read()
}

// jsonValue is raw JSON for rawCall's params.
func jsonValue(s string) json.RawMessage { return json.RawMessage(s) }

// signedTransfer builds and signs a transfer.
func signedTransfer(t *testing.T, from solana.PrivateKey, to solana.PublicKey, lamports uint64, recent solana.Hash) *solana.Transaction {
	t.Helper()
	tx, err := solana.NewTransaction([]solana.Instruction{system.NewTransferInstruction(lamports, from.PublicKey(), to).Build()}, recent, solana.TransactionPayer(from.PublicKey()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Sign(func(solana.PublicKey) *solana.PrivateKey { return &from }); err != nil {
		t.Fatal(err)
	}
	return tx
}

// TestSubscriptionIDs: ids count up from 0 per distinct params, equal
// params share one id (across connections, and twice on one connection),
// any unsubscribe method ends any subscription of the connection, and an
// id the connection does not hold is agave's -32602.
func TestSubscriptionIDs(t *testing.T) {
	d, _ := manual(t, subConfig())
	a, b := dialRaw(t, d), dialRaw(t, d)
	faucet := `"` + d.Faucet().PublicKey().String() + `"`
	for _, c := range []struct {
		w              *rawWS
		method, params string
		want           string
	}{
		{a, "slotSubscribe", `[]`, "0"},
		{a, "rootSubscribe", `null`, "1"},
		{a, "slotSubscribe", `[]`, "0"},
		{b, "slotSubscribe", `[]`, "0"},
		{b, "accountSubscribe", `[` + faucet + `]`, "2"},
		{b, "accountSubscribe", `[` + faucet + `,{"commitment":"finalized","encoding":"binary"}]`, "2"},
		{a, "accountSubscribe", `[` + faucet + `,{"commitment":"confirmed"}]`, "3"},
	} {
		if got, e := c.w.call(c.method, c.params); e != nil || got != c.want {
			t.Fatalf("%s %s: %s %+v, want %s", c.method, c.params, got, e, c.want)
		}
	}
	waitJoined(t, d, 5)
	if got, e := a.call("slotUnsubscribe", `[1]`); e != nil || got != "true" {
		t.Fatalf("slotUnsubscribe of the root subscription: %s %+v", got, e)
	}
	for _, id := range []string{"1", "99", "2"} { // 2 is b's, not a's
		if _, e := a.call("rootUnsubscribe", `[`+id+`]`); e == nil || e.Code != -32602 || e.Message != "Invalid subscription id." {
			t.Fatalf("unsubscribe %s: %+v", id, e)
		}
	}
	// Both connections hear slot 1 under the shared id.
	steps(d, 1)
	want := `{"jsonrpc":"2.0","method":"slotNotification","params":{"result":{"slot":1,"parent":0,"root":0},"subscription":0}}`
	for _, w := range []*rawWS{a, b} {
		if got := w.next(); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	// When the last holder of params leaves, the params get a new id.
	for _, w := range []*rawWS{a, b} {
		if got, e := w.call("slotUnsubscribe", `[0]`); e != nil || got != "true" {
			t.Fatalf("slotUnsubscribe: %s %+v", got, e)
		}
	}
	if got, e := a.call("slotSubscribe", `[]`); e != nil || got != "4" {
		t.Fatalf("slotSubscribe after all left: %s %+v", got, e)
	}
	// A closed connection takes its subscriptions with it.
	b.c.Close(websocket.StatusNormalClosure, "")
	waitJoined(t, d, 2)
}

// TestSubscribeOverHTTP: a POST has no connection to notify on.
func TestSubscribeOverHTTP(t *testing.T) {
	d, c := manual(t, subConfig())
	_ = d
	for _, m := range []string{"slotSubscribe", "slotUnsubscribe"} {
		_, e := rawCall(t, c, m)
		if e == nil || e.Code != -32601 || e.Message != "notifications not supported: subscribe over a WebSocket" {
			t.Fatalf("%s over HTTP: %+v", m, e)
		}
	}
}

// TestSignatureReceived: enableReceivedNotification adds a
// receivedSignature notification when the transaction enters a block; the
// subscription ends after the one for its commitment, so unsubscribing it
// then is an unknown id.
func TestSignatureReceived(t *testing.T) {
	d, c := manual(t, subConfig())
	steps(d, 1)
	w := dialRaw(t, d)
	ctx := context.Background()
	bh, err := c.GetLatestBlockhash(ctx, rpc.CommitmentProcessed)
	if err != nil {
		t.Fatal(err)
	}
	tx := signedTransfer(t, d.Faucet(), testKey("dave").PublicKey(), 3_000_000, bh.Value.Blockhash)
	id, e := w.call("signatureSubscribe", `["`+tx.Signatures[0].String()+`",{"commitment":"confirmed","enableReceivedNotification":true}]`)
	if e != nil {
		t.Fatal(e)
	}
	waitJoined(t, d, 1)
	if _, err := c.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	steps(d, 3) // lands in slot 2, confirmed at slot 4
	head := `{"jsonrpc":"2.0","method":"signatureNotification","params":{"result":{"context":{"slot":2},"value":`
	for _, want := range []string{
		head + `"receivedSignature"},"subscription":` + id + `}}`,
		head + `{"err":null}},"subscription":` + id + `}}`,
	} {
		if got := w.next(); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	waitJoined(t, d, 0)
	if _, e := w.call("signatureUnsubscribe", `[`+id+`]`); e == nil || e.Message != "Invalid subscription id." {
		t.Fatalf("unsubscribing an ended subscription: %+v", e)
	}
}

// TestSubscribeBadParams: each method's params are checked as the devnet's
// other methods check theirs (-32602 naming the param and field), with
// agave's own messages where it has one.
func TestSubscribeBadParams(t *testing.T) {
	d, _ := manual(t, subConfig())
	w := dialRaw(t, d)
	pk := `"` + systemProgram.String() + `"`
	sig := `"` + solana.Signature{1}.String() + `"`
	long := `"` + strings.Repeat("1", 176) + `"`
	cases := []struct {
		method, params, want string
	}{
		{"slotSubscribe", `[1]`, `invalid params: param 1: too many params: want at most 0 [], got 1`},
		{"rootSubscribe", `{}`, `invalid params: want an array [], got an object`},
		{"accountSubscribe", `[]`, `invalid params: param 1 (pubkey): missing; want 1 to 2 params [pubkey, config], got 0`},
		{"accountSubscribe", `["nope"]`, `invalid params: param 1 (pubkey): want a base58 public key of 32 bytes, got string "nope"`},
		{"accountSubscribe", `[` + pk + `,{"encoding":"hex"}]`, `invalid params: param 2 (config.encoding): want one of base58, base64, base64+zstd, jsonParsed, binary, got string "hex"`},
		{"accountSubscribe", `[` + pk + `,{"commitment":"recent"}]`, `invalid params: param 2 (config.commitment): want one of processed, confirmed, finalized, got string "recent"`},
		{"accountSubscribe", `[` + pk + `,{"dataSlice":{"offset":1}}]`, `invalid params: param 2 (config.dataSlice.length): missing`},
		{"accountSubscribe", `[` + pk + `,{"minContextSlot":-1}]`, `invalid params: param 2 (config.minContextSlot): want a non-negative integer, got number -1`},
		{"accountSubscribe", `[` + pk + `,"base64"]`, `invalid params: param 2 (config): want an object, got string "base64"`},
		{"programSubscribe", `[1]`, `invalid params: param 1 (programId): want a string, got number 1`},
		{"programSubscribe", `[` + pk + `,{"filters":[{"dataSize":1},{"dataSize":1},{"dataSize":1},{"dataSize":1},{"dataSize":1}]}]`, `Invalid params: Too many filters provided; max 4`},
		{"programSubscribe", `[` + pk + `,{"filters":[{"memcmp":{"offset":0,"bytes":` + long + `}}]}]`, `Invalid params: Invalid param: DataTooLarge`},
		{"programSubscribe", `[` + pk + `,{"filters":[{"memcmp":{"offset":0,"bytes":"0OIl"}}]}]`, `invalid params: param 2 (config.filters[0].memcmp.bytes): want base58, got string "0OIl"`},
		{"programSubscribe", `[` + pk + `,{"filters":[{"dataSize":"1"}]}]`, `invalid params: param 2 (config.filters[0].dataSize): want an integer, got string "1"`},
		{"programSubscribe", `[` + pk + `,{"filters":[{"size":1}]}]`, `invalid params: param 2 (config.filters[0].size): unknown field; allowed fields are dataSize, memcmp`},
		{"programSubscribe", `[` + pk + `,{"withContext":1}]`, `invalid params: param 2 (config.withContext): want a boolean, got number 1`},
		{"logsSubscribe", `["some"]`, `invalid params: param 1 (filter): want one of all, allWithVotes, got string "some"`},
		{"logsSubscribe", `[7]`, `invalid params: param 1 (filter): want "all", "allWithVotes" or {"mentions": [address]}, got number 7`},
		{"logsSubscribe", `[{"mentions":[` + pk + `,` + pk + `]}]`, `Invalid Request: Only 1 address supported`},
		{"logsSubscribe", `[{"mentions":["x"]}]`, `invalid params: param 1 (filter.mentions[0]): want a base58 public key of 32 bytes, got string "x"`},
		{"logsSubscribe", `["all",{"commitment":1}]`, `invalid params: param 2 (config.commitment): want one of processed, confirmed, finalized, got number 1`},
		{"signatureSubscribe", `["abc"]`, `invalid params: param 1 (signature): want a base58 signature of 64 bytes, got string "abc"`},
		{"signatureSubscribe", `[` + sig + `,{"enableReceivedNotification":"yes"}]`, `invalid params: param 2 (config.enableReceivedNotification): want a boolean, got string "yes"`},
		{"blockSubscribe", `[]`, `invalid params: param 1 (filter): missing; want 1 to 2 params [filter, config], got 0`},
		{"blockSubscribe", `["none"]`, `invalid params: param 1 (filter): want one of all, got string "none"`},
		{"blockSubscribe", `[{"mentionsAccountOrProgram":"x"}]`, `invalid params: param 1 (filter.mentionsAccountOrProgram): want a base58 public key of 32 bytes, got string "x"`},
		{"blockSubscribe", `[{"mentions":[` + pk + `]}]`, `invalid params: param 1 (filter.mentions): unknown field; allowed fields are mentionsAccountOrProgram`},
		{"slotUnsubscribe", `[]`, `invalid params: param 1 (id): missing; want 1 to 1 params [id], got 0`},
		{"accountUnsubscribe", `["0"]`, `invalid params: param 1 (id): want an integer, got string "0"`},
		{"blockUnsubscribe", `[0,1]`, `invalid params: param 2: too many params: want at most 1 [id], got 2`},
	}
	for _, c := range cases {
		_, e := w.call(c.method, c.params)
		if e == nil || e.Code != -32602 || e.Message != c.want {
			t.Errorf("%s %s:\n got  %+v\n want %s", c.method, c.params, e, c.want)
		}
	}
	waitJoined(t, d, 0)
}

// TestAccountSubscribeRevert: a processed block abandoned with the only
// change to an account sends, with the next block, the account as it is
// again: here deleted, which agave shows as its default account.
func TestAccountSubscribeRevert(t *testing.T) {
	d, c := manual(t, subConfig())
	w := dialRaw(t, d)
	bob := testKey("bob").PublicKey()
	id, e := w.call("accountSubscribe", `["`+bob.String()+`",{"commitment":"processed"}]`)
	if e != nil {
		t.Fatal(e)
	}
	waitJoined(t, d, 1)
	if _, err := c.RequestAirdrop(context.Background(), bob, lamportsPerSOL, rpc.CommitmentProcessed); err != nil {
		t.Fatal(err)
	}
	steps(d, 1)
	head := `{"jsonrpc":"2.0","method":"accountNotification","params":{"result":{"context":{"slot":`
	tail := `,"subscription":` + id + `}}`
	if got, want := w.next(), head+`1},"value":{"lamports":1000000000,"data":"","owner":"11111111111111111111111111111111","executable":false,"rentEpoch":18446744073709551615,"space":0}}`+tail; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// Slot 2 abandons slot 1 and its leader skips; the airdrop, back in
	// the queue, is taken out, so slot 3 does not redo it.
	d.cfg.DropRate, d.cfg.SkipRate = 1, 1
	steps(d, 1)
	d.cfg.DropRate, d.cfg.SkipRate = 0, 0
	d.mu.Lock()
	d.mempool = nil
	d.mu.Unlock()
	steps(d, 1)
	if got, want := w.next(), head+`3},"value":{"lamports":0,"data":"","owner":"11111111111111111111111111111111","executable":false,"rentEpoch":0,"space":0}}`+tail; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestSubscriptionLimit: the connection's subscription limit is the
// core's -32055, and a refused subscription uses up no id.
func TestSubscriptionLimit(t *testing.T) {
	d, _ := manual(t, subConfig())
	w := dialRaw(t, d)
	max := jsonrpcDefaultMaxSubscriptions()
	for i := range max {
		k := testKey("limit " + strconv.Itoa(i)).PublicKey().String()
		if id, e := w.call("accountSubscribe", `["`+k+`"]`); e != nil || id != strconv.Itoa(i) {
			t.Fatalf("subscription %d: %s %+v", i, id, e)
		}
	}
	if _, e := w.call("slotSubscribe", `[]`); e == nil || e.Code != -32055 {
		t.Fatalf("subscription over the limit: %+v", e)
	}
	other := dialRaw(t, d)
	if id, e := other.call("slotSubscribe", `[]`); e != nil || id != strconv.Itoa(max) {
		t.Fatalf("next subscription: %s %+v, want id %d", id, e, max)
	}
}
