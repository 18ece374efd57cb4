// Command eta measures how right the ETA of a long `stirank select` run is. It runs the given
// stirank command with a progress line every second on a pipe, stamps each line as it arrives, and
// when the run ends compares every line's ETA after the first 10% of the run with the time that
// was actually left: it prints the worst and the mean error as a fraction of the time left (over
// the lines up to 90% of the run, where a second of rounding is not yet a large fraction) and as a
// fraction of the run's length (over every line after 10%).
//
//	go build -o /tmp/stirank ./cmd/stirank
//	go run ./bench/eta /tmp/stirank select --data D --ranks 16,32 --out OUT
package main

import (
	"bufio"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"regexp"
	"time"
)

// line is a progress line: when it arrived, and the elapsed time and the ETA it gave.
type line struct {
	at, elapsed, eta time.Duration
}

var progressRE = regexp.MustCompile(`ETA ([0-9hms.]+), ([0-9hms.]+) elapsed`)

func main() {
	log.SetFlags(0)
	if len(os.Args) < 3 {
		log.Fatal("usage: go run ./bench/eta STIRANK select FLAGS…")
	}
	cmd := exec.Command(os.Args[1], append(os.Args[2:], "--progress-every", "1s")...)
	cmd.Stdout = os.Stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	var lines []line
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		m := progressRE.FindStringSubmatch(sc.Text())
		if m == nil {
			fmt.Fprintln(os.Stderr, sc.Text())
			continue
		}
		eta, err1 := time.ParseDuration(m[1])
		elapsed, err2 := time.ParseDuration(m[2])
		if err1 == nil && err2 == nil {
			lines = append(lines, line{time.Since(start), elapsed, eta})
		}
	}
	if err := cmd.Wait(); err != nil {
		log.Fatalf("%s: %v", os.Args[1], err)
	}
	end := time.Since(start)
	if len(lines) == 0 {
		log.Fatal("no progress line with an ETA: a run of a few seconds, or not a select command")
	}
	// The tracker starts after the data are read; its clock is the run's.
	offset := lines[0].at - lines[0].elapsed
	run := end - offset
	var worstLeft, sumLeft, worstRun, sumRun float64
	nLeft, nRun := 0, 0
	var worstAt line // the line of the worst error as a fraction of the time left
	for _, l := range lines {
		if l.elapsed < run/10 {
			continue
		}
		left := end - l.at
		errRun := math.Abs((l.eta - left).Seconds()) / run.Seconds()
		worstRun, sumRun, nRun = max(worstRun, errRun), sumRun+errRun, nRun+1
		if l.elapsed <= run*9/10 {
			errLeft := math.Abs((l.eta - left).Seconds()) / left.Seconds()
			if errLeft > worstLeft {
				worstLeft, worstAt = errLeft, l
			}
			sumLeft, nLeft = sumLeft+errLeft, nLeft+1
		}
	}
	fmt.Printf("run %s; %d progress lines after the first 10%%\n", run.Round(time.Second), nRun)
	if nLeft > 0 {
		fmt.Printf("ETA error as a fraction of the time left (10%%–90%% of the run): worst %.0f%% (at %s: ETA %s, time left %s), mean %.0f%%\n",
			100*worstLeft, worstAt.elapsed.Round(time.Second), worstAt.eta, (end - worstAt.at).Round(time.Second), 100*sumLeft/float64(nLeft))
	}
	if nRun > 0 {
		fmt.Printf("ETA error as a fraction of the run (after 10%%): worst %.0f%%, mean %.0f%%\n", 100*worstRun, 100*sumRun/float64(nRun))
	}
	for _, f := range []float64{0.1, 0.25, 0.5, 0.75} {
		for _, l := range lines {
			if l.elapsed >= time.Duration(f*float64(run)) {
				fmt.Printf("  at %3.0f%% (%s): ETA %s, time left %s\n", 100*f, l.elapsed.Round(time.Second), l.eta, (end - l.at).Round(time.Second))
				break
			}
		}
	}
}
