package models

import (
	"os"
	"strconv"
	"testing"

	"github.com/stirank/stirank/rng"
)

// ZZ_W=workload index, ZZ_T=temperature, ZZ_N sweeps
func TestZZSweeps(t *testing.T) {
	wi, _ := strconv.Atoi(os.Getenv("ZZ_W"))
	temp, _ := strconv.ParseFloat(os.Getenv("ZZ_T"), 64)
	n, _ := strconv.Atoi(os.Getenv("ZZ_N"))
	w := gibbsWorkloads[wi]
	m := w.model(&testing.B{})
	r := rng.New(62, 1)
	theta := make([]float64, m.Dim())
	m.SamplePrior(r, theta)
	k := m.NewAugmented()
	acc := make([]float64, 3)
	for range n {
		k.Sweep(r, temp, theta, acc)
	}
}

func TestZZRoofline(t *testing.T) {
	wi, _ := strconv.Atoi(os.Getenv("ZZ_W"))
	temp, _ := strconv.ParseFloat(os.Getenv("ZZ_T"), 64)
	n, _ := strconv.Atoi(os.Getenv("ZZ_N"))
	w := gibbsWorkloads[wi]
	m := w.model(&testing.B{})
	r := rng.New(62, 1)
	theta := make([]float64, m.Dim())
	m.SamplePrior(r, theta)
	rl := newRoofline(m, theta)
	for range n {
		rl.sweep(r.Uint64(), temp)
	}
}
