package sti

import (
	"slices"

	"github.com/stirank/stirank/evidence"
	"github.com/stirank/stirank/models"
)

// SteinName is the name of the Stein post-processor in Config.Post.
const SteinName = "stein"

func init() { registerPost(SteinName, Stein{}) }

// Stein is the post-processor of a Gibbs chain's control variates (controls): it records them
// beside each record, from the Stein centre its start stage gives it (ChainState.Center), and adds
// their moments to the summary, from which evidence.Combine fits each rung's slopes, so the rung
// means keep their expectation with a fraction of their variance. Config.SteinBelow keeps it to
// the lower ranks (Config.AtRank).
type Stein struct{}

var _ recorder = Stein{}

// Keep keeps every record.
func (Stein) Keep(_ []float64, first int) int { return first }

// Summarize adds the moments of the control variates recorded with the kept records.
func (Stein) Summarize(c ChainRecords, sum *evidence.ChainSummary) {
	if c.controls != nil {
		c.controls.from(c.First).summarize(c.Kept(), sum)
	}
}

func (Stein) controls(mv mover, s *ChainState) *controls { return newControls(mv, s.Center) }

// controls is the control variates a Gibbs chain's records carry: Stein variates about a centre and,
// where the kernel knows them (models.RaoBlackwell), the differences of conditional expectations
// of the log-likelihood from the log-likelihood itself.
//
// For a centre c fixed apart from the chain, Stein's identity gives E_t[(θ_k − c_k)·∇_k log π_t(θ)]
// = −d_k along the d_k parameters of each factor k and E_t[Σ_j ∂_j log π_t(θ)] = 0 under the power
// posterior π_t on ℝ^d (its density vanishes at infinity faster than |θ|), so the variates z
// (models.SteinVariates) have mean zero at every temperature, and ℓ − β·z, with ℓ = log p(X | θ),
// has the mean of ℓ for any β fixed independently of the chain. Where π_t is close to a Gaussian
// about c, ℓ − ℓ* ≈ −½ δᵀHδ and Σ_k z_k ≈ d − t δᵀHδ: they share the χ²_d fluctuation that makes
// Var_t[ℓ] ≈ d/(2t²) and the thermodynamic integral's standard error grow like √d, and β ≈ 1/(2t)
// removes it. This is the zero-variance control variate of Mira, Solgi & Imparato (2013) for the
// polynomial ½|θ − c|², which Oates, Papamarkou & Girolami (2016) applied to thermodynamic
// integration. Near the prior (small t) the posterior is far from Gaussian: there the factors'
// parts of that sum move apart, and Σ_j ∂_j log π_t, the variate of the constant polynomial,
// carries the total Σλ that ℓ subtracts, so each gets its own slope (at rank 1 of a 30×20 matrix
// the standard error of a rung's mean at t = 0.001 and 0.01 is half what the summed variate
// leaves: go test ./sti -run TestSteinVariate -v; the speech spectrogram in README at fb09484).
//
// The centre is the rank's mode, the same point for every chain of the rank and fixed before any
// of them runs: a centre taken from the chain's own states (its burn-in mean) correlates with its
// records and moved the mean of z by a few tenths, a bias that β ≈ 1/(2t) turns into nats. β
// comes from the rung's other chains (evidence.Combine), for the same reason.
//
// Rows with few counts have far from Gaussian conditionals (a Gamma of small shape in log space),
// whose fluctuations of ℓ no quadratic shares. A conditional expectation E_t[ℓ | all factors but k]
// has the mean of ℓ without factor k's fluctuation, Gaussian or not, so its difference from ℓ has
// mean zero and, with a slope near −1, takes that factor's fluctuation out; with the Stein variates
// of the other factors the regression keeps the best of both. The kernel's conditional variances
// come with them, from which Combine estimates each rung's Var_t[ℓ] by the law of total variance
// (evidence.ChainSummary.CondVar). At rank 1 of the Facebook-size tensor, whose rows are mostly a
// few counts, the conditional means cut the reported standard error of the integral from 9–10 to
// 2.3–2.7 nats and the spread over seeds from 7.0 to 1.7, and the conditional variances on to
// 1.2–1.5 and 0.8 (README at fb09484).
type controls struct {
	mv *moverBase
	// variates is mv's evaluator and center the centre of the Stein variates, nil without them.
	variates models.SteinVariates
	center   []float64
	rb       models.RaoBlackwell // mv's kernel, nil where it has no conditional expectations
	stein, p int                 // Stein variates per record (0 without them), variates per record
	z        []float64           // record k's variates are z[k·p : (k+1)·p]
	// condVar holds each record's conditional variances of the log-likelihood, one per factor,
	// where rb does (evidence.ChainSummary.CondVar).
	condVar []float64
	// passes counts the passes over the data the Stein variates made, one per record (dropped
	// ones included): they are part of the chain's steps. The conditional expectations read the
	// data's margins and rows, not its cells.
	passes int
}

