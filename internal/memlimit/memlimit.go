// Package memlimit says how much memory a stirank process may use, so that inputs and flags whose
// needs exceed it are refused up front with an error naming them, instead of ending in a fatal
// out-of-memory with a stack trace (or in swapping) part way through.
package memlimit

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Limit returns the memory this process may use, in bytes, and what sets it: the smallest of the
// machine's physical memory, the cgroup (container) memory limit and the address-space limit
// (ulimit -v). Each source that cannot be read is skipped; with none, Limit returns MaxInt64.
// Physical memory, not the memory free right now, keeps the answer the same from run to run.
func Limit() (bytes int64, what string) {
	bytes, what = math.MaxInt64, "no known limit"
	if n, ok := meminfoTotal(); ok && n < bytes {
		bytes, what = n, "the machine's memory"
	}
	if n, ok := cgroupMax(); ok && n < bytes {
		bytes, what = n, "the container's memory limit"
	}
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_AS, &rl) == nil && rl.Cur != math.MaxUint64 && rl.Cur < uint64(bytes) {
		bytes, what = int64(rl.Cur), "the address-space limit (ulimit -v)"
	}
	return bytes, what
}

// Check returns an error naming subject when need bytes exceed Limit.
func Check(subject string, need float64) error {
	limit, what := Limit()
	if need <= float64(limit) {
		return nil
	}
	return fmt.Errorf("%s needs about %s of memory, more than %s (%s)", subject, Size(need), what, Size(float64(limit)))
}

// Size formats a number of bytes for error messages.
func Size(b float64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.3g TB", b/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.3g GB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.3g MB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f bytes", b)
}

func meminfoTotal() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil && kb > 0
		}
	}
	return 0, false
}

// cgroupMax reads the cgroup v2 memory limit of the process's own cgroup ("max" when unlimited).
func cgroupMax() (int64, bool) {
	data, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	return n, err == nil && n > 0
}
