package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/porticohq/portico"
)

// The families the typed tools know.
const (
	familyEVM      portico.Family = "evm"
	familySolana   portico.Family = "solana"
	familyStarknet portico.Family = "starknet"
)

// Inputs of the tools. The jsonschema tags are the descriptions a model
// reads; the SDK infers each tool's input schema from its type and
// validates the arguments against it before the handler runs.
type (
	listNetworksIn struct{}

	rpcCallIn struct {
		Network string `json:"network" jsonschema:"the network's name, as list_networks gives it"`
		Method  string `json:"method" jsonschema:"the JSON-RPC method, such as eth_blockNumber, getSlot or starknet_getNonce"`
		Params  any    `json:"params,omitempty" jsonschema:"the method's params: a JSON array (positional) or object (named); omit for none"`
	}

	getBalanceIn struct {
		Network string `json:"network" jsonschema:"the network's name, as list_networks gives it (evm or solana)"`
		Address string `json:"address" jsonschema:"the account: a 0x-prefixed 20-byte hex address on evm, a base58 public key on solana"`
		Block   string `json:"block,omitempty" jsonschema:"evm: a block number (decimal or 0x hex), a block hash or a tag (latest, safe, finalized, earliest, pending), default latest; solana: a commitment (processed, confirmed, finalized)"`
	}

	getBlockIn struct {
		Network          string `json:"network" jsonschema:"the network's name, as list_networks gives it"`
		Block            string `json:"block,omitempty" jsonschema:"a block number (decimal or 0x hex; a slot on solana), a block hash, or a tag such as latest or finalized; default latest"`
		FullTransactions bool   `json:"full_transactions,omitempty" jsonschema:"true for whole transactions, false (the default) for their hashes or signatures only"`
	}

	getTransactionIn struct {
		Network string `json:"network" jsonschema:"the network's name, as list_networks gives it"`
		Hash    string `json:"hash" jsonschema:"the transaction's hash (0x hex on evm and starknet) or signature (base58 on solana)"`
	}

	getLogsIn struct {
		Network   string   `json:"network" jsonschema:"the name of an evm network, as list_networks gives it"`
		Address   []string `json:"address,omitempty" jsonschema:"contract addresses whose logs to return; omit for any"`
		Topics    []any    `json:"topics,omitempty" jsonschema:"topic filters by position: each a 32-byte 0x hex topic, a list of alternatives, or null for any"`
		FromBlock string   `json:"from_block,omitempty" jsonschema:"first block: number (decimal or 0x hex) or tag; default latest"`
		ToBlock   string   `json:"to_block,omitempty" jsonschema:"last block: number (decimal or 0x hex) or tag; default latest"`
		BlockHash string   `json:"block_hash,omitempty" jsonschema:"one block's hash, instead of from_block and to_block"`
	}

	callContractIn struct {
		Network   string `json:"network" jsonschema:"the name of an evm network, as list_networks gives it"`
		To        string `json:"to" jsonschema:"the contract's 0x address"`
		Signature string `json:"signature" jsonschema:"the function with its parameter types and, for a decoded result, its return types, such as 'balanceOf(address) returns (uint256)'"`
		Args      []any  `json:"args,omitempty" jsonschema:"the arguments in order: addresses, byte strings and hashes as 0x hex, integers as decimal strings or numbers, booleans, strings, arrays as JSON arrays"`
		From      string `json:"from,omitempty" jsonschema:"the caller's 0x address, when the function reads msg.sender"`
		Block     string `json:"block,omitempty" jsonschema:"block number (decimal or 0x hex), hash or tag; default latest"`
	}

	getAccountIn struct {
		Network  string `json:"network" jsonschema:"the name of a solana network, as list_networks gives it"`
		Address  string `json:"address" jsonschema:"the account's base58 public key"`
		Encoding string `json:"encoding,omitempty" jsonschema:"how the account's data is returned: base64 (the default), base58 or jsonParsed"`
	}

	getSignaturesIn struct {
		Network string `json:"network" jsonschema:"the name of a solana network, as list_networks gives it"`
		Address string `json:"address" jsonschema:"the account's base58 public key"`
		Limit   int    `json:"limit,omitempty" jsonschema:"at most this many signatures, newest first (1 to 1000); default 20"`
		Before  string `json:"before,omitempty" jsonschema:"start after this signature, going back in time"`
		Until   string `json:"until,omitempty" jsonschema:"stop at this signature"`
	}

	getEventsIn struct {
		Network           string     `json:"network" jsonschema:"the name of a starknet network, as list_networks gives it"`
		Address           string     `json:"address,omitempty" jsonschema:"the contract whose events to return (0x felt); omit for any"`
		Keys              [][]string `json:"keys,omitempty" jsonschema:"key filters by position: each a list of alternative 0x felts, an empty list for any"`
		FromBlock         string     `json:"from_block,omitempty" jsonschema:"first block: number (decimal or 0x hex), hash or tag; default latest"`
		ToBlock           string     `json:"to_block,omitempty" jsonschema:"last block: number, hash or tag; default latest"`
		ChunkSize         int        `json:"chunk_size,omitempty" jsonschema:"at most this many events in this answer; default 100"`
		ContinuationToken string     `json:"continuation_token,omitempty" jsonschema:"the token of the previous answer, to read on"`
	}
)

