package sti

import (
	"fmt"
	"maps"
	"slices"

	"github.com/stirank/stirank/evidence"
)

// A PostProcessor transforms a chain's records into its summary (Problem.summarize). Config.Post
// names the ones a chain runs; each is one file that registers itself (registerPost), as
// truncate.go and controls.go do. The summary is made in two passes over the configured list, so
// that no post-processor's estimate reads records another one drops: Keep narrows the records
// the summary keeps, then Summarize adds what the post-processor estimates from them to the
// summary, whose plain fields (Count, Mean, M2, ESS, HalfMean) already describe them.
//
// The zero value of every implementation is the post-processor with its defaults.
type PostProcessor interface {
	// Keep returns the index of the first of records to keep, given that the post-processors
	// before it keep records[first:]; it returns first to keep them all.
	Keep(records []float64, first int) int
	// Summarize adds the post-processor's estimates from c's kept records to sum.
	Summarize(c ChainRecords, sum *evidence.ChainSummary)
}

// ChainRecords is a chain's records as its post-processors read them.
type ChainRecords struct {
	// All are the chain's log-likelihood records after its burn-in, oldest first; the summary
	// reads All[First:].
	All   []float64
	First int
	// controls are the values recorded beside each record (recorder), nil where none were.
	controls *controls
}

// Kept are the records the summary reads.
func (c ChainRecords) Kept() []float64 { return c.All[c.First:] }

// A recorder is a PostProcessor that needs values of its own recorded beside each record as a
// Gibbs chain runs (advance), which a chain's state carries from round to round
// (ChainState.Controls, CondVar) and its Summarize reads from ChainRecords: the control variates.
type recorder interface {
	PostProcessor
	// controls returns what records them for a chain of mv's model whose state is s, nil where
	// there is nothing to record for it.
	controls(mv mover, s *ChainState) *controls
}

// posts are the registered post-processors by name.
var posts = map[string]PostProcessor{}

// registerPost makes p available under name to Config.Post. It panics on a name taken.
func registerPost(name string, p PostProcessor) { register(posts, "post-processor", name, p) }

// register adds v to the registry r of that kind of plug-in under name, and panics on a name
// taken: two files registering one name is a bug of the build.
func register[T any](r map[string]T, kind, name string, v T) {
	if _, ok := r[name]; ok {
		panic(fmt.Sprintf("sti: %s %q registered twice", kind, name))
	}
	r[name] = v
}

// PostNames lists the registered post-processors' names, sorted.
func PostNames() []string { return slices.Sorted(maps.Keys(posts)) }

// Runs reports whether the chains of c run the post-processor of that name.
func (c Config) Runs(name string) bool { return slices.Contains(c.Post, name) }

// With returns c with the post-processor of that name run, after the others, or not run; c's
// list is not changed.
func (c Config) With(name string, run bool) Config {
	c.Post = slices.DeleteFunc(slices.Clone(c.Post), func(n string) bool { return n == name })
	if run {
		c.Post = append(c.Post, name)
	}
	return c
}

// validatePost checks that Config.Post names registered post-processors, each once, and at most
// one recorder, the one whose values a chain's state carries.
func (c Config) validatePost() error {
	recorders := 0
	for i, name := range c.Post {
		p, ok := posts[name]
		switch {
		case !ok:
			return fmt.Errorf("no post-processor %q (there are %v)", name, PostNames())
		case slices.Contains(c.Post[:i], name):
			return fmt.Errorf("post-processor %q listed twice", name)
		}
		if _, ok := p.(recorder); ok {
			recorders++
		}
	}
	if recorders > 1 {
		return fmt.Errorf("post-processors %v record %d sets of values beside each record; a chain's state carries one", c.Post, recorders)
	}
	return nil
}

// postProcessors are the post-processors the chains of c run, in c.Post's order (validatePost
// has checked the names).
func (c Config) postProcessors() []PostProcessor {
	ps := make([]PostProcessor, len(c.Post))
	for i, name := range c.Post {
		ps[i] = posts[name]
	}
	return ps
}

// recording returns what records, for a Gibbs chain of mv's model with state s, the values the
// recorder among ps needs beside each record, carrying on from those s holds; nil where none of
// ps records any for it.
func recording(ps []PostProcessor, mv mover, s *ChainState) *controls {
	for _, p := range ps {
		if r, ok := p.(recorder); ok {
			if cv := r.controls(mv, s); cv != nil {
				cv.z, cv.condVar = s.Controls, s.CondVar
				return cv
			}
		}
	}
	return nil
}
