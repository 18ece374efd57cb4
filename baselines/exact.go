package baselines

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/stirank/stirank/internal/quad"
	"github.com/stirank/stirank/models"
	"github.com/stirank/stirank/tensor"
)

// ExactLogEvidence returns log p(X | R) of Poisson NMF or CP with exponential priors for tiny
// data, exactly up to quadrature error (about 1e-8 nats per term), by summing over allocations.
//
// Under the augmentation the components are independent rank-1 models, Z_·r ~ rank-1 Poisson CP,
// with X = Σ_r Z_·r, so
//
//	p(X | R) = Σ_{Z: Σ_r Z_nr = x_n} Π_r p₁(Z_·r),
//
// and a rank-1 evidence p₁(Y) depends on Y only through Π_n 1/Y_n! and its margins
// (models.Rank1LogEvidenceMargins, the core of models.Rank1LogEvidence). The number of allocations, Π_n C(x_n + R − 1, R − 1), must not exceed maxTerms.
func ExactLogEvidence(data *tensor.Sparse, R int, rates []float64, maxTerms int) (float64, error) {
	p, err := NewProblem(data, rates)
	if err != nil {
		return 0, err
	}
	return p.exactLogEvidence(R, maxTerms)
}

// exactLogEvidence is ExactLogEvidence of the problem's data under its rates and, beside a fixed
// dictionary (ForModel), with the dictionary's components among the K = F0 + R that the counts are
// allocated to; R may then be 0. Component c of the dictionary, column d_c, takes its counts Y with
// the activations h ~ Exp(λ_1) of every column j of the data:
//
//	p(Y | d_c) = Π_n 1/Y_n! · Π_i d_ic^{Σ_j Y_ij} · Π_j λ_1 Γ(Σ_i Y_ij + 1) / (λ_1 + Σ_i d_ic)^{Σ_i Y_ij + 1},
//
// a Gamma integral per column (dictColumn.term).
func (p *Problem) exactLogEvidence(R, maxTerms int) (float64, error) {
	if p.Auto {
		return 0, errAuto("the exact evidence")
	}
	if err := p.checkRank("exact evidence", R); err != nil {
		return 0, err
	}
	K := p.fixed + R
	terms := 1.0
	for _, x := range p.xi {
		terms *= math.Exp(logBinom(x+K-1, K-1))
		if terms > float64(maxTerms) {
			return 0, fmt.Errorf("exact evidence: more than %d allocations", maxTerms)
		}
	}
	e := &enumerator{p: p, K: K, memo: map[string]float64{}, total: math.Inf(-1)}
	for c := range p.fixed {
		e.dict = append(e.dict, p.dictColumn(c))
	}
	e.margins = make([][][]int, K)
	for r := range K {
		e.margins[r] = make([][]int, p.order)
		for m, n := range p.shape {
			e.margins[r][m] = make([]int, n)
		}
	}
	e.part = make([]int, R)
	e.walk(0, 0)
	return e.total, nil
}

func logBinom(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

type enumerator struct {
	p       *Problem
	K       int // components, a dictionary's first
	dict    []dictColumn
	margins [][][]int // margins[r][m][i]: Σ of component r's counts in row i of mode m
	part    []int
	memo    map[string]float64
	total   float64
}

// walk allocates the counts of cells n, n+1, …; lf is −Σ log Z! of the cells allocated so far.
func (e *enumerator) walk(n int, lf float64) {
	if n == len(e.p.xi) {
		v := lf
		for r := range e.K {
			if r < e.p.fixed {
				v += e.dict[r].term(e.p, e.margins[r])
			} else {
				v += e.rank1(e.margins[r])
			}
		}
		e.total = quad.LogAddExp(e.total, v)
		return
	}
	e.compose(n, 0, e.p.xi[n], lf)
}

// compose splits the remaining count left of cell n over components r, r+1, ….
func (e *enumerator) compose(n, r, left int, lf float64) {
	if r == e.K-1 {
		e.assign(n, r, left)
		e.walk(n+1, lf-e.p.logFact0(left))
		e.assign(n, r, -left)
		return
	}
	for c := 0; c <= left; c++ {
		e.assign(n, r, c)
		e.compose(n, r+1, left-c, lf-e.p.logFact0(c))
		e.assign(n, r, -c)
	}
}

func (e *enumerator) assign(n, r, c int) {
	for m := range e.p.order {
		e.margins[r][m][e.p.coords[m][n]] += c
	}
}

// logFact0 is log k! for any k ≥ 0.
func (p *Problem) logFact0(k int) float64 {
	if k < len(p.logFact) {
		return p.logFact[k]
	}
	return logFactorial(k)
}

// rank1 returns log p₁ of a component with the given margins, without its Π 1/Y! factor.
func (e *enumerator) rank1(margins [][]int) float64 {
	var b strings.Builder
	for _, mm := range margins {
		for _, v := range mm {
			b.WriteString(strconv.Itoa(v))
			b.WriteByte(',')
		}
		b.WriteByte('|')
	}
	key := b.String()
	if v, ok := e.memo[key]; ok {
		return v
	}
	fm := make([][]float64, len(margins))
	for m, mm := range margins {
		fm[m] = make([]float64, len(mm))
		for i, x := range mm {
			fm[m][i] = float64(x)
		}
	}
	// The rates were validated by NewProblem and the margins of one allocation share their total.
	v, err := models.Rank1LogEvidenceMargins(fm, e.p.Rates)
	if err != nil {
		panic("baselines: " + err.Error())
	}
	e.memo[key] = v
	return v
}

// dictColumn is what a dictionary component's term reads of its column c, the same at every
// allocation: log d_ic of every row i, log λ_1 and log(λ_1 + Σ_i d_ic).
type dictColumn struct {
	logD                []float64
	logRate, logRateSum float64
}

// dictColumn returns dictionary column c's constants, once for every allocation's term.
func (p *Problem) dictColumn(c int) dictColumn {
	l := p.Rates[1]
	col := dictColumn{logD: make([]float64, p.shape[0]), logRate: math.Log(l)}
	D := 0.0
	for i := range col.logD {
		d := p.dict[i*p.fixed+c]
		D += d
		col.logD[i] = math.Log(d)
	}
	col.logRateSum = math.Log(l + D)
	return col
}

// term returns log p(Y | d_c) of the column's component with the given margins, without its
// Π 1/Y! factor (exactLogEvidence).
func (col dictColumn) term(p *Problem, margins [][]int) float64 {
	v := 0.0
	for i, y := range margins[0] {
		if y > 0 {
			v += float64(y) * col.logD[i]
		}
	}
	for _, y := range margins[1] {
		s := float64(y)
		v += col.logRate + p.logFact0(y) - (s+1)*col.logRateSum
	}
	return v
}