func (s *Server) addTools() {
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)}
	tool := func(name, title, desc string, ann *sdk.ToolAnnotations) *sdk.Tool {
		return &sdk.Tool{Name: name, Title: title, Description: desc, Annotations: ann}
	}
	sdk.AddTool(s.srv, tool("list_networks", "List networks",
		"Lists the blockchain networks this API key may use: each network's name (the 'network' argument of every other tool), "+
			"its chain family (evm, solana or starknet: which typed tools apply), its latest, safe and finalized block numbers, and how many methods the key may call there. "+
			"The method tables with their credit costs are resources (portico://networks/{name}/methods).", ro), s.listNetworks)
	sdk.AddTool(s.srv, tool("rpc_call", "JSON-RPC call",
		"Calls any JSON-RPC method this key may call on a network, with the method's own params, and returns its result as the node gave it. "+
			"Use it for what no typed tool covers. Methods that send transactions only pass if the key's rules allow them, and then only with a transaction the caller signed: Portico holds no keys. "+
			"A refused call (method not allowed, params wrong, credits exhausted) is an error that says why.",
		&sdk.ToolAnnotations{OpenWorldHint: ptr(true)}), s.rpcCall)
	sdk.AddTool(s.srv, tool("get_balance", "Get balance",
		"Returns an account's native balance: on evm networks in wei (eth_getBalance), at a block if given; on solana in lamports (getBalance). "+
			"The answer gives it as a decimal string and as the node's raw value.", ro), s.getBalance)
	sdk.AddTool(s.srv, tool("get_block", "Get block",
		"Returns a block by number, hash or tag (default latest): eth_getBlockByNumber or eth_getBlockByHash on evm, getBlock on solana (by slot, confirmed or finalized; a tag reads the slot first), "+
			"starknet_getBlockWithTxHashes or starknet_getBlockWithTxs on starknet. Transactions are hashes only unless full_transactions is true.", ro), s.getBlock)
	sdk.AddTool(s.srv, tool("get_transaction", "Get transaction with receipt",
		"Returns a transaction and its receipt (status, gas or fee used, logs or events) by hash: eth_getTransactionByHash and eth_getTransactionReceipt on evm, "+
			"getTransaction on solana (confirmed or finalized; its meta is the receipt), starknet_getTransactionByHash and starknet_getTransactionReceipt on starknet. "+
			"A transaction not found is null.", ro), s.getTransaction)
	sdk.AddTool(s.srv, tool("get_logs", "Get logs",
		"Returns the event logs of an evm network that match a filter (eth_getLogs): contract addresses, topics, and a block range or one block hash. "+
			"The key's log bounds apply: a range or an answer too large is refused with the largest range that fits.", ro), s.getLogs)
	sdk.AddTool(s.srv, tool("call_contract", "Call contract",
		"Calls a view function of an evm contract without a transaction (eth_call): give the function as a signature with its types, "+
			"such as 'balanceOf(address) returns (uint256)', and its arguments; the call data is ABI-encoded for you and the result is decoded by the return types "+
			"(without them, the raw bytes are returned).", ro), s.callContract)
	sdk.AddTool(s.srv, tool("get_account", "Get account",
		"Returns a solana account (getAccountInfo): lamports, owner program, executable flag, rent epoch and its data (base64 by default). A missing account is null.", ro), s.getAccount)
	sdk.AddTool(s.srv, tool("get_signatures_for_address", "Get signatures for address",
		"Returns the signatures of the transactions that touched a solana account, newest first (getSignaturesForAddress), with their slot, error and block time; "+
			"page back with 'before'.", ro), s.getSignatures)
	sdk.AddTool(s.srv, tool("get_events", "Get events",
		"Returns the events of a starknet network that match a filter (starknet_getEvents): a contract address, key filters and a block range, one chunk at a time; "+
			"pass the answer's continuation_token to read the next chunk. The key's log bounds apply.", ro), s.getEvents)
}

