package server

import (
	"bufio"
	"io"
	"os"
	"sync"
	"time"
)

// logFlushInterval is how long a log line may wait in the buffer.
const logFlushInterval = 100 * time.Millisecond

// logBuffer collects log lines for a file (standard error) and writes them
// in batches: with an access-log line per call, one write(2) per line cost
// more than the line's formatting (docs/benchmarks.md, issue 16). Lines
// wait at most logFlushInterval; Close writes what is left.
type logBuffer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

// newLogBuffer buffers w and flushes it every interval until Close.
func newLogBuffer(w io.Writer, interval time.Duration) *logBuffer {
	b := &logBuffer{w: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
				b.Flush()
			}
		}
	}()
	return b
}

// Write buffers p, a whole line from a slog handler.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

// Flush writes what is buffered.
func (b *logBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Flush()
}

// Close stops the flushing and writes what is left.
func (b *logBuffer) Close() error {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	<-b.done
	return b.Flush()
}

// bufferLogs returns w buffered when it is a file (a terminal or a pipe to
// a log collector), and the buffer to close; other writers, such as a
// test's, are written through.
func bufferLogs(w io.Writer) (io.Writer, io.Closer) {
	if _, ok := w.(*os.File); !ok {
		return w, nil
	}
	b := newLogBuffer(w, logFlushInterval)
	return b, b
}
