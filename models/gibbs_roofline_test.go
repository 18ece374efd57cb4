package models

import (
	"math"
	"testing"

	"github.com/stirank/stirank/internal/draw"
	"github.com/stirank/stirank/internal/par"
	"github.com/stirank/stirank/internal/vec"
	"github.com/stirank/stirank/rng"
	"github.com/stirank/stirank/tensor"
)

// roofline is the least work a sweep of the augmented Poisson Gibbs sampler must do, written as
// fast as the kernel's parts allow, for the kernel to be held against: for every stored cell its
// components' rates and the split of its rounded count, the parts added to the counts of its
// row in every mode, and one Gamma draw per factor entry, with the column sums the draws' rates
// need. It has no Metropolis–Hastings correction, log-likelihood, parameterisation, fixed block
// or moves other than the draws, and it splits the cells once, in the order of mode 0's rows,
// each worker adding the parts of the other modes to counts of its own.
type roofline struct {
	g      *tensor.ByRow // the cells by mode-0 row
	cuts   []int         // mode 0's chunks (workChunks)
	rows   []int
	K      int
	rates  []float64
	f      [][]float64   // f[k] is factor k, rows × K
	colsum [][]float64   // colsum[k][r] = Σ_i f[k][i, r]
	counts [][][]float64 // counts[w][k]: worker w's parts of factor k's counts, for k ≥ 1
	chunks []rooflineChunk
}

// rooflineChunk is one chunk of rows' stream and scratch.
type rooflineChunk struct {
	st      rng.Stream
	n       []float64
	weights *draw.Weights
	colsum  []float64
	_       [64]byte
}

func newRoofline(m *Poisson, theta []float64) *roofline {
	d := m.Data
	K := m.K
	rl := &roofline{g: d.GroupByRow(0), rows: d.Shape, K: K, rates: m.Rates}
	rl.cuts = workChunks(rl.g.Start)
	values := m.FactorValues(theta)
	for k := range d.Shape {
		rl.f = append(rl.f, values[k])
		rl.colsum = append(rl.colsum, make([]float64, K))
		ColSums(values[k], K, rl.colsum[k])
	}
	rl.chunks = make([]rooflineChunk, max(len(rl.cuts)-1, par.MaxChunks))
	for c := range rl.chunks {
		ch := &rl.chunks[c]
		ch.st.Init(0)
		ch.n, ch.colsum = make([]float64, K), make([]float64, K)
		ch.weights = draw.NewWeights(K)
	}
	return rl
}

// sweep makes one sweep at t with the stream named by key.
func (rl *roofline) sweep(key uint64, t float64) {
	K, M := rl.K, len(rl.rows)
	workers := min(maxCountCopies, par.Workers(len(rl.cuts)-1))
	for len(rl.counts) < workers {
		copies := make([][]float64, M)
		for k := 1; k < M; k++ {
			copies[k] = make([]float64, rl.rows[k]*K)
		}
		rl.counts = append(rl.counts, copies)
	}
	rounding := rng.Key(key, roundings)
	scale := make([]float64, K)
	rl.scales(0, t, scale)
	g := rl.g
	par.TasksOn(len(rl.cuts)-1, workers, func(w, c int) {
		ch := &rl.chunks[c]
		ch.st.Reset(key, 0, uint64(c))
		clear(ch.colsum)
		counts := rl.counts[w]
		for i := rl.cuts[c]; i < rl.cuts[c+1]; i++ {
			row := rl.f[0][i*K : (i+1)*K]
			clear(ch.n)
			lo, hi := g.Start[i], g.Start[i+1]
			vec.Prefetch(rl.f[1], g.Other[0][lo:hi], K)
			vec.Prefetch(counts[1], g.Other[0][lo:hi], K)
			if M > 2 {
				vec.Prefetch(rl.f[2], g.Other[1][lo:hi], K)
				vec.Prefetch(counts[2], g.Other[1][lo:hi], K)
			}
			for p := lo; p < hi; p++ {
				j := int(g.Other[0][p])
				s1 := counts[1][j*K : (j+1)*K]
				var b, s2 []float64
				if M > 2 {
					l := int(g.Other[1][p])
					b, s2 = rl.f[2][l*K:(l+1)*K], counts[2][l*K:(l+1)*K]
				}
				tx := t * g.Values[p]
				nu := math.Floor(tx)
				if rng.At(rounding, uint64(p)) < tx-nu {
					nu++
				}
				if nu == 0 {
					ch.weights.Set(row, rl.f[1][j*K:(j+1)*K], b)
					continue
				}
				r := ch.weights.SetPick(row, rl.f[1][j*K:(j+1)*K], b, ch.st.Float64())
				for e := range int(nu) {
					if e > 0 {
						r = ch.weights.Pick(ch.st.Float64())
					}
					ch.n[r]++
					s1[r]++
					if s2 != nil {
						s2[r]++
					}
				}
			}
			for r := range row {
				row[r] = draw.GammaCount(&ch.st, ch.n[r]) * scale[r]
			}
			addTo(ch.colsum, row)
		}
	})
	rl.sum(0, len(rl.cuts)-1)
	for k := 1; k < M; k++ {
		rl.scales(k, t, scale)
		rows := rl.rows[k]
		par.For(rows, func(c, lo, hi int) {
			ch := &rl.chunks[c]
			ch.st.Reset(key, uint64(k), uint64(c))
			clear(ch.colsum)
			for i := lo; i < hi; i++ {
				clear(ch.n)
				for _, w := range rl.counts {
					part := w[k][i*K : (i+1)*K]
					addTo(ch.n, part)
					clear(part)
				}
				row := rl.f[k][i*K : (i+1)*K]
				for r := range row {
					row[r] = draw.GammaCount(&ch.st, ch.n[r]) * scale[r]
				}
				addTo(ch.colsum, row)
			}
		})
		count, _ := par.Chunks(rows)
		rl.sum(k, count)
	}
}

// scales sets scale to the inverses of the rates of factor k's Gamma conditionals at t.
func (rl *roofline) scales(k int, t float64, scale []float64) {
	for r := range scale {
		mass := 1.0
		for k2, cs := range rl.colsum {
			if k2 != k {
				mass *= cs[r]
			}
		}
		scale[r] = 1 / (rl.rates[k] + t*mass)
	}
}

// sum sets factor k's column sums to those of the first count chunks, added in chunk order.
func (rl *roofline) sum(k, count int) {
	clear(rl.colsum[k])
	for c := range count {
		addTo(rl.colsum[k], rl.chunks[c].colsum)
	}
}

// BenchmarkGibbsRoofline times the roofline's sweeps on BenchmarkGibbsSweep's workloads and
// temperatures, from the θ three of the kernel's sweeps leave.
func BenchmarkGibbsRoofline(b *testing.B) {
	runGibbs(b, func(b *testing.B, w *gibbsWorkload, t float64) func() {
		m, _, theta, r := w.warm(b, t)
		rl := newRoofline(m, theta)
		return func() { rl.sweep(r.Uint64(), t) }
	})
}