func ptr[T any](v T) *T { return &v }

// family returns the family of a network the key may use, or an error
// that names the networks it may.
func (s *Server) family(req *sdk.CallToolRequest, network string) (portico.Family, error) {
	id, _, ok := identity(req.Extra)
	if !ok {
		return "", failf("no API key on this request")
	}
	if network == "" {
		return "", failf("network is required: call list_networks for the names")
	}
	f, ok := s.b.Family(id, network)
	if !ok {
		return "", failf("unknown network %q for this key: call list_networks for the names", network)
	}
	return f, nil
}

// only refuses a tool on a network of a family it does not serve.
func only(tool, network string, f portico.Family, want ...portico.Family) error {
	for _, w := range want {
		if f == w {
			return nil
		}
	}
	names := make([]string, len(want))
	for i, w := range want {
		names[i] = string(w)
	}
	return failf("%s serves %s networks; %s is %s (use rpc_call for its own methods)", tool, strings.Join(names, " and "), network, f)
}

func (s *Server) listNetworks(ctx context.Context, req *sdk.CallToolRequest, _ listNetworksIn) (*sdk.CallToolResult, any, error) {
	id, _, ok := identity(req.Extra)
	if !ok {
		return failed(failf("no API key on this request"))
	}
	type head struct {
		Name      string `json:"name"`
		Family    string `json:"family"`
		Latest    uint64 `json:"latest,omitempty"`
		Safe      uint64 `json:"safe,omitempty"`
		Finalized uint64 `json:"finalized,omitempty"`
		Methods   int    `json:"methods"`
		Resource  string `json:"methods_resource"`
	}
	var out []head
	var lines []string
	for _, n := range s.b.Networks(id) {
		h := head{Name: n.Name, Family: string(n.Family), Methods: len(n.Methods), Resource: methodsURI(n.Name)}
		line := fmt.Sprintf("%s (%s)", n.Name, n.Family)
		if n.HeadsKnown {
			h.Latest, h.Safe, h.Finalized = n.Heads.Latest, n.Heads.Safe, n.Heads.Finalized
			line += fmt.Sprintf(": block %d", n.Heads.Latest)
		}
		out = append(out, h)
		lines = append(lines, line)
	}
	if out == nil {
		out = []head{}
	}
	text := fmt.Sprintf("%d networks: %s", len(out), strings.Join(lines, "; "))
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, map[string]any{"networks": out}, nil
}

func (s *Server) rpcCall(ctx context.Context, req *sdk.CallToolRequest, in rpcCallIn) (*sdk.CallToolResult, any, error) {
	if _, err := s.family(req, in.Network); err != nil {
		return failed(err)
	}
	if in.Method == "" {
		return failed(failf("method is required"))
	}
	var params any
	switch p := in.Params.(type) {
	case nil:
	case []any, map[string]any:
		params = p
	default:
		return failed(failf("params must be a JSON array or object, not %T", in.Params))
	}
	sv, err := s.exchange(ctx, req, in.Network, rpc{Method: in.Method, Params: params})
	if err != nil {
		return failed(err)
	}
	res := sv.note(fmt.Sprintf("%s on %s: %s", in.Method, in.Network, brief(sv.results[0])))
	return res, sv.answer(map[string]any{"result": sv.results[0]}), nil
}

