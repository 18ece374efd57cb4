package sti

import "github.com/stirank/stirank/evidence"

// TruncateName is the name of the Truncation post-processor in Config.Post.
const TruncateName = "truncate"

func init() { registerPost(TruncateName, Truncation{}) }

// Truncation is the post-processor that finds the end of a chain's start's transient in its own
// records (evidence.Truncation, MSER-5) and leaves the records before it out of the summary, at
// most half of them. It sweeps none to replace them, so a rank's steps are those planned
// (ChainSteps) whatever the transients.
type Truncation struct{}

var _ PostProcessor = Truncation{}

// Keep returns the end of the transient of the records kept so far.
func (Truncation) Keep(records []float64, first int) int {
	if len(records) == first {
		return first
	}
	return first + evidence.Truncation(records[first:])
}

// Summarize adds nothing: the summary's plain fields describe the records kept.
func (Truncation) Summarize(ChainRecords, *evidence.ChainSummary) {}
