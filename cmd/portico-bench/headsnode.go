package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// This file is the fake node of the subs setup (issue 17): an EVM node
// in a process of its own that makes a new head every interval and sends
// it to its newHeads subscribers over WebSocket, as geth does, and answers
// over HTTP what Portico's head tracking asks (families/evm/heads.go:
// eth_chainId, and eth_getBlockByNumber of latest, safe, finalized or a
// number). One listener serves both: a GET with an Upgrade header is a
// WebSocket.
//
// The time each head was sent is kept out of the notification (Portico
// passes the result on untouched, so it would reach every client, and a
// real node sends no such thing). GET /sent lists it instead, one line
// per head: "number sendUnixNano". The bench runs on the same machine,
// so the clocks are the same clock. POST /pause stops the heads and
// answers the last head sent; POST /resume starts them again.

// headsStart is the number of the node's first head, about mainnet's
// height; the headsBack blocks before it exist too, so that safe and
// finalized have blocks to name.
const (
	headsStart = 22_000_000
	headsBack  = 128
)

// headsNode is the fake node's state.
type headsNode struct {
	interval time.Duration
	floor    bool // write every head to every subscriber itself (floor.go)

	mu      sync.Mutex
	blocks  map[uint64][]byte // header JSON (geth's newHeads result) by number
	byHash  map[common.Hash]uint64
	last    *types.Header
	paused  bool
	subs    map[*headsSub]struct{}
	sent    []headSent
	resumed chan struct{} // signalled on resume, to restart the interval
	nextSub uint64
}

// headSent is when a head was handed to the subscribers' writers.
type headSent struct {
	number uint64
	at     int64 // unix nanoseconds
}

// headsSub is one newHeads subscription on one connection.
type headsSub struct {
	id  string
	out chan []byte // notifications, written in order by the connection's writer
	raw *floorConn  // in floor mode, the connection the node writes to itself
}

func newHeadsNode(interval time.Duration) *headsNode {
	n := &headsNode{interval: interval, blocks: map[uint64][]byte{}, byHash: map[common.Hash]uint64{}, subs: map[*headsSub]struct{}{}, resumed: make(chan struct{}, 1)}
	// The blocks before the first head, 12 s apart as on mainnet.
	now := uint64(time.Now().Unix())
	for b := uint64(headsStart - headsBack); b <= headsStart; b++ {
		n.add(b, now-12*(headsStart-b))
	}
	return n
}

// add makes block b, a child of the last one, and keeps its header JSON.
func (n *headsNode) add(b, at uint64) []byte {
	h := fakeHeader(b, at)
	if n.last != nil {
		h.ParentHash = n.last.Hash()
	}
	js, err := json.Marshal(h)
	if err != nil {
		panic(err) // a header always marshals
	}
	n.blocks[b], n.last = js, h
	n.byHash[h.Hash()] = b
	return js
}

// word is a deterministic 32-byte value for a field of block b.
func word(b uint64, field string) common.Hash {
	return crypto.Keccak256Hash([]byte(field), binary.BigEndian.AppendUint64(nil, b))
}