func (s *Server) getBalance(ctx context.Context, req *sdk.CallToolRequest, in getBalanceIn) (*sdk.CallToolResult, any, error) {
	f, err := s.family(req, in.Network)
	if err != nil {
		return failed(err)
	}
	if err := only("get_balance", in.Network, f, familyEVM, familySolana); err != nil {
		return failed(err)
	}
	var call rpc
	unit := "wei"
	if f == familyEVM {
		if !evmAddress.MatchString(in.Address) {
			return failed(failf("address must be a 0x-prefixed 20-byte hex address, not %q", in.Address))
		}
		b, err := evmBlock(in.Block, true)
		if err != nil {
			return failed(err)
		}
		call = rpc{Method: "eth_getBalance", Params: []any{in.Address, b}}
	} else {
		unit = "lamports"
		opts := map[string]any{}
		if in.Block != "" {
			if !commitment(in.Block) {
				return failed(failf("on solana, block is a commitment: processed, confirmed or finalized, not %q", in.Block))
			}
			opts["commitment"] = in.Block
		}
		call = rpc{Method: "getBalance", Params: []any{in.Address, opts}}
	}
	sv, err := s.exchange(ctx, req, in.Network, call)
	if err != nil {
		return failed(err)
	}
	raw := sv.results[0]
	var amount *big.Int
	if f == familyEVM {
		var hex string
		if json.Unmarshal(raw, &hex) == nil {
			amount, _ = new(big.Int).SetString(strings.TrimPrefix(hex, "0x"), 16)
		}
	} else {
		var v struct {
			Value json.Number `json:"value"`
		}
		if json.Unmarshal(raw, &v) == nil {
			amount, _ = new(big.Int).SetString(v.Value.String(), 10)
		}
	}
	if amount == nil {
		return failed(failf("%s on %s: unexpected answer %s", call.Method, in.Network, brief(raw)))
	}
	res := sv.note(fmt.Sprintf("balance of %s on %s: %s %s", in.Address, in.Network, amount, unit))
	return res, sv.answer(map[string]any{"address": in.Address, "balance": amount.String(), "unit": unit, "raw": raw}), nil
}

func (s *Server) getBlock(ctx context.Context, req *sdk.CallToolRequest, in getBlockIn) (*sdk.CallToolResult, any, error) {
	f, err := s.family(req, in.Network)
	if err != nil {
		return failed(err)
	}
	var call rpc
	switch f {
	case familyEVM:
		if isHash(in.Block) {
			call = rpc{Method: "eth_getBlockByHash", Params: []any{in.Block, in.FullTransactions}}
		} else {
			b, err := evmBlock(in.Block, false)
			if err != nil {
				return failed(err)
			}
			call = rpc{Method: "eth_getBlockByNumber", Params: []any{b, in.FullTransactions}}
		}
	case familySolana:
		slot, err := s.solanaSlot(ctx, req, in.Network, in.Block)
		if err != nil {
			return failed(err)
		}
		details := "signatures"
		if in.FullTransactions {
			details = "full"
		}
		call = rpc{Method: "getBlock", Params: []any{slot, map[string]any{"commitment": "confirmed", "encoding": "json", "transactionDetails": details, "maxSupportedTransactionVersion": 0, "rewards": false}}}
	case familyStarknet:
		b, err := starknetBlock(in.Block)
		if err != nil {
			return failed(err)
		}
		m := "starknet_getBlockWithTxHashes"
		if in.FullTransactions {
			m = "starknet_getBlockWithTxs"
		}
		call = rpc{Method: m, Params: []any{b}}
	default:
		return failed(only("get_block", in.Network, f, familyEVM, familySolana, familyStarknet))
	}
	sv, err := s.exchange(ctx, req, in.Network, call)
	if err != nil {
		return failed(err)
	}
	block := in.Block
	if block == "" {
		block = "latest"
	}
	res := sv.note(fmt.Sprintf("block %s on %s (%d bytes)", block, in.Network, len(sv.results[0])))
	return res, sv.answer(map[string]any{"block": sv.results[0]}), nil
}

