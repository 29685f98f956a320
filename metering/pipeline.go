package metering

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// pipeline sends the Redis commands of concurrent callers together: one
// goroutine takes whatever is queued and sends it as one pipeline, so a
// busy gateway pays one round trip and two system calls per batch instead
// of per command. Each script is still atomic on its own. The counter's
// scripts (Redis) and the shared bounds' operations (SharedBounds) each go
// through one.
type pipeline struct {
	rdb redis.UniversalClient
	// scripts are loaded when the goroutine starts, and again after a
	// batch found the server had lost them (a restart).
	scripts []*redis.Script
	// timeout bounds one round trip.
	timeout time.Duration
	// linger is how long a batch nobody waits for (releases, renewals)
	// waits for a command somebody does, to share its trip; 0: not at
	// all.
	linger time.Duration
	// tick, when set, runs on the goroutine every tickEvery, between
	// batches (the shared bounds' renewals).
	tick      func()
	tickEvery time.Duration

	ops       chan *pipeOp
	stop      chan struct{}
	done      chan struct{}
	startOnce sync.Once
	stopOnce  sync.Once
	// trips counts round trips and sent the commands they carried.
	trips, sent atomic.Int64
}

// pipeOp is one command for the pipeline. done is nil when nobody waits
// for it.
type pipeOp struct {
	do   func(ctx context.Context, p redis.Pipeliner) redis.Cmder
	cmd  redis.Cmder
	done chan struct{}
}

// maxPipeline bounds the commands sent in one pipeline.
const maxPipeline = 256

// errClosed answers what is asked of Redis after Close (the counter's
// or the shared bounds').
var errClosed = errors.New("metering: redis closed")

func newPipeline(rdb redis.UniversalClient, timeout, linger time.Duration, scripts ...*redis.Script) *pipeline {
	return &pipeline{rdb: rdb, scripts: scripts, timeout: timeout, linger: linger,
		ops: make(chan *pipeOp, maxPipeline), stop: make(chan struct{}), done: make(chan struct{})}
}

// run runs script on keys (all in one slot) with the commands that wait
// with it, and waits for its answer even if ctx ends meanwhile (the
// script may have charged). A script the server lost is sent again in
// full.
func (p *pipeline) run(ctx context.Context, script *redis.Script, keys []string, args ...any) ([]int64, error) {
	op := &pipeOp{done: make(chan struct{}), do: func(ctx context.Context, pl redis.Pipeliner) redis.Cmder {
		return script.EvalSha(ctx, pl, keys, args...)
	}}
	p.startOnce.Do(func() { go p.loop() })
	select {
	case p.ops <- op:
	case <-p.stop:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-op.done:
	case <-p.done:
		select {
		case <-op.done:
		default:
			return nil, errClosed
		}
	}
	res, err := op.cmd.(*redis.Cmd).Int64Slice()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
		defer cancel()
		res, err = script.Run(ctx, p.rdb, keys, args...).Int64Slice()
	}
	return res, err
}

// send queues op, for which nobody waits; false after Close.
func (p *pipeline) send(op *pipeOp) bool {
	p.startOnce.Do(func() { go p.loop() })
	select {
	case p.ops <- op:
		return true
	case <-p.stop:
		return false
	}
}

// close sends what is queued and stops the goroutine.
func (p *pipeline) close() {
	p.stopOnce.Do(func() {
		close(p.stop)
		p.startOnce.Do(func() { close(p.done) }) // never started
		<-p.done
	})
}

// loop sends queued commands in batches, one round trip each, until
// close.
func (p *pipeline) loop() {
	defer close(p.done)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	p.load(ctx) // else the first batch loads them
	cancel()
	var tick <-chan time.Time
	if p.tick != nil {
		t := time.NewTicker(p.tickEvery)
		defer t.Stop()
		tick = t.C
	}
	batch := make([]*pipeOp, 0, maxPipeline)
	for {
		batch = batch[:0]
		select {
		case <-p.stop:
			p.drain(batch)
			return
		case <-tick:
			p.tick()
			continue
		case op := <-p.ops:
			batch = append(batch, op)
		}
		p.exec(p.fill(batch))
	}
}

// load loads the scripts.
func (p *pipeline) load(ctx context.Context) {
	for _, s := range p.scripts {
		_ = s.Load(ctx, p.rdb).Err()
	}
}

// fill adds the commands waiting to batch. A batch nobody waits for
// waits up to linger for a command somebody does, to share its trip.
func (p *pipeline) fill(batch []*pipeOp) []*pipeOp {
	waited := batch[0].done != nil || p.linger == 0
	var timer <-chan time.Time
	for len(batch) < maxPipeline {
		select {
		case op := <-p.ops:
			batch = append(batch, op)
			waited = waited || op.done != nil
			continue
		default:
		}
		if waited {
			return batch
		}
		if timer == nil {
			timer = time.After(p.linger)
		}
		select {
		case op := <-p.ops:
			batch = append(batch, op)
			waited = op.done != nil
		case <-timer:
			return batch
		case <-p.stop:
			return batch
		}
	}
	return batch
}

// drain sends what is queued at close.
func (p *pipeline) drain(batch []*pipeOp) {
	for {
		select {
		case op := <-p.ops:
			batch = append(batch, op)
			continue
		default:
		}
		break
	}
	for len(batch) > 0 {
		n := min(len(batch), maxPipeline)
		p.exec(batch[:n])
		batch = batch[n:]
	}
}

// exec sends batch (at most maxPipeline) as one pipeline and answers
// those who wait.
func (p *pipeline) exec(batch []*pipeOp) {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	pl := p.rdb.Pipeline()
	for _, op := range batch {
		op.cmd = op.do(ctx, pl)
	}
	_, _ = pl.Exec(ctx) // errors are per command
	p.trips.Add(1)
	p.sent.Add(int64(len(batch)))
	lost := false
	for _, op := range batch {
		if err := op.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			lost = true
		}
		if op.done != nil {
			close(op.done)
		}
	}
	if lost {
		p.load(ctx)
	}
}
