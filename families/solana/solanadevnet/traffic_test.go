package solanadevnet

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
)

// stepUntil drives a manual devnet until a finalized block holds a
// transaction for which pred holds.
func stepUntil(t *testing.T, d *Devnet, pred func(*txRecord) bool) (uint64, *txRecord) {
	t.Helper()
	for range 2000 {
		d.mu.RLock()
		for s := d.led.first; s <= d.led.root.Slot; s++ {
			if b := d.led.blocks[s]; b != nil {
				for _, r := range b.Txs {
					if pred(r) {
						d.mu.RUnlock()
						return s, r
					}
				}
			}
		}
		d.mu.RUnlock()
		steps(d, 1)
	}
	t.Fatal("no such transaction after 2000 slots")
	return 0, nil
}

// parsedTx returns the jsonParsed form of one transaction of a block.
func parsedTx(t *testing.T, c *rpc.Client, slot uint64, sig solana.Signature) map[string]any {
	t.Helper()
	raw, rerr := rawCall(t, c, "getBlock", slot, map[string]any{"encoding": "jsonParsed", "maxSupportedTransactionVersion": 0})
	if rerr != nil {
		t.Fatal(rerr)
	}
	var b struct{ Transactions []map[string]any }
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	for _, tx := range b.Transactions {
		if tx["transaction"].(map[string]any)["signatures"].([]any)[0] == sig.String() {
			return tx
		}
	}
	t.Fatalf("%s not in block %d", sig, slot)
	return nil
}

func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

