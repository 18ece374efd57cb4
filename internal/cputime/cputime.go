// Package cputime reads the CPU time the process has used, for benchmarks on machines shared with
// other work: unlike wall time, it does not count what other processes take.
package cputime

import (
	"syscall"
	"time"
)

// Now is the user + system CPU time of this process so far.
func Now() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