// fakeHeader is a post-Prague mainnet-like header: every field geth sends
// in a newHeads notification, a dense bloom, a builder's extra data, 36M
// gas limit, blob gas. Made of the number, so every run sends the same
// bytes but the time.
func fakeHeader(b, at uint64) *types.Header {
	var bloom types.Bloom
	for i := 0; i < len(bloom); i += 32 {
		copy(bloom[i:], word(b, "bloom"+strconv.Itoa(i)).Bytes())
	}
	r := word(b, "numbers").Big()
	mod := func(m uint64) uint64 { return new(big.Int).Mod(r, new(big.Int).SetUint64(m)).Uint64() }
	blobGas, excess := mod(7)*131072, mod(1000)*1000
	withdrawals, beacon := word(b, "withdrawals"), word(b, "beacon")
	requests := types.EmptyRequestsHash
	return &types.Header{
		ParentHash:       word(b-1, "hash"),
		UncleHash:        types.EmptyUncleHash,
		Coinbase:         common.BytesToAddress(word(b, "miner").Bytes()),
		Root:             word(b, "state"),
		TxHash:           word(b, "transactions"),
		ReceiptHash:      word(b, "receipts"),
		Bloom:            bloom,
		Difficulty:       new(big.Int),
		Number:           new(big.Int).SetUint64(b),
		GasLimit:         36_000_000,
		GasUsed:          12_000_000 + mod(24_000_000),
		Time:             at,
		Extra:            []byte("beaverbuild.org"),
		MixDigest:        word(b, "prevrandao"),
		BaseFee:          new(big.Int).SetUint64(500_000_000 + mod(20_000_000_000)),
		WithdrawalsHash:  &withdrawals,
		BlobGasUsed:      &blobGas,
		ExcessBlobGas:    &excess,
		ParentBeaconRoot: &beacon,
		RequestsHash:     &requests,
	}
}

// fakeHeadsNode runs the node on listen, making a head every interval,
// and prints its address. It runs as a child process, stopped by its
// parent's signal.
func fakeHeadsNode(listen, interval string, floor bool) error {
	d, err := time.ParseDuration(interval)
	if err != nil || d <= 0 {
		return fmt.Errorf("interval %q: want a positive duration", interval)
	}
	n := newHeadsNode(d)
	n.floor = floor
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	go n.produce(context.Background())
	return http.Serve(ln, n)
}

// produce makes a head every interval while not paused, until ctx ends.
func (n *headsNode) produce(ctx context.Context) {
	t := time.NewTicker(n.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			n.next()
		case <-n.resumed:
			t.Reset(n.interval)
		}
	}
}

// next makes the next head and hands it to every subscriber's writer; the
// send time is taken just before.
func (n *headsNode) next() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.paused {
		return
	}
	b := n.last.Number.Uint64() + 1
	js := n.add(b, max(uint64(time.Now().Unix()), n.last.Time+1))
	n.sent = append(n.sent, headSent{number: b, at: time.Now().UnixNano()})
	if n.floor {
		subs := make([]*headsSub, 0, len(n.subs))
		for s := range n.subs {
			subs = append(subs, s)
		}
		writeFloor(subs, js)
		return
	}
	for s := range n.subs {
		msg := make([]byte, 0, len(js)+100)
		msg = append(msg, `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"`...)
		msg = append(msg, s.id...)
		msg = append(msg, `","result":`...)
		msg = append(msg, js...)
		msg = append(msg, "}}"...)
		select {
		case s.out <- msg:
		default: // a subscriber 64 heads behind misses heads, as with geth
		}
	}
}

func (n *headsNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
		n.serveWS(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/sent":
		n.mu.Lock()
		var b []byte
		for _, s := range n.sent {
			b = fmt.Appendf(b, "%d %d\n", s.number, s.at)
		}
		n.mu.Unlock()
		w.Write(b)
	case r.Method == http.MethodPost && (r.URL.Path == "/pause" || r.URL.Path == "/resume"):
		n.mu.Lock()
		n.paused = r.URL.Path == "/pause"
		head := n.last.Number.Uint64()
		n.mu.Unlock()
		if r.URL.Path == "/resume" {
			select {
			case n.resumed <- struct{}{}:
			default:
			}
		}
		fmt.Fprintln(w, head)
	case r.Method == http.MethodPost:
		n.serveHTTP(w, r)
	default:
		http.Error(w, "POST JSON-RPC, GET /sent, POST /pause or /resume, or a WebSocket", http.StatusMethodNotAllowed)
	}
}

