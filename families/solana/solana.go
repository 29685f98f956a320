// Package solana is the method table of the slot-chain family (Solana's
// JSON-RPC): getBlock with full params validation, rows with params
// validation for the methods real clients call most (methods.go), and an
// allowlist of the others.
//
// Where the seed and a real node (agave) differ, the gateway applies the
// seed's rule at its edge and sends the node a request that makes it honour
// that rule (docs/methods.md lists them):
//
//   - rewards: the seed's default is false, agave's is true. When a call
//     leaves rewards out, the node is sent "rewards": false.
//   - commitment "processed": the seed allows it; agave refuses it for
//     getBlock (-32602 "Method does not support commitment below
//     `confirmed`"). The node is sent "confirmed", the closest level it
//     serves, unless Options.NodeServesProcessed says the node serves
//     processed blocks (Portico's embedded devnet does).
//   - The deprecated bare-encoding form [slot, "base64"] is rewritten to the
//     object form so the rewards rule applies to it too.
//   - Unknown config fields are refused (agave ignores them), so a typo such
//     as "maxSupportedTransactionVerison" is reported instead of silently
//     changing the answer.
package solana

import (
	"bytes"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/families/rpcparams"
)

// Family is the slot-chain family's name.
const Family portico.Family = "solana"

// Credit costs of the family's methods: the seed's 160 for getBlock, and
// for every other method Infura's published price of any Solana call
// (180; it was 160 when the seed was written).
const (
	CostGetBlock = 160
	DefaultCost  = 180
)

// Options adapt the table to what the network's nodes serve.
type Options struct {
	// NodeServesProcessed passes getBlock's commitment "processed" through
	// instead of sending "confirmed". Set it only when every node of the
	// network serves processed blocks (the embedded devnet); agave refuses
	// them.
	NodeServesProcessed bool
}

// Table returns the slot-chain family's method table for agave-like nodes.
func Table() portico.Table { return TableFor(Options{}) }

// TableFor returns the slot-chain family's method table for nodes as o
// describes them.
func TableFor(o Options) portico.Table {
	params := GetBlockParams
	if o.NodeServesProcessed {
		params = func(raw jsontext.Value) (portico.Params, error) { return getBlockParams(raw, true) }
	}
	return withNodes(portico.Table{
		Family: Family,
		Methods: append([]portico.Method{{
			Name:   "getBlock",
			Params: params,
			Cost:   CostGetBlock,
		}}, clientMethods()...),
		DefaultCost:   DefaultCost,
		Chain:         Chain(),
		Subscriptions: Subscriptions(),
		NamePattern:   `^[a-z][A-Za-z0-9]*$`,
		// Every HTTP method of agave's RPC (TestSpecMethods checks the list
		// against testdata/specs/agave); base58 and base64 strings are
		// case-sensitive, so the cache key folds no hex.
		KeyForm: portico.KeyJSON,
		DefaultAllow: []string{
			"getAccountInfo", "getBalance", "getBlockHeight", "getBlockCommitment", "getBlockProduction",
			"getBlockTime", "getBlocks", "getBlocksWithLimit", "getClusterNodes", "getEpochInfo",
			"getEpochSchedule", "getFeeForMessage", "getFirstAvailableBlock", "getGenesisHash", "getHealth",
			"getHighestSnapshotSlot", "getIdentity", "getInflationGovernor", "getInflationRate",
			"getInflationReward", "getLargestAccounts", "getLatestBlockhash", "getLeaderSchedule", "getMaxRetransmitSlot",
			"getMaxShredInsertSlot", "getMinimumBalanceForRentExemption", "getMultipleAccounts",
			"getProgramAccounts", "getRecentPerformanceSamples", "getRecentPrioritizationFees",
			"getSignatureStatuses", "getSignaturesForAddress", "getSlot", "getSlotLeader", "getSlotLeaders",
			"getStakeMinimumDelegation", "getSupply", "getTokenAccountBalance", "getTokenAccountsByDelegate",
			"getTokenAccountsByOwner", "getTokenLargestAccounts", "getTokenSupply", "getTransaction",
			"getTransactionCount", "getVersion", "getVoteAccounts", "isBlockhashValid", "minimumLedgerSlot",
			"requestAirdrop", "sendTransaction", "simulateTransaction",
		},
	})
}

