package gateway_test

import (
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/porticohq/portico"
	"github.com/porticohq/portico/gateway"
)

// BenchmarkTrickleAttack is the security review's slot attack (issue 33)
// at the default connection limits: 8 client addresses × 512 connections,
// each sending 20 bytes of a request head and then a byte every 3 s, hold
// all 4,096 slots; then 20 requests from 10 new addresses are sent at 1 s
// (the trickling connections younger than limits.header_timeout, 10 s)
// and 20 more at 12 s (older). It reports the share of each served. Run
// it once (it takes 13 s and 4,000 file descriptors each side):
//
//	go test ./gateway -run '^$' -bench TrickleAttack -benchtime 1x
func BenchmarkTrickleAttack(b *testing.B) {
	const perAddr, addrs = 512, 8
	d := portico.DefaultLimits()
	for b.Loop() {
		e := newEnv(b, options{limits: func(l *gateway.Limits) {
			l.MaxConnections, l.MaxConnectionsPerIP, l.HeaderTimeout, l.ReadTimeout = d.MaxConnections, d.MaxConnectionsPerIP, d.HeaderTimeout, d.ReadTimeout
		}})
		target := strings.TrimPrefix(e.srv.URL, "http://")
		dialFrom := func(n int) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(n))}, Timeout: 5 * time.Second}
			return d.Dial("tcp", target)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for a := range addrs {
			for range perAddr {
				c, err := dialFrom(10 + a)
				if err != nil {
					b.Fatal(err)
				}
				c.Write([]byte("POST /v3/" + testKey[:11])) // 20 bytes
				wg.Go(func() {
					defer c.Close()
					tick := time.NewTicker(3 * time.Second)
					defer tick.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tick.C:
							if _, err := c.Write([]byte("a")); err != nil {
								return
							}
						}
					}
				})
			}
		}
		start := time.Now()
		body := `{"jsonrpc":"2.0","id":1,"method":"real_echo","params":[1]}`
		served := func(n int) bool {
			c, err := dialFrom(n)
			if err != nil {
				return false
			}
			defer c.Close()
			c.Write([]byte("POST /v3/" + testKey + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body))
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 4096)
			k, _ := c.Read(buf)
			return strings.HasPrefix(string(buf[:k]), "HTTP/1.1 200")
		}
		for _, at := range []time.Duration{time.Second, 12 * time.Second} {
			time.Sleep(time.Until(start.Add(at)))
			ok := 0
			for i := range 20 {
				if served(100 + i%10) {
					ok++
				}
			}
			b.ReportMetric(float64(ok)/20, "served-at-"+at.String())
		}
		close(stop)
		wg.Wait()
	}
}

// BenchmarkIdleSubscriberHeap is the Go heap one idle newHeads subscriber
// holds, its client and its server side together (both are in this
// process): 3,000 subscribers opened after 200 that warm up the pools,
// measured after two collections. Run it once:
//
//	go test ./gateway -run '^$' -bench IdleSubscriberHeap -benchtime 1x -count 3
func BenchmarkIdleSubscriberHeap(b *testing.B) {
	const n, warm = 3000, 200
	for b.Loop() {
		chain := newFakeChain(b, time.Hour, 10)
		node := newFakeWSNode(b, chain)
		_, url := subsEnv(b, func(l *gateway.Limits) {
			l.MaxWSConnections, l.MaxConnections, l.MaxSubscriptionsPerKey = 2*(n+warm), 2*(n+warm), 2*(n+warm)
		}, node)
		conns := make([]*websocket.Conn, 0, n+warm)
		var ms runtime.MemStats
		for i := range n + warm {
			if i == warm {
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&ms)
			}
			conns = append(conns, subscribeHeads(b, url))
		}
		before := ms.HeapAlloc
		time.Sleep(500 * time.Millisecond) // let the last answers' buffers go
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapAlloc-before)/n, "B/subscriber")
		runtime.KeepAlive(conns)
	}
}
