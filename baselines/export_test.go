package baselines

// The tests of package baselines_test, which compare the baselines with package sti (which
// imports baselines), use these helpers.
var (
	Tiny     = tiny
	Estimate = estimate
)
