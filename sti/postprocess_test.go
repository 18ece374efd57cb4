package sti

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stirank/stirank/evidence"
)

// spy is a post-processor of the tests: it keeps all but the first of the records kept before
// it and remembers the records its Summarize was given.
type spy struct{ saw []float64 }

func (*spy) Keep(_ []float64, first int) int { return first + 1 }

func (s *spy) Summarize(c ChainRecords, sum *evidence.ChainSummary) { s.saw = c.Kept() }

var testSpy = &spy{}

func init() { registerPost("test-spy", testSpy) }

// transientRecords are 200 records of a chain whose first 40 climb from 50 below to its level.
func transientRecords() []float64 {
	y := make([]float64, 200)
	for k := range y {
		y[k] = math.Sin(float64(k) * 1.7) // stationary, deterministic noise
		if k < 40 {
			y[k] -= 50 * float64(40-k) / 40
		}
	}
	return y
}

// The summary reads the records every post-processor keeps, in Config.Post's order, and each
// post-processor's estimates read them too, whichever comes first in the list: truncation drops
// the transient exactly as evidence.Truncation finds it, and the summary's plain fields are those
// of the records kept.
func TestPostProcessorsNarrowThenSummarize(t *testing.T) {
	y := transientRecords()
	cut := evidence.Truncation(y)
	if cut == 0 {
		t.Fatal("the test's transient is not found")
	}
	for _, post := range [][]string{nil, {TruncateName}, {TruncateName, "test-spy"}, {"test-spy", TruncateName}} {
		p := &Problem{Config: Config{Post: post}}
		testSpy.saw = nil
		sum, err := p.summarize(context.Background(), evidence.ChainSummary{Rank: 2}, "", y, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		first := 0
		switch {
		case slices.Equal(post, []string{TruncateName, "test-spy"}):
			first = cut + 1
		case slices.Equal(post, []string{"test-spy", TruncateName}):
			first = 1 + evidence.Truncation(y[1:])
		case len(post) == 1:
			first = cut
		}
		kept := y[first:]
		mean, m2, ess := evidence.Summarize(kept)
		if sum.Count != len(kept) || sum.Mean != mean || sum.M2 != m2 || sum.ESS != ess {
			t.Errorf("%v: summary of %d records, mean %v, want %d, %v", post, sum.Count, sum.Mean, len(kept), mean)
		}
		if slices.Contains(post, "test-spy") && !slices.Equal(testSpy.saw, kept) {
			t.Errorf("%v: the spy's estimate read %d records, the summary %d", post, len(testSpy.saw), len(kept))
		}
	}
}

// Config.Post names registered post-processors, each once; With adds and removes one without
// changing the list it was called on (AtRank's copies share it), and SteinBelow takes the control
// variates off the ranks from it up.
func TestConfigPost(t *testing.T) {
	c := Default("nmf")
	if !c.Runs(TruncateName) || !c.Runs(SteinName) {
		t.Fatalf("nmf's defaults run %v", c.Post)
	}
	before := slices.Clone(c.Post)
	off := c.With(SteinName, false)
	if off.Runs(SteinName) || !off.Runs(TruncateName) || !slices.Equal(c.Post, before) {
		t.Errorf("without stein: %v, and the original list became %v", off.Post, c.Post)
	}
	if on := off.With(SteinName, true); !slices.Equal(on.Post, []string{TruncateName, SteinName}) {
		t.Errorf("stein put back: %v", on.Post)
	}
	if c.AtRank(c.SteinBelow).Runs(SteinName) || !slices.Equal(c.Post, before) {
		t.Errorf("rank %d runs %v", c.SteinBelow, c.AtRank(c.SteinBelow).Post)
	}
	for _, bad := range [][]string{{"no-such"}, {TruncateName, TruncateName}} {
		b := c
		b.Post = bad
		if err := b.Validate(); err == nil || !strings.Contains(err.Error(), "post-processor") {
			t.Errorf("post-processors %v: %v", bad, err)
		}
	}
}