// solanaSlot is the slot a get_block on solana reads: the number given,
// or the slot of a commitment (a tag), asked of the network.
func (s *Server) solanaSlot(ctx context.Context, req *sdk.CallToolRequest, network, block string) (uint64, error) {
	if n, err := strconv.ParseUint(block, 10, 64); err == nil {
		return n, nil
	}
	tag := block
	switch block {
	case "", "latest":
		tag = "confirmed"
	case "safe":
		tag = "confirmed"
	}
	if !commitment(tag) {
		return 0, failf("on solana, block is a slot number or a commitment (processed, confirmed, finalized), not %q", block)
	}
	sv, err := s.exchange(ctx, req, network, rpc{Method: "getSlot", Params: []any{map[string]any{"commitment": tag}}})
	if err != nil {
		return 0, err
	}
	var slot uint64
	if err := json.Unmarshal(sv.results[0], &slot); err != nil {
		return 0, failf("getSlot on %s: unexpected answer %s", network, brief(sv.results[0]))
	}
	return slot, nil
}

func (s *Server) getTransaction(ctx context.Context, req *sdk.CallToolRequest, in getTransactionIn) (*sdk.CallToolResult, any, error) {
	f, err := s.family(req, in.Network)
	if err != nil {
		return failed(err)
	}
	if in.Hash == "" {
		return failed(failf("hash is required"))
	}
	var calls []rpc
	switch f {
	case familyEVM:
		calls = []rpc{{Method: "eth_getTransactionByHash", Params: []any{in.Hash}}, {Method: "eth_getTransactionReceipt", Params: []any{in.Hash}}}
	case familyStarknet:
		calls = []rpc{{Method: "starknet_getTransactionByHash", Params: []any{in.Hash}}, {Method: "starknet_getTransactionReceipt", Params: []any{in.Hash}}}
	case familySolana:
		calls = []rpc{{Method: "getTransaction", Params: []any{in.Hash, map[string]any{"commitment": "confirmed", "encoding": "json", "maxSupportedTransactionVersion": 0}}}}
	default:
		return failed(only("get_transaction", in.Network, f, familyEVM, familySolana, familyStarknet))
	}
	sv, err := s.exchange(ctx, req, in.Network, calls...)
	if err != nil {
		return failed(err)
	}
	fields := map[string]any{"transaction": sv.results[0]}
	if len(sv.results) > 1 {
		fields["receipt"] = sv.results[1]
	}
	line := fmt.Sprintf("transaction %s on %s", in.Hash, in.Network)
	if string(sv.results[0]) == "null" {
		line += ": not found"
	}
	return sv.note(line), sv.answer(fields), nil
}

func (s *Server) getLogs(ctx context.Context, req *sdk.CallToolRequest, in getLogsIn) (*sdk.CallToolResult, any, error) {
	f, err := s.family(req, in.Network)
	if err != nil {
		return failed(err)
	}
	if err := only("get_logs", in.Network, f, familyEVM); err != nil {
		return failed(err)
	}
	filter := map[string]any{}
	switch len(in.Address) {
	case 0:
	case 1:
		filter["address"] = in.Address[0]
	default:
		filter["address"] = in.Address
	}
	if len(in.Topics) > 0 {
		filter["topics"] = in.Topics
	}
	if in.BlockHash != "" {
		if in.FromBlock != "" || in.ToBlock != "" {
			return failed(failf("give block_hash or from_block/to_block, not both"))
		}
		filter["blockHash"] = in.BlockHash
	} else {
		for k, v := range map[string]string{"fromBlock": in.FromBlock, "toBlock": in.ToBlock} {
			if v == "" {
				continue
			}
			b, err := evmBlock(v, false)
			if err != nil {
				return failed(err)
			}
			filter[k] = b
		}
	}
	sv, err := s.exchange(ctx, req, in.Network, rpc{Method: "eth_getLogs", Params: []any{filter}})
	if err != nil {
		return failed(err)
	}
	var logs []json.RawMessage
	_ = json.Unmarshal(sv.results[0], &logs)
	return sv.note(fmt.Sprintf("%d logs on %s", len(logs), in.Network)), sv.answer(map[string]any{"logs": sv.results[0], "count": len(logs)}), nil
}

