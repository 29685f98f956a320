package network

import (
	"context"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// flights coalesces identical reads in flight: a read that arrives while
// the same method with the same params (after tags were pinned) is on its
// way to a node waits for that answer instead of sending its own. Each
// caller is still checked and charged on its own; only the node's work is
// shared. Only reads the family's rules call cacheable are coalesced:
// writes and calls with effects on a node never are.
type flights struct {
	mu    sync.Mutex
	calls map[string]*flight
}

// flight is one read on its way to a node, and who waits for it.
type flight struct {
	done    chan struct{}
	waiters int
	// Set before done is closed, for the waiters: a copy of the result
	// (the leader's own bytes go back to its transport's pool), the error,
	// and the node that answered.
	res  jsontext.Value
	err  error
	node string
}

// join returns the flight already under way for key and false, or starts
// one (the caller leads it and must call land) and returns true.
func (fs *flights) join(key string) (*flight, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.calls[key]; f != nil {
		f.waiters++
		return f, false
	}
	if fs.calls == nil {
		fs.calls = map[string]*flight{}
	}
	f := &flight{done: make(chan struct{})}
	fs.calls[key] = f
	return f, true
}

// land ends the leader's flight with its answer, giving the waiters a copy
// of it. Readers that arrive after land send their own call.
func (fs *flights) land(key string, f *flight, res jsontext.Value, err error, node string) {
	fs.mu.Lock()
	delete(fs.calls, key)
	waiters := f.waiters
	fs.mu.Unlock()
	if waiters > 0 {
		f.res, f.err, f.node = append(jsontext.Value(nil), res...), err, node
	}
	close(f.done)
}

// wait waits for a flight another caller leads; ctx is the waiter's own.
func (f *flight) wait(ctx context.Context) (jsontext.Value, error, string) {
	select {
	case <-f.done:
		return f.res, f.err, f.node
	case <-ctx.Done():
		return nil, ctx.Err(), ""
	}
}