func keySet(v any) []string {
	var out []string
	for k := range v.(map[string]any) {
		out = append(out, k)
	}
	return sortStrings(out)
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestJSONParsedInstructions checks how jsonParsed renders each kind of
// instruction the devnet runs, as a real node does.
func TestJSONParsedInstructions(t *testing.T) {
	cfg := testConfig()
	d, c := manual(t, cfg)
	ix := func(tx map[string]any, i int) map[string]any {
		return path(tx, "transaction", "message", "instructions", i).(map[string]any)
	}

	slot, r := stepUntil(t, d, hasProgram(voteProgram))
	vote := ix(parsedTx(t, c, slot, r.sig()), 0)
	if vote["program"] != "vote" || vote["programId"] != voteProgram.String() || path(vote, "parsed", "type") != "vote" || vote["stackHeight"] != 1.0 {
		t.Fatalf("vote: %v", vote)
	}
	if got := keySet(path(vote, "parsed", "info")); !reflect.DeepEqual(got, []string{"clockSysvar", "slotHashesSysvar", "vote", "voteAccount", "voteAuthority"}) {
		t.Fatalf("vote info keys %v", got)
	}
	if got := keySet(path(vote, "parsed", "info", "vote")); !reflect.DeepEqual(got, []string{"hash", "slots", "timestamp"}) {
		t.Fatalf("vote.vote keys %v", got)
	}
	if path(vote, "parsed", "info", "clockSysvar") != solana.SysVarClockPubkey.String() {
		t.Fatalf("clock sysvar %v", path(vote, "parsed", "info", "clockSysvar"))
	}

	slot, r = stepUntil(t, d, hasProgram(memoProgram))
	tx := parsedTx(t, c, slot, r.sig())
	transfer, memo := ix(tx, 0), ix(tx, 1)
	if path(transfer, "parsed", "type") != "transfer" || !reflect.DeepEqual(keySet(path(transfer, "parsed", "info")), []string{"destination", "lamports", "source"}) {
		t.Fatalf("transfer: %v", transfer)
	}
	if memo["program"] != "spl-memo" || !strings.HasPrefix(memo["parsed"].(string), "portico devnet traffic #") {
		t.Fatalf("memo: %#v", memo)
	}
	key0 := path(tx, "transaction", "message", "accountKeys", 0).(map[string]any)
	if !reflect.DeepEqual(keySet(key0), []string{"pubkey", "signer", "source", "writable"}) || key0["signer"] != true || key0["source"] != "transaction" {
		t.Fatalf("account key %v", key0)
	}
	if _, ok := path(tx, "meta").(map[string]any)["loadedAddresses"]; ok {
		t.Fatal("jsonParsed meta carries loadedAddresses; agave omits it")
	}
	if logs := path(tx, "meta", "logMessages").([]any); !strings.HasPrefix(logs[len(logs)-3].(string), "Program log: Memo (len ") {
		t.Fatalf("memo logs %v", logs)
	}

	slot, r = stepUntil(t, d, func(r *txRecord) bool {
		return hasProgram(systemProgram)(r) && len(r.tx.Signatures) == 2
	})
	create := ix(parsedTx(t, c, slot, r.sig()), 0)
	if path(create, "parsed", "type") != "createAccount" || !reflect.DeepEqual(keySet(path(create, "parsed", "info")), []string{"lamports", "newAccount", "owner", "source", "space"}) {
		t.Fatalf("createAccount: %v", create)
	}

	// Creating a lookup table calls the system program three times.
	slot, r = stepUntil(t, d, func(r *txRecord) bool { return len(r.Meta.Inner) > 0 })
	tx = parsedTx(t, c, slot, r.sig())
	if path(ix(tx, 0), "parsed", "type") != "createLookupTable" || path(ix(tx, 0), "program") != "address-lookup-table" {
		t.Fatalf("lookup table: %v", ix(tx, 0))
	}
	inner := path(tx, "meta", "innerInstructions", 0, "instructions").([]any)
	var types []string
	for _, in := range inner {
		if path(in, "stackHeight") != 2.0 || path(in, "program") != "system" {
			t.Fatalf("inner instruction %v", in)
		}
		types = append(types, path(in, "parsed", "type").(string))
	}
	if strings.Join(types, ",") != "transfer,allocate,assign" {
		t.Fatalf("inner instructions %v", types)
	}

	// A v0 transfer: loaded keys come after the static ones.
	slot, r = stepUntil(t, d, isV0)
	tx = parsedTx(t, c, slot, r.sig())
	keys := path(tx, "transaction", "message", "accountKeys").([]any)
	if path(keys[len(keys)-1], "source") != "lookupTable" || path(tx, "version") != 0.0 {
		t.Fatalf("v0 keys %v", keys)
	}
	if lus := path(tx, "transaction", "message", "addressTableLookups").([]any); len(lus) != 1 {
		t.Fatalf("lookups %v", lus)
	}
	var table struct {
		Value struct {
			Data struct{ Parsed struct{ Type string } }
		}
	}
	if err := c.RPCCallForInto(context.Background(), &table, "getAccountInfo", []any{r.tx.Message.AddressTableLookups[0].AccountKey.String(), map[string]any{"encoding": "jsonParsed"}}); err != nil || table.Value.Data.Parsed.Type != "lookupTable" {
		t.Fatalf("table account: %v %+v", err, table)
	}
}

// TestRewards checks fee rewards (half the base fees, all priority fees)
// and the voting and staking rewards paid after an epoch boundary.
func TestRewards(t *testing.T) {
	cfg := testConfig()
	cfg.SlotsPerEpoch = 16
	d, c := manual(t, cfg)
	steps(d, 30)
	ctx := context.Background()
	yes := true
	var sawVoting, sawStaking bool
	for slot := uint64(1); slot <= d.Slot("finalized"); slot++ {
		v0 := uint64(0)
		b, err := c.GetBlockWithOpts(ctx, slot, &rpc.GetBlockOpts{Rewards: &yes, MaxSupportedTransactionVersion: &v0})
		if err != nil {
			t.Fatal(err)
		}
		var wantFee uint64
		for _, tw := range b.Transactions {
			tx, _ := tw.GetTransaction()
			wantFee += tw.Meta.Fee - uint64(len(tx.Signatures))*lamportsPerSignature/2
		}
		for _, r := range b.Rewards {
			switch r.RewardType {
			case rpc.RewardTypeFee:
				if uint64(r.Lamports) != wantFee || r.Commission != nil {
					t.Fatalf("slot %d: fee reward %d, want %d", slot, r.Lamports, wantFee)
				}
			case rpc.RewardTypeVoting:
				sawVoting = true
				if slot != 16 || b.NumRewardPartitions == nil || *b.NumRewardPartitions != 1 || r.Commission == nil || r.Lamports <= 0 {
					t.Fatalf("slot %d: voting reward %+v", slot, r)
				}
			case rpc.RewardTypeStaking:
				sawStaking = true
				if slot != 17 || r.Commission == nil || r.Lamports <= 0 || r.PostBalance < uint64(r.Lamports) {
					t.Fatalf("slot %d: staking reward %+v", slot, r)
				}
			}
		}
	}
	if !sawVoting || !sawStaking {
		t.Fatalf("voting %v staking %v", sawVoting, sawStaking)
	}
}