func (s *Server) callContract(ctx context.Context, req *sdk.CallToolRequest, in callContractIn) (*sdk.CallToolResult, any, error) {
	f, err := s.family(req, in.Network)
	if err != nil {
		return failed(err)
	}
	if err := only("call_contract", in.Network, f, familyEVM); err != nil {
		return failed(err)
	}
	if !evmAddress.MatchString(in.To) {
		return failed(failf("to must be a 0x-prefixed 20-byte hex address, not %q", in.To))
	}
	fn, err := parseSignature(in.Signature)
	if err != nil {
		return failed(failf("signature: %v", err))
	}
	data, err := fn.encode(in.Args)
	if err != nil {
		return failed(failf("args: %v", err))
	}
	b, err := evmBlock(in.Block, true)
	if err != nil {
		return failed(err)
	}
	tx := map[string]any{"to": in.To, "data": "0x" + fmt.Sprintf("%x", data)}
	if in.From != "" {
		if !evmAddress.MatchString(in.From) {
			return failed(failf("from must be a 0x-prefixed 20-byte hex address, not %q", in.From))
		}
		tx["from"] = in.From
	}
	sv, err := s.exchange(ctx, req, in.Network, rpc{Method: "eth_call", Params: []any{tx, b}})
	if err != nil {
		return failed(err)
	}
	var hexOut string
	if err := json.Unmarshal(sv.results[0], &hexOut); err != nil {
		return failed(failf("eth_call on %s: unexpected answer %s", in.Network, brief(sv.results[0])))
	}
	fields := map[string]any{"function": fn.canonical(), "data": tx["data"], "raw": hexOut}
	line := fmt.Sprintf("%s on %s: %s", fn.canonical(), in.Network, brief(sv.results[0]))
	if len(fn.outputs) > 0 {
		decoded, err := fn.decode(hexOut)
		if err != nil {
			return failed(failf("%s returned %s, which does not decode as %s: %v", fn.canonical(), brief(sv.results[0]), fn.returns(), err))
		}
		fields["result"] = decoded
		text, _ := json.Marshal(decoded)
		line = fmt.Sprintf("%s on %s: %s", fn.canonical(), in.Network, brief(text))
	}
	return sv.note(line), sv.answer(fields), nil
}

func (s *Server) getAccount(ctx context.Context, req *sdk.CallToolRequest, in getAccountIn) (*sdk.CallToolResult, any, error) {
	f, err := s.family(req, in.Network)
	if err != nil {
		return failed(err)
	}
	if err := only("get_account", in.Network, f, familySolana); err != nil {
		return failed(err)
	}
	enc := in.Encoding
	switch enc {
	case "":
		enc = "base64"
	case "base64", "base58", "jsonParsed":
	default:
		return failed(failf("encoding must be base64, base58 or jsonParsed, not %q", in.Encoding))
	}
	sv, err := s.exchange(ctx, req, in.Network, rpc{Method: "getAccountInfo", Params: []any{in.Address, map[string]any{"encoding": enc}}})
	if err != nil {
		return failed(err)
	}
	var v struct {
		Value json.RawMessage `json:"value"`
	}
	_ = json.Unmarshal(sv.results[0], &v)
	line := fmt.Sprintf("account %s on %s", in.Address, in.Network)
	if v.Value == nil || string(v.Value) == "null" {
		line += ": not found"
	}
	return sv.note(line), sv.answer(map[string]any{"account": sv.results[0]}), nil
}

func (s *Server) getSignatures(ctx context.Context, req *sdk.CallToolRequest, in getSignaturesIn) (*sdk.CallToolResult, any, error) {
	f, err := s.family(req, in.Network)
	if err != nil {
		return failed(err)
	}
	if err := only("get_signatures_for_address", in.Network, f, familySolana); err != nil {
		return failed(err)
	}
	limit := in.Limit
	switch {
	case limit == 0:
		limit = 20
	case limit < 0 || limit > 1000:
		return failed(failf("limit must be 1 to 1000, not %d", in.Limit))
	}
	opts := map[string]any{"commitment": "confirmed", "limit": limit}
	if in.Before != "" {
		opts["before"] = in.Before
	}
	if in.Until != "" {
		opts["until"] = in.Until
	}
	sv, err := s.exchange(ctx, req, in.Network, rpc{Method: "getSignaturesForAddress", Params: []any{in.Address, opts}})
	if err != nil {
		return failed(err)
	}
	var sigs []json.RawMessage
	_ = json.Unmarshal(sv.results[0], &sigs)
	return sv.note(fmt.Sprintf("%d signatures for %s on %s", len(sigs), in.Address, in.Network)),
		sv.answer(map[string]any{"signatures": sv.results[0], "count": len(sigs)}), nil
}

