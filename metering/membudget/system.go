package membudget

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// SystemMemory returns the memory this process may use: the smaller of
// the machine's total memory and the limit of its control group (cgroup
// v2 memory.max or v1 memory.limit_in_bytes), or 0 when neither can be
// read. A container's limit is what counts, not the host's memory.
func SystemMemory() int64 {
	total := memTotal("/proc/meminfo")
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if n := cgroupLimit(p); n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

// memTotal reads MemTotal from a meminfo file, in bytes.
func memTotal(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "MemTotal:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// cgroupLimit reads a cgroup memory limit file: a number of bytes, or
// "max" (no limit). cgroup v1 writes a huge number for no limit, which
// the caller's min with the machine's memory takes care of.
func cgroupLimit(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// Default budgets, as shares of SystemMemory: the process may hold an
// eighth of the memory in what clients and nodes make it hold (the rest
// is the Go runtime's headroom, the cache, the devnets and the kernel's
// socket buffers), and the runtime's soft limit is set at half.
const (
	ProcessShare       = 8
	RuntimeLimitShare  = 2
	fallbackSystemSize = 4 << 30 // when memory cannot be read
)

// DefaultProcessLimit is the process budget when none is configured: an
// eighth of SystemMemory (512 MiB when it cannot be read).
func DefaultProcessLimit() int64 {
	m := SystemMemory()
	if m <= 0 {
		m = fallbackSystemSize
	}
	return m / ProcessShare
}