// newControls returns the control variates of a chain of mv's model: Stein variates about center
// where there is a centre, the model's evaluator computes them (models.SteinVariates) and Stein's
// identity holds in the sampling parameterisation (a non-negative one, models.Model.Positive, has
// a boundary at zero where the density need not vanish); the conditional expectations of a Gibbs
// kernel that has them. Nil where it has neither.
func newControls(mv mover, center []float64) *controls {
	b := mv.base()
	c := &controls{mv: b}
	if v, ok := b.e.(models.SteinVariates); ok && center != nil && !b.m.Positive() {
		c.variates, c.center, c.stein = v, center, len(b.m.Factors())+1
	}
	c.p = c.stein
	if gm, ok := mv.(*gibbsMover); ok {
		if rb, ok := gm.k.(models.RaoBlackwell); ok {
			c.rb = rb
			c.p += len(b.m.Factors())
		}
	}
	if c.p == 0 {
		return nil
	}
	return c
}

// record appends the variates at temperature t of θ, which the mover's last sweep left with
// log-likelihood ll: the chain's next record's.
func (c *controls) record(t float64, theta []float64, ll float64) {
	n := len(c.z)
	c.z = slices.Grow(c.z, c.p)[:n+c.p]
	z := c.z[n:]
	if c.rb != nil {
		rb := z[c.stein:]
		m := len(c.condVar)
		c.condVar = slices.Grow(c.condVar, len(rb))[:m+len(rb)]
		c.rb.Conditionals(t, rb, c.condVar[m:])
		for k := range rb {
			rb[k] -= ll
		}
	}
	if c.variates != nil {
		c.mv.e.Prepare(theta)
		c.mv.cells += int64(models.PassCells(c.mv.m))
		c.passes++
		c.variates.SteinVariates(c.center, t, z[:c.stein])
	}
}

// from is c without the variates of the first n records, which the chain's summary leaves out.
func (c *controls) from(n int) *controls {
	kept := *c
	kept.z = c.z[n*c.p:]
	if c.rb != nil {
		kept.condVar = c.condVar[n*(c.p-c.stein):]
	}
	return &kept
}

// summarize adds the variates' summary to sum (evidence.ChainSummary.SteinMean and the fields
// after it), whose Count and Mean already summarise records, the chain's records in the order the
// variates were recorded.
func (c *controls) summarize(records []float64, sum *evidence.ChainSummary) {
	p, n := c.p, len(records)
	if n < 2 || n*p != len(c.z) {
		return
	}
	mz := make([]float64, p)
	for k := range n {
		for l, z := range c.z[k*p : (k+1)*p] {
			mz[l] += z / float64(n)
		}
	}
	co, m2, dz := make([]float64, p), make([]float64, p*p), make([]float64, p)
	for k, y := range records {
		for l, z := range c.z[k*p : (k+1)*p] {
			dz[l] = z - mz[l]
		}
		for l, d := range dz {
			co[l] += (y - sum.Mean) * d
			for q, e := range dz {
				m2[l*p+q] += d * e
			}
		}
	}
	// The effective sample size of the controlled records, with the chain's own slopes: it
	// measures their autocorrelation, which the slopes Combine uses barely change.
	beta := evidence.LeastSquares(m2, co)
	y := make([]float64, n)
	for k, l := range records {
		y[k] = l
		for q, b := range beta {
			y[k] -= b * c.z[k*p+q]
		}
	}
	_, _, ess := evidence.Summarize(y)
	sum.SteinMean, sum.SteinM2, sum.SteinCo, sum.SteinESS = mz, m2, co, ess
	if c.rb != nil {
		K := p - c.stein
		sum.CondVar, sum.CondVarM2 = make([]float64, K), make([]float64, K)
		for k := range n {
			for f, v := range c.condVar[k*K : (k+1)*K] {
				sum.CondVar[f] += v / float64(n)
			}
		}
		for k := range n {
			for f, v := range c.condVar[k*K : (k+1)*K] {
				d := v - sum.CondVar[f]
				sum.CondVarM2[f] += d * d
			}
		}
	}
}
