package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/stirank/stirank/transforms"
)

// isTerminal reports whether f is a character device (a terminal, not a file or a pipe).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// showProgress shows the job's progress on w until the returned stop is called: with every 0 (a
// terminal) one status line redrawn twice a second and cleared at the end, else (a log file, a
// pipe) a line every interval, so a long job run in the background says how far it is and when it
// will end.
func showProgress(w io.Writer, p *transforms.Progress, every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		terminal := every <= 0
		if terminal {
			every = 500 * time.Millisecond
		}
		tick := time.NewTicker(every)
		defer tick.Stop()
		last := 0
		for {
			select {
			case <-done:
				if terminal {
					fmt.Fprintf(w, "\r%s\r", strings.Repeat(" ", last))
				}
				return
			case <-tick.C:
				line := progressLine(p.Snapshot())
				if !terminal {
					fmt.Fprintln(w, line)
					continue
				}
				pad := max(last-len(line), 0)
				fmt.Fprintf(w, "\r%s%s", line, strings.Repeat(" ", pad))
				last = len(line)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// progressLine is the status line: the round under way and its tasks done, the ranks still
// racing, steps per second and the round's ETA.
func progressLine(s transforms.ProgressSnapshot) string {
	var b strings.Builder
	if s.Round < 0 {
		b.WriteString("start")
	} else {
		fmt.Fprintf(&b, "round %d", s.Round)
	}
	fmt.Fprintf(&b, ": tasks %d/%d, ranks %s racing (of %d)", s.TasksDone, s.Tasks, compactRanks(s.Live), s.Ranks)
	fmt.Fprintf(&b, ", %s steps/s", humanRate(s.StepsPerSecond()))
	if s.ETA > 0 {
		fmt.Fprintf(&b, ", round ETA %s", s.ETA.Round(time.Second))
	} else if s.TasksDone < s.Tasks {
		b.WriteString(", round ETA …")
	}
	fmt.Fprintf(&b, ", %s elapsed", s.Elapsed.Round(time.Second))
	return b.String()
}

// compactRanks writes sorted ranks as 1-3,5.
func compactRanks(rs []int) string {
	var parts []string
	for i := 0; i < len(rs); {
		j := i
		for j+1 < len(rs) && rs[j+1] == rs[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", rs[i], rs[j]))
		} else {
			parts = append(parts, fmt.Sprint(rs[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func humanRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