// Allowed values of getBlock's config.
var (
	encodings          = []string{"json", "jsonParsed", "base58", "base64"}
	bareEncodings      = []string{"json", "jsonParsed", "base58", "base64", "binary"}
	transactionDetails = []string{"full", "accounts", "signatures", "none"}
	commitments        = []string{"finalized", "confirmed", "processed"}
	configFields       = []string{"encoding", "transactionDetails", "rewards", "commitment", "maxSupportedTransactionVersion"}
)

// GetBlockParams checks getBlock's params, [slot, config?], and returns the
// params to send a real node (see the package comment for the rewrites). A
// block asked for at finalized commitment (the default) never changes.
func GetBlockParams(raw jsontext.Value) (portico.Params, error) {
	return getBlockParams(raw, false)
}

func getBlockParams(raw jsontext.Value, passProcessed bool) (portico.Params, error) {
	send, slot, commitment, err := getBlockSend(raw, passProcessed)
	if err != nil {
		return portico.Params{}, err
	}
	out := portico.Params{Send: send, Block: portico.Block{Kind: portico.BlockNumber, Number: slot}}
	if commitment == "" || commitment == "finalized" {
		out.Cache = portico.Immutable
	}
	return out, nil
}

// getBlockSend checks the params and returns those to send and the
// commitment asked for ("" when none).
func getBlockSend(raw jsontext.Value, passProcessed bool) (_ jsontext.Value, slot uint64, commitment string, _ error) {
	p, err := rpcparams.Positional(raw, 1, "slot", "config")
	if err != nil {
		return nil, 0, "", err
	}
	slot, err = rpcparams.Uint(p[0], 1, "slot", rpcparams.MaxUint64)
	if err != nil {
		return nil, 0, "", err
	}
	if len(p) == 1 || p[1].Kind() == 'n' {
		return appendParams(p[0], `{"rewards":false}`), slot, "", nil
	}
	if p[1].Kind() == '"' {
		enc, err := rpcparams.Enum(p[1], 2, "config", bareEncodings...)
		if err != nil {
			return nil, 0, "", rpcparams.Errorf(2, "config", "want an object or an encoding (json, jsonParsed, base58, base64), got %s", rpcparams.Describe(p[1]))
		}
		return appendParams(p[0], `{"encoding":`+strconv.Quote(enc)+`,"rewards":false}`), slot, "", nil
	}
	cfg, err := rpcparams.Object(p[1], 2, "config", configFields...)
	if err != nil {
		return nil, 0, "", err
	}
	if v, ok := cfg["encoding"]; ok {
		if _, err := rpcparams.Enum(v, 2, "config.encoding", encodings...); err != nil {
			return nil, 0, "", err
		}
	}
	if v, ok := cfg["transactionDetails"]; ok {
		if _, err := rpcparams.Enum(v, 2, "config.transactionDetails", transactionDetails...); err != nil {
			return nil, 0, "", err
		}
	}
	if v, ok := cfg["rewards"]; ok {
		if _, err := rpcparams.Bool(v, 2, "config.rewards"); err != nil {
			return nil, 0, "", err
		}
	}
	if v, ok := cfg["commitment"]; ok {
		if commitment, err = rpcparams.Enum(v, 2, "config.commitment", commitments...); err != nil {
			return nil, 0, "", err
		}
	}
	if v, ok := cfg["maxSupportedTransactionVersion"]; ok {
		if _, err := rpcparams.Uint(v, 2, "config.maxSupportedTransactionVersion", 255); err != nil {
			return nil, 0, "", err
		}
	}
	_, hasRewards := cfg["rewards"]
	rewrite := commitment == "processed" && !passProcessed
	if hasRewards && !rewrite {
		return raw, slot, commitment, nil // nothing to change: forward the caller's bytes
	}
	// Rebuild the config in a fixed order with the seed's rules applied.
	var b bytes.Buffer
	b.WriteByte('{')
	for _, name := range configFields {
		v, ok := cfg[name]
		switch {
		case name == "rewards" && !ok:
			v, ok = jsontext.Value("false"), true
		case name == "commitment" && rewrite:
			v = jsontext.Value(`"confirmed"`)
		}
		if !ok {
			continue
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(name))
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return appendParams(p[0], b.String()), slot, commitment, nil
}

func appendParams(slot jsontext.Value, config string) jsontext.Value {
	out := make([]byte, 0, len(slot)+len(config)+3)
	out = append(out, '[')
	out = append(out, slot...)
	out = append(out, ',')
	out = append(out, config...)
	return append(out, ']')
}