func (s *Server) getEvents(ctx context.Context, req *sdk.CallToolRequest, in getEventsIn) (*sdk.CallToolResult, any, error) {
	f, err := s.family(req, in.Network)
	if err != nil {
		return failed(err)
	}
	if err := only("get_events", in.Network, f, familyStarknet); err != nil {
		return failed(err)
	}
	chunk := in.ChunkSize
	switch {
	case chunk == 0:
		chunk = 100
	case chunk < 0:
		return failed(failf("chunk_size must be positive, not %d", in.ChunkSize))
	}
	filter := map[string]any{"chunk_size": chunk}
	if in.Address != "" {
		filter["address"] = in.Address
	}
	if len(in.Keys) > 0 {
		filter["keys"] = in.Keys
	}
	for k, v := range map[string]string{"from_block": in.FromBlock, "to_block": in.ToBlock} {
		if v == "" {
			continue
		}
		b, err := starknetBlock(v)
		if err != nil {
			return failed(err)
		}
		filter[k] = b
	}
	if in.ContinuationToken != "" {
		filter["continuation_token"] = in.ContinuationToken
	}
	sv, err := s.exchange(ctx, req, in.Network, rpc{Method: "starknet_getEvents", Params: map[string]any{"filter": filter}})
	if err != nil {
		return failed(err)
	}
	var page struct {
		Events            []json.RawMessage `json:"events"`
		ContinuationToken string            `json:"continuation_token"`
	}
	_ = json.Unmarshal(sv.results[0], &page)
	line := fmt.Sprintf("%d events on %s", len(page.Events), in.Network)
	if page.ContinuationToken != "" {
		line += "; more with continuation_token " + page.ContinuationToken
	}
	return sv.note(line), sv.answer(map[string]any{"events": sv.results[0], "count": len(page.Events)}), nil
}

var (
	evmAddress = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	hexHash    = regexp.MustCompile(`^0x[0-9a-fA-F]{64}$`)
	hexNumber  = regexp.MustCompile(`^0x[0-9a-fA-F]{1,16}$`)
)

func isHash(s string) bool { return hexHash.MatchString(s) }

// evmBlock is the block argument of an evm call: a tag, a hex number, a
// decimal number in hex, or (where the method takes one, byHash) a hash
// as EIP-1898's {"blockHash": ...}.
func evmBlock(b string, byHash bool) (any, error) {
	switch {
	case b == "":
		return "latest", nil
	case b == "latest" || b == "safe" || b == "finalized" || b == "earliest" || b == "pending":
		return b, nil
	case hexNumber.MatchString(b):
		return b, nil
	case byHash && isHash(b):
		return map[string]any{"blockHash": b}, nil
	}
	if n, err := strconv.ParseUint(b, 10, 64); err == nil {
		return "0x" + strconv.FormatUint(n, 16), nil
	}
	return nil, failf("block must be a number (decimal or 0x hex), a 0x block hash or a tag (latest, safe, finalized, earliest, pending), not %q", b)
}

// starknetBlock is a starknet block_id.
func starknetBlock(b string) (any, error) {
	switch {
	case b == "":
		return "latest", nil
	case b == "latest" || b == "pending" || b == "pre_confirmed" || b == "l1_accepted":
		return b, nil
	case strings.HasPrefix(b, "0x") && len(b) > 18:
		return map[string]any{"block_hash": b}, nil
	case hexNumber.MatchString(b):
		n, _ := strconv.ParseUint(b[2:], 16, 64)
		return map[string]any{"block_number": n}, nil
	}
	if n, err := strconv.ParseUint(b, 10, 64); err == nil {
		return map[string]any{"block_number": n}, nil
	}
	return nil, failf("block must be a number, a 0x block hash or a tag (latest, pre_confirmed, l1_accepted), not %q", b)
}

func commitment(s string) bool { return s == "processed" || s == "confirmed" || s == "finalized" }

// brief is a JSON value cut for a line of text.
func brief(v []byte) string {
	const max = 120
	if len(v) <= max {
		return string(v)
	}
	return string(v[:max]) + fmt.Sprintf("… (%d bytes)", len(v))
}
