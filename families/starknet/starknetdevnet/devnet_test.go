package starknetdevnet

import (
	"encoding/json"
	"testing"

	"github.com/porticohq/portico/families/starknet/starknettx"
)

type stateUpdateJSON struct {
	BlockHash *string `json:"block_hash"`
	OldRoot   string  `json:"old_root"`
	NewRoot   *string `json:"new_root"`
	StateDiff struct {
		StorageDiffs []struct {
			Address        string `json:"address"`
			StorageEntries []struct{ Key, Value string }
		} `json:"storage_diffs"`
		Deprecated []string `json:"deprecated_declared_classes"`
		Declared   []struct {
			ClassHash string `json:"class_hash"`
		} `json:"declared_classes"`
		Deployed []struct{ Address string } `json:"deployed_contracts"`
		Replaced []struct {
			ContractAddress string `json:"contract_address"`
		} `json:"replaced_classes"`
		Nonces []struct {
			ContractAddress string `json:"contract_address"`
		} `json:"nonces"`
	} `json:"state_diff"`
}

// TestResultsMatchSpec calls every method in every form and validates each
// result against the v0.8 schema; it also checks the state-root chain.
func TestResultsMatchSpec(t *testing.T) {
	spec := loadSpec(t)
	d, c := startDevnet(t, Config{})
	buildChain(t, d, 12, 4)
	if err := d.GenerateTraffic(); err != nil { // a non-empty pending block
		t.Fatal(err)
	}
	check := func(method, params string) json.RawMessage {
		t.Helper()
		res := c.must(method, params)
		spec.validate(t, method, res)
		return res
	}
	check("starknet_specVersion", "")
	check("starknet_chainId", "[]")
	if n := decodeJSON[int](t, check("starknet_blockNumber", "")); n != 12 {
		t.Fatalf("blockNumber = %d, want 12", n)
	}
	hn := decodeJSON[struct {
		BlockHash   string `json:"block_hash"`
		BlockNumber int    `json:"block_number"`
	}](t, check("starknet_blockHashAndNumber", ""))

	var prevRoot string
	kinds := map[string]int{}
	sawDiff := map[string]bool{}
	for n := 0; n <= 12; n++ {
		id := `{"block_number":` + itoa(n) + `}`
		su := decodeJSON[stateUpdateJSON](t, check("starknet_getStateUpdate", `{"block_id":`+id+`}`))
		if n == 0 && su.OldRoot != "0x0" {
			t.Errorf("genesis old_root %s", su.OldRoot)
		}
		if n > 0 && su.OldRoot != prevRoot {
			t.Errorf("block %d old_root %s != block %d new_root %s", n, su.OldRoot, n-1, prevRoot)
		}
		prevRoot = *su.NewRoot
		sd := su.StateDiff
		for k, v := range map[string]int{"storage": len(sd.StorageDiffs), "deprecated": len(sd.Deprecated), "declared": len(sd.Declared), "deployed": len(sd.Deployed), "replaced": len(sd.Replaced), "nonces": len(sd.Nonces)} {
			if v > 0 {
				sawDiff[k] = true
			}
		}
		blk := decodeJSON[struct {
			BlockHash    string   `json:"block_hash"`
			Transactions []string `json:"transactions"`
		}](t, check("rollup_getBlockWithTxHashes", `[`+id+`]`))
		if blk.BlockHash != *su.BlockHash {
			t.Errorf("block %d hash %s vs state update %s", n, blk.BlockHash, *su.BlockHash)
		}
		for _, h := range blk.Transactions {
			r := decodeJSON[struct{ Type string }](t, check("starknet_getTransactionReceipt", `{"transaction_hash":"`+h+`"}`))
			kinds[r.Type]++
		}
	}
	if hn.BlockHash == "" || hn.BlockNumber != 12 {
		t.Errorf("blockHashAndNumber %+v", hn)
	}
	for _, k := range []string{"storage", "deprecated", "declared", "deployed", "nonces"} {
		if !sawDiff[k] {
			t.Errorf("no block had %s in its state diff", k)
		}
	}
	if kinds[kindInvoke] == 0 {
		t.Errorf("receipt kinds %v", kinds)
	}
	// Every tag and the hash form.
	for _, id := range []string{`"latest"`, `"l1_accepted"`, `{"block_hash":"` + hn.BlockHash + `"}`} {
		check("starknet_getStateUpdate", `{"block_id":`+id+`}`)
		check("starknet_getBlockWithTxHashes", `{"block_id":`+id+`}`)
	}
	for _, id := range []string{`"pending"`, `"pre_confirmed"`} {
		su := decodeJSON[stateUpdateJSON](t, check("rollup_getStateUpdate", `{"block_id":`+id+`}`))
		if su.BlockHash != nil || su.NewRoot != nil || su.OldRoot != prevRoot {
			t.Errorf("pending state update %+v, want no block_hash/new_root and old_root %s", su, prevRoot)
		}
		pb := decodeJSON[struct{ Transactions []string }](t, check("starknet_getBlockWithTxHashes", `{"block_id":`+id+`}`))
		if len(pb.Transactions) == 0 {
			t.Fatal("pending block has no transactions")
		}
		check("starknet_getTransactionReceipt", `["`+pb.Transactions[0]+`"]`)
	}
	for _, filter := range []string{
		`{"chunk_size":5}`,
		`{"from_block":"pending","to_block":"pending","chunk_size":3}`,
		`{"from_block":{"block_number":3},"to_block":"latest","keys":[["` + starknettx.Hex(&selTransfer) + `"]],"chunk_size":1024}`,
	} {
		check("rollup_getEvents", `{"filter":`+filter+`}`)
	}
}

func itoa(n int) string { return string(appendUint(nil, uint64(n))) }