// serveHTTP answers a JSON-RPC call or batch.
func (n *headsNode) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	out, ok := answerBody(nil, body, n.answer)
	if !ok {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// answer appends the answer to a call (not a subscription).
func (n *headsNode) answer(out []byte, req fakeRequest) []byte {
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

// result is the result of a call, nil for a method the node does not have.
func (n *headsNode) result(req fakeRequest) []byte {
	switch req.Method {
	case "eth_chainId":
		return []byte(`"0x1"`)
	case "net_version":
		return []byte(`"1"`)
	case "eth_syncing":
		return []byte(`false`)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	head := n.last.Number.Uint64()
	switch req.Method {
	case "eth_blockNumber":
		return []byte(`"0x` + strconv.FormatUint(head, 16) + `"`)
	case "eth_getBlockByHash":
		var hash common.Hash
		if len(req.Params) > 0 {
			json.Unmarshal(req.Params[0], &hash)
		}
		b, ok := n.byHash[hash]
		if !ok {
			return []byte("null")
		}
		js := n.blocks[b]
		return append(append([]byte(nil), js[:len(js)-1]...), `,"size":"0x2a5","transactions":[],"uncles":[],"withdrawals":[]}`...)
	case "eth_getBlockByNumber":
		var tag string
		if len(req.Params) > 0 {
			json.Unmarshal(req.Params[0], &tag)
		}
		b := head
		switch tag {
		case "latest", "pending", "":
		case "safe":
			b = head - 32
		case "finalized":
			b = head - 64
		case "earliest":
			b = 0
		default:
			v, err := strconv.ParseUint(strings.TrimPrefix(tag, "0x"), 16, 64)
			if err != nil {
				return []byte("null")
			}
			b = v
		}
		js, ok := n.blocks[b]
		if !ok {
			return []byte("null")
		}
		// A block without transactions is its header and empty lists.
		return append(append([]byte(nil), js[:len(js)-1]...), `,"size":"0x2a5","transactions":[],"uncles":[],"withdrawals":[]}`...)
	}
	return nil
}

// serveWS serves one WebSocket: calls as over HTTP, and eth_subscribe
// newHeads / eth_unsubscribe.
func (n *headsNode) serveWS(w http.ResponseWriter, r *http.Request) {
	fh := &floorHijacker{ResponseWriter: w}
	if n.floor {
		w = fh
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	mine := map[string]*headsSub{}
	defer func() {
		n.mu.Lock()
		for _, s := range mine {
			delete(n.subs, s)
		}
		n.mu.Unlock()
	}()
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		var req fakeRequest
		if err := json.Unmarshal(msg, &req); err != nil {
			return
		}
		var kind, id string
		if len(req.Params) > 0 {
			json.Unmarshal(req.Params[0], &kind)
			id = kind
		}
		var out []byte
		switch req.Method {
		case "eth_subscribe":
			if kind != "newHeads" {
				out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"this node only has newHeads"}}`, req.ID)
				break
			}
			n.mu.Lock()
			n.nextSub++
			s := &headsSub{id: "0x" + word(n.nextSub, "subscription").Hex()[2:34], out: make(chan []byte, 64), raw: fh.conn}
			n.mu.Unlock()
			out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":"%s"}`, req.ID, s.id)
			if err := c.Write(ctx, websocket.MessageText, out); err != nil {
				return
			}
			out = nil
			// Registered after the answer, so that no head overtakes it.
			mine[s.id] = s
			n.mu.Lock()
			n.subs[s] = struct{}{}
			n.mu.Unlock()
			if n.floor {
				break
			}
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case m := <-s.out:
						if c.Write(ctx, websocket.MessageText, m) != nil {
							cancel()
							return
						}
					}
				}
			}()
		case "eth_unsubscribe":
			s, ok := mine[id]
			if ok {
				delete(mine, id)
				n.mu.Lock()
				delete(n.subs, s)
				n.mu.Unlock()
			}
			out = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":%t}`, req.ID, ok)
		default:
			out = n.answer(nil, req)
		}
		if out != nil && c.Write(ctx, websocket.MessageText, out) != nil {
			return
		}
	}
}
