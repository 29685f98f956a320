package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/ethereum/go-ethereum/crypto"
)

// This file is the fake EVM node of the fixed and chaos setups: a
// net/http server in a process of its own that answers fixed bytes, the
// id aside. It answers the two measured calls (a recorded transaction by
// its hash, the generated block by its hash with full transactions) and
// the calls a gateway makes to track a node: eth_chainId, net_version,
// eth_blockNumber, eth_syncing and eth_getBlockByNumber of a tag or a
// number (a small header, {"number","hash"}), and any eth_call with one
// word (the allowlist setup's small call). Anything else is the node's
// -32601.
//
// SIGUSR1 holds its head back by fakeLag blocks (a node that lags);
// SIGUSR2 lets it go.

// fakeHead is the head every fake node reports (latest, safe and
// finalized alike): the generated block is this block, and the recorded
// transaction (block 0x3) is final, so both answers may be cached.
const fakeHead = 0x10

// fakeLag is how far a lagging fake node holds its head back: more than
// the chaos setup's max_lag of 5.
const fakeLag = 8

// recordedTx is the small call's recording: a legacy transfer as geth
// answers it on the execution-apis test chain.
const recordedTx = "evm/tests/eth_getTransactionByHash/get-legacy-tx.io"

// fakeCallResult answers every eth_call: one 32-byte word, as a token's
// balanceOf does.
const fakeCallResult = `"0x0000000000000000000000000000000000000000000000000000000000000001"`

// fakeCalls are the two calls the fixed setup measures.
type fakeCalls struct {
	txHash   string
	txResult []byte
	block    evmBlock
}

// loadFakeCalls reads the recorded transaction and generates the block.
func loadFakeCalls(fixtures string) (*fakeCalls, error) {
	hash, result, err := readRecording(filepath.Join(fixtures, recordedTx))
	if err != nil {
		return nil, err
	}
	return &fakeCalls{txHash: hash, txResult: result, block: generateBlock(fakeHead)}, nil
}

// readRecording reads an execution-apis .io file: the first param of its
// request line and the result of its response line.
func readRecording(path string) (string, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", nil, err
	}
	var req struct {
		Params []string `json:"params"`
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, ">> "):
			err = json.Unmarshal([]byte(line[3:]), &req)
		case strings.HasPrefix(line, "<< "):
			err = json.Unmarshal([]byte(line[3:]), &resp)
		}
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if len(req.Params) == 0 || len(resp.Result) == 0 {
		return "", nil, fmt.Errorf("%s: no request param or no result", path)
	}
	return req.Params[0], resp.Result, nil
}

func (f *fakeCalls) txBody() []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionByHash","params":["` + f.txHash + `"]}`)
}

func (f *fakeCalls) blockBody() []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByHash","params":["` + f.block.Hash.Hex() + `",true]}`)
}

// fakeNode serves the calls.
type fakeNode struct {
	calls  *fakeCalls
	lagged atomic.Bool
	pool   sync.Pool
	// Prebuilt results, by method.
	chainID, syncing []byte
}

// fakeEVMNode runs a fake node on listen (127.0.0.1:0 for any port) and
// prints its address. It runs as a child process, stopped by SIGINT or
// SIGKILL from its parent.
func fakeEVMNode(listen, fixtures string) error {
	calls, err := loadFakeCalls(fixtures)
	if err != nil {
		return err
	}
	n := &fakeNode{calls: calls, chainID: []byte(`"0x1"`), syncing: []byte(`false`)}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for s := range sig {
			n.lagged.Store(s == syscall.SIGUSR1)
		}
	}()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	return http.Serve(ln, n)
}

// head is the node's head now.
func (n *fakeNode) head() uint64 {
	if n.lagged.Load() {
		return fakeHead - fakeLag
	}
	return fakeHead
}

// headerOf is the small header of block number b: the generated block's
// hash for the head, a hash made of the number for the others, the same
// on every fake node, so that nodes agree on the chain.
func (n *fakeNode) headerOf(b uint64) []byte {
	hash := n.calls.block.Hash.Hex()
	if b != fakeHead {
		hash = crypto.Keccak256Hash(strconv.AppendUint(nil, b, 10)).Hex()
	}
	return []byte(`{"number":"0x` + strconv.FormatUint(b, 16) + `","hash":"` + hash + `"}`)
}

type fakeRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

// answerBody appends to out the answer to a JSON-RPC body, a call or a
// batch, each call answered by answer; ok is false when the body does not
// decode.
func answerBody(out, body []byte, answer func([]byte, fakeRequest) []byte) (_ []byte, ok bool) {
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		var reqs []fakeRequest
		if err := json.Unmarshal(b, &reqs); err != nil {
			return out, false
		}
		out = append(out, '[')
		for i, req := range reqs {
			if i > 0 {
				out = append(out, ',')
			}
			out = answer(out, req)
		}
		return append(out, ']'), true
	}
	var req fakeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return out, false
	}
	return answer(out, req), true
}

func (n *fakeNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	bp, _ := n.pool.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	out, ok := answerBody((*bp)[:0], body, n.answer)
	if !ok {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// One write of the whole answer: net/http sends a large one chunked,
	// as geth does.
	w.Write(out)
	*bp = out
	n.pool.Put(bp)
}

// answer appends the answer to req.
func (n *fakeNode) answer(out []byte, req fakeRequest) []byte {
	id := req.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	result := n.result(req)
	if result == nil {
		return append(out, `,"error":{"code":-32601,"message":"the method `+req.Method+` does not exist/is not available"}}`...)
	}
	out = append(out, `,"result":`...)
	out = append(out, result...)
	return append(out, '}')
}

// result is the result of req, nil for a method the node does not have.
func (n *fakeNode) result(req fakeRequest) []byte {
	param := func(i int) string {
		if i >= len(req.Params) {
			return ""
		}
		var s string
		json.Unmarshal(req.Params[i], &s)
		return strings.ToLower(s)
	}
	switch req.Method {
	case "eth_getTransactionByHash":
		if param(0) == n.calls.txHash {
			return n.calls.txResult
		}
		return []byte("null")
	case "eth_getBlockByHash":
		if param(0) == strings.ToLower(n.calls.block.Hash.Hex()) {
			return n.calls.block.JSON
		}
		return []byte("null")
	case "eth_call":
		return []byte(fakeCallResult)
	case "eth_chainId":
		return n.chainID
	case "net_version":
		return []byte(`"1"`)
	case "eth_syncing":
		return n.syncing
	case "eth_blockNumber":
		return []byte(`"0x` + strconv.FormatUint(n.head(), 16) + `"`)
	case "eth_getBlockByNumber":
		head := n.head()
		switch tag := param(0); tag {
		case "latest", "safe", "finalized", "pending", "":
			return n.headerOf(head)
		case "earliest":
			return n.headerOf(0)
		default:
			b, err := strconv.ParseUint(strings.TrimPrefix(tag, "0x"), 16, 64)
			if err != nil || b > head {
				return []byte("null")
			}
			return n.headerOf(b)
		}
	}
	return nil
}
