package main

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico/config"
)

// freezer is a TCP proxy in front of a node that can freeze: it then
// stops moving bytes either way but keeps every socket open, as a node
// stopped with SIGSTOP does. It injects that fault; the node behind it is
// real.
type freezer struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newFreezer(t *testing.T, target string) *freezer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, up)
			f.mu.Unlock()
			go f.pipe(c, up)
			go f.pipe(up, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		f.frozen.Store(false)
		f.mu.Lock()
		for _, c := range f.conns {
			c.Close()
		}
		f.mu.Unlock()
	})
	return f
}

// pipe copies src to dst, holding what it read while frozen.
func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for f.frozen.Load() {
			time.Sleep(5 * time.Millisecond) // the fault: nothing moves
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				dst.Close()
			}
			return
		}
	}
}

func (f *freezer) addr() string { return f.ln.Addr().String() }

// TestFrozenSubscriptionNode: the node that holds the upstream newHeads
// subscription of 100 clients freezes (its sockets stay open, nothing
// comes back, as under SIGSTOP); every client keeps receiving every head,
// in order and linked, within two block times, from the other node of
// the same chain, and the subscription is moved there.
func TestFrozenSubscriptionNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const blockTime = time.Second
	node := startAnvil(t, ctx, "--block-time", "1")
	target := strings.TrimPrefix(node.URL(), "http://")
	a, b := newFreezer(t, target), newFreezer(t, target)
	cfg := config.DefaultConfig()
	cfg.Keys = []config.Key{{Name: "frozen", Key: "frozen0123456789abcdef0123456789", DailyCredits: 1e12}}
	cfg.Networks = []config.Network{{Name: "anvil", Family: "evm", PollInterval: 100 * time.Millisecond,
		Upstreams: []config.Upstream{{Name: "a", URL: "ws://" + a.addr()}, {Name: "b", URL: "ws://" + b.addr()}}}}
	s := start(t, cfg)

	const clients = 100
	type arrival struct {
		streamHead
		at time.Time
	}
	got := make([][]arrival, clients)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range clients {
		c, _, err := websocket.Dial(ctx, s.wsURL(t, "anvil"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		c.SetReadLimit(1 << 20)
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":1,"method":"eth_subscribe","params":["newHeads"]}`)); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for {
				_, msg, err := c.Read(ctx)
				if err != nil {
					return
				}
				h, ok := newHeadOf(msg)
				if !ok {
					continue
				}
				mu.Lock()
				got[i] = append(got[i], arrival{h, time.Now()})
				mu.Unlock()
			}
		})
	}
	count := func(i int) int {
		mu.Lock()
		defer mu.Unlock()
		return len(got[i])
	}
	// Every client has heads before the freeze.
	for i := range clients {
		for count(i) < 2 {
			select {
			case <-ctx.Done():
				t.Fatalf("client %d got no heads", i)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	frozenAt := time.Now()
	a.frozen.Store(true)
	// Six blocks of time with node a frozen.
	time.Sleep(6 * blockTime) // the scenario's length, not a synchronisation
	mu.Lock()
	defer mu.Unlock()
	for i, heads := range got {
		var after []arrival
		for j, h := range heads {
			if j > 0 && h.Parent != heads[j-1].Hash {
				t.Errorf("client %d: head %d does not link to head %d before it", i, h.Number, heads[j-1].Number)
				break
			}
			if h.at.After(frozenAt) {
				after = append(after, h)
			}
		}
		if len(after) < 4 {
			t.Errorf("client %d: %d heads in the %s after the freeze, want at least 4", i, len(after), 6*blockTime)
			continue
		}
		last := frozenAt
		for _, h := range after {
			if gap := h.at.Sub(last); gap > 2*blockTime {
				t.Errorf("client %d: head %d came %s after the one before (bound %s)", i, h.Number, gap.Round(time.Millisecond), 2*blockTime)
				break
			}
			last = h.at
		}
	}
	if !strings.Contains(s.logs.String(), "upstream subscription silent while the chain moves on: moving it") &&
		!strings.Contains(s.logs.String(), "upstream subscription ended; opening it again") {
		t.Error("the silent upstream subscription was not moved")
	}
}
