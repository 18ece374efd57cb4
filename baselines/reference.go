package baselines

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/stirank/stirank/internal/draw"
	"github.com/stirank/stirank/internal/logtab"
	"github.com/stirank/stirank/internal/quad"
	"github.com/stirank/stirank/internal/slice"
)

// MaxReferenceRank is the largest rank AIS from a reference runs at: its density is a permanent,
// and every column of a sweep costs one subset recursion over the components (O(2^R·R)).
const MaxReferenceRank = 12

// reference is the start of a path from a fitted reference: q(θ) = (1/R!) Σ_σ Π_k q_σ(k)(F_·k),
// the product over components k of a density q_j of the component's entries in every mode, under
// a labelling σ of the components, symmetrised over all of them.
//
// q_j is a Gamma product spread along the component's scale orbit, F_m[·, k]·e^(u_m) with
// Σ_m u_m = 0, along which no cell's rate changes and only the prior binds the posterior:
//
//	q_j(F_·k) = Σ_g w_g Π_{m,i} Gamma(F_m[i, k]; α_m[i, j], β_m[i, j]·e^(−u_jgm)),
//
// the Gamma product (moment-matched to Gibbs draws at t = 1 balanced onto one point of their
// orbits, Problem.balance) shifted to the nodes u_jg of a grid over the draws' orbit offsets (a
// Gaussian's ±3 standard deviations, weights w_g its density). A Gamma product fitted to the draws
// as they come spreads its independent entries along every orbit at once, and its draws fall far
// from the data's fit where the counts are large and the prior weak; one fitted to the balanced
// draws alone has no mass where the posterior spreads along the orbits. With T_kj = Σ_{m,i}
// [α log β − log Γ(α) + (α − 1) log F] and B_kjm = Σ_i β_m[i, j] F_m[i, k],
//
//	L[k, j] = log q_j(F_·k) = T_kj + log Σ_g w_g exp(−Σ_m (u_jgm A_jm + e^(−u_jgm) B_kjm)),
//
// A_jm = Σ_i α_m[i, j], and q(θ) = perm(exp L)/R!. The symmetrisation makes q, like the posterior,
// invariant under relabeling, so the estimate needs no assumption on how the posterior's R! copies
// overlap: on tiny data, and at over-fitted ranks whose spare components are alike, they do, and
// one labelling with + log R! was up to 1.9 nats high. An entry of component k enters row k of L
// alone, so as a function of that entry log q is log Σ_j exp(M_kj + L[k, j]) + const, M_kj the
// log permanent of L without row k and column j, fixed while a sweep updates column k of a factor.
type reference struct {
	R, M              int
	alpha, beta, norm [][]float64 // per mode, rows×R: α, β and α log β − log Γ(α)
	A                 []float64   // R×M: A_jm = Σ_i α_m[i, j]
	// The grid: per label j and node g, log w_g − Σ_m u_jgm A_jm (base, R×G), e^(−u_jgm)
	// (eu, R×G×M), and the weights' running sums (cum), for draws.
	base, eu, cum []float64
	terms         []float64 // scratch of the grid's size, for orbits of more than two directions
	n             int       // the grid's nodes per direction of the orbit
	logFact       float64   // log R!
	T, B          []float64 // R×R: T_kj; R×R×M: B_kjm
	L             []float64 // R×R, row-major
	Ls            []float64 // scratch of L's shape
	dlog, dx      []float64 // scratch of a factor's rows, for shear moves
	hint          []int     // R×R: the node of the last peak of orbitLSE for (k, j)
	minor         []float64 // M_kj of the column being swept
	// The prepared entry's or move's terms, per label j: T_kj (less the entry's own), with the
	// minor for a move; B_kj· (less the entry's own); a move's a_j; the entry's bound ub_j
	// (prepare); b is scratch.
	tb, bb, aj, b, ub []float64
	perm              *permScratch
	// pairMinor[j·R + l] is the log permanent of L without rows a and b and columns j and l for
	// the pair (a, b) of the transfer moves under way (beginPair); subL, subOut and sub are its
	// scratch.
	pairMinor, subL, subOut []float64
	sub                     *permScratch
}

// ReferenceFit is a fitted reference as plain values, which cross Beam stages: the Gamma shape
// Alpha and rate Beta of every factor entry (per mode, rows×R like Factors.F) at the balanced
// point of its component's orbit; per component j, the mean (M − 1 values) and covariance
// ((M − 1)², row-major) of the draws' orbit offsets z, u_m = z_m for m < M − 1 and
// u_{M−1} = −Σ z; and the Gibbs sweeps and cell allocations the fit took.
type ReferenceFit struct {
	Rank                int
	Alpha, Beta         [][]float64
	OrbitMean, OrbitCov [][]float64
	Sweeps              int
	CellEvals           int64
}

// FitReference fits a reference at rank R (see reference): a Gibbs run at t = 1 from the best of
// 4 prior runs of 50 sweeps, burnin sweeps, each ended by the moves along the directions the
// likelihood leaves flat (sliceState.crossFlats), then sweeps more, plain, whose draws give each
// entry's Gamma by its mean and variance.
//
// The plain sweeps leave a true component split in two at an over-fitted rank where the start
// put its halves, and the posterior spreads one mode's rows between them (the halves parallel in
// the others), which the sweeps cross a count's worth at a time where the counts are large: at
// rank 3 of an 8×6×5 tensor with counts in the tens of thousands the fitted halves were parallel
// in every mode (cosines of their means 0.88 or more) at 9 seeds of 12, and the path from q came
// out 7–11 nats low at 3 seeds of 4. After a burn-in with the moves the halves' cosine in one
// mode is 0.48–0.85 at 11 seeds of 12, and the path is within 0.33 nat at all four. The draws q
// is fitted to are plain: a Gamma product fitted to draws that roam a ridge puts its mass off the
// ridge too, and with the transfers in every sweep of the fit the path came out 1.9–70 nats high
// at rank 3 of a 12×10 matrix with counts up to 1.4·10⁵.
func (p *Problem) FitReference(ctx context.Context, r *rand.Rand, R, burnin, sweeps int) (ReferenceFit, error) {
	if p.Auto {
		return ReferenceFit{}, errAuto("a fitted reference")
	}
	return p.fitReference(ctx, r, R, referenceStarts, referenceStartSweeps, burnin, sweeps)
}

// SketchReference is a reference at rank R fitted to sweeps Gibbs sweeps from one prior draw, after
// as many of burn-in: far from the posterior, but with the grid and the rank of a fitted one, for
// timing the sweeps of a path (the progress plan of sti.Problem.PathSweepSeconds).
func (p *Problem) SketchReference(ctx context.Context, r *rand.Rand, R, sweeps int) (ReferenceFit, error) {
	return p.fitReference(ctx, r, R, 1, 0, sweeps, sweeps)
}

// fitReference is FitReference from the best of starts prior runs of startSweeps.
func (p *Problem) fitReference(ctx context.Context, r *rand.Rand, R, starts, startSweeps, burnin, sweeps int) (ReferenceFit, error) {
	fit := ReferenceFit{Rank: R}
	if p.fixed > 0 {
		return fit, errFixed("a reference")
	}
	if R > MaxReferenceRank {
		return fit, fmt.Errorf("reference: rank %d: a reference runs up to rank %d", R, MaxReferenceRank)
	}
	if sweeps < 2 {
		return fit, fmt.Errorf("reference: %d sweeps cannot give a variance", sweeps)
	}
	g, done, err := p.bestStart(ctx, r, R, starts, startSweeps)
	if err != nil {
		return fit, err
	}
	d := p.order - 1
	mean, m2, draw := p.NewFactors(R), p.NewFactors(R), p.NewFactors(R)
	cs, shift := make([][]float64, p.order), make([]float64, R*p.order)
	for m := range cs {
		cs[m] = make([]float64, R)
	}
	zMean, zCo := make([][]float64, R), make([][]float64, R)
	for k := range R {
		zMean[k], zCo[k] = make([]float64, d), make([]float64, d*d)
	}
	dz := make([]float64, d)
	flat := newSliceState(p, R, 1)
	for k := range burnin + sweeps {
		g.Sweep(r)
		if k < burnin {
			flat.crossFlats(r, g)
		}
		if k%64 == 0 {
			if err := ctx.Err(); err != nil {
				return fit, err
			}
		}
		n := float64(k - burnin + 1)
		if n < 1 {
			continue
		}
		draw.CopyFrom(g.State)
		p.balance(draw, cs, shift)
		for m, f := range draw.F {
			for i, v := range f {
				d := v - mean.F[m][i]
				mean.F[m][i] += d / n
				m2.F[m][i] += d * (v - mean.F[m][i])
			}
		}
		// The draw is the balanced point shifted by u = −log c, c the balancing factors.
		for c := range R {
			for a := range d {
				dz[a] = -shift[c*p.order+a] - zMean[c][a]
				zMean[c][a] += dz[a] / n
			}
			for a := range d {
				for b := range d {
					zCo[c][a*d+b] += dz[a] * (-shift[c*p.order+b] - zMean[c][b])
				}
			}
		}
	}
	fit.Sweeps, fit.CellEvals = done+burnin+sweeps, g.cellEvals+flat.cellEvals
	for m := range p.order {
		n := len(mean.F[m])
		a, b := make([]float64, n), make([]float64, n)
		for i, mu := range mean.F[m] {
			v := m2.F[m][i] / float64(sweeps-1)
			if !(mu > 0 && v > 0) || math.IsInf(mu, 0) || math.IsInf(v, 0) {
				return fit, fmt.Errorf("reference: factor %d, row %d, component %d has mean %v and variance %v over %d Gibbs sweeps", m, i/R, i%R, mu, v, sweeps)
			}
			a[i], b[i] = mu*mu/v, mu/v
		}
		fit.Alpha, fit.Beta = append(fit.Alpha, a), append(fit.Beta, b)
	}
	for k := range R {
		for i := range zCo[k] {
			zCo[k][i] /= float64(sweeps - 1)
		}
	}
	fit.OrbitMean, fit.OrbitCov = zMean, zCo
	return fit, nil
}

// Grid resolution: nodes from −orbitSpan to orbitSpan standard deviations of the draws' orbit
// offsets, spaced at most orbitStep widths of one Gamma product along the orbit,
// 1/√(Σ_m A_jm) (the curvature of Σ_m e^(−u_m) B_m where β·F ≈ α): shifted copies of a Gaussian
// bump two widths apart add up to a density flat along the orbit to 1.4 % (2·e^(−2π²/4)), which
// moves log q by 0.014 at most and costs the sums over the grid half the terms of a spacing of
// one width (flat to 10⁻⁸), the most of a sweep's time at high ranks of small data: a sweep at
// rank 8 of the embedded default took 9.1 ms against 13.7 (a scratch timing). A coarser grid
// leaves gaps where q has almost no mass and the posterior has plenty, and the integrand's
// variance near t = 1 explodes (by 400 nats at rank 1 of the 12×10 matrix of large counts with
// 25 nodes). Along a matrix's orbit up to maxNodes nodes, and over a 3-way tensor's up to
// maxNodes3 in each of its two directions, which the sums over the grid (orbitLSE) visit only
// near their peak; over the orbits of higher-order tensors about 64 nodes in all, every one
// visited.
const (
	orbitSpan = 3.5
	orbitStep = 2
	maxNodes  = 4001
	maxNodes3 = 40
	// lseCut ends a sum over the grid's nodes where the terms fall that far below its peak: they
	// add less than e^−30 of it.
	lseCut = 30
)

// newReference is the reference fit describes, checked against the data's shape.
func (p *Problem) newReference(fit ReferenceFit) (*reference, error) {
	R, M := fit.Rank, p.order
	d := M - 1
	if R < 1 || R > MaxReferenceRank || len(fit.Alpha) != M || len(fit.Beta) != M || len(fit.OrbitMean) != R || len(fit.OrbitCov) != R {
		return nil, fmt.Errorf("reference: rank %d with %d and %d modes and %d orbits does not fit %d-way data up to rank %d", R, len(fit.Alpha), len(fit.Beta), len(fit.OrbitMean), M, MaxReferenceRank)
	}
	q := &reference{R: R, M: M, logFact: logFactorial(R), A: make([]float64, R*M), T: make([]float64, R*R),
		B: make([]float64, R*R*M), L: make([]float64, R*R), Ls: make([]float64, R*R), hint: make([]int, R*R), minor: make([]float64, R), tb: make([]float64, R),
		bb: make([]float64, R*M), aj: make([]float64, R), b: make([]float64, M), ub: make([]float64, R), perm: newPermScratch(R)}
	rows := slices.Max(p.shape)
	q.dlog, q.dx = make([]float64, rows), make([]float64, rows)
	for m := range M {
		a, b := fit.Alpha[m], fit.Beta[m]
		if len(a) != p.shape[m]*R || len(b) != len(a) {
			return nil, fmt.Errorf("reference: mode %d has %d shapes and %d rates for %d rows at rank %d", m, len(a), len(b), p.shape[m], R)
		}
		c := make([]float64, len(a))
		for i := range a {
			if !(a[i] > 0 && b[i] > 0) || math.IsInf(a[i], 0) || math.IsInf(b[i], 0) {
				return nil, fmt.Errorf("reference: mode %d, row %d, component %d has shape %v and rate %v", m, i/R, i%R, a[i], b[i])
			}
			lg, _ := math.Lgamma(a[i])
			c[i] = a[i]*math.Log(b[i]) - lg
			q.A[(i%R)*M+m] += a[i]
		}
		q.alpha, q.beta, q.norm = append(q.alpha, a), append(q.beta, b), append(q.norm, c)
	}
	chols := make([][]float64, R)
	n := 1
	for j := range R {
		mu, cov := fit.OrbitMean[j], fit.OrbitCov[j]
		if len(mu) != d || len(cov) != d*d {
			return nil, fmt.Errorf("reference: component %d's orbit has %d offsets and %d covariances, want %d and %d", j, len(mu), len(cov), d, d*d)
		}
		var err error
		if chols[j], err = choleskyOf(cov, d); err != nil {
			return nil, fmt.Errorf("reference: component %d's orbit: %w", j, err)
		}
		width := 0.0
		for m := range M {
			width += q.A[j*M+m]
		}
		width = 1 / math.Sqrt(width)
		for a := range d {
			need := math.Ceil(2*orbitSpan*math.Sqrt(cov[a*d+a])/(orbitStep*width)) + 1
			switch d {
			case 1:
				n = max(n, int(math.Min(need, maxNodes)))
			case 2:
				n = max(n, int(math.Min(need, maxNodes3)))
			default:
				n = max(n, min(int(need), max(3, int(math.Floor(math.Pow(64, 1/float64(d))+1e-9)))))
			}
		}
	}
	G := 1
	for range d {
		G *= n
	}
	node := func(i int) float64 { return -orbitSpan + 2*orbitSpan*float64(i)/float64(max(n-1, 1)) }
	lw, sdev, u := make([]float64, G), make([]float64, d), make([]float64, M)
	total := math.Inf(-1)
	for g := range G {
		for a, h := 0, g; a < d; a, h = a+1, h/n {
			sdev[a] = node(h % n)
			lw[g] -= sdev[a] * sdev[a] / 2
		}
		total = quad.LogAddExp(total, lw[g])
	}
	q.n, q.cum = n, make([]float64, G)
	if M > 3 {
		q.terms = make([]float64, G)
	}
	acc := 0.0
	for g := range G {
		lw[g] -= total
		acc += math.Exp(lw[g])
		q.cum[g] = acc
	}
	q.base, q.eu = make([]float64, R*G), make([]float64, R*G*M)
	for j := range R {
		mu, chol := fit.OrbitMean[j], chols[j]
		for g := range G {
			for a, h := 0, g; a < d; a, h = a+1, h/n {
				sdev[a] = node(h % n)
			}
			u[M-1] = 0
			for a := range d {
				u[a] = mu[a]
				for b := 0; b <= a; b++ {
					u[a] += chol[a*d+b] * sdev[b]
				}
				u[M-1] -= u[a]
			}
			q.base[j*G+g] = lw[g]
			for m, v := range u {
				if math.IsNaN(v) || math.Abs(v) > 700 {
					return nil, fmt.Errorf("reference: component %d's orbit reaches an offset of %v", j, v)
				}
				q.base[j*G+g] -= v * q.A[j*M+m]
				q.eu[(j*G+g)*M+m] = math.Exp(-v)
			}
		}
	}
	return q, nil
}

// choleskyOf returns the lower Cholesky factor of the d×d covariance cov (row-major), with a
// small ridge when the draws left it singular (a component the prior pins to one point of its
// orbit).
func choleskyOf(cov []float64, d int) ([]float64, error) {
	c := make([]float64, d*d)
	ridge := 0.0
	for a := range d {
		ridge = max(ridge, 1e-9*cov[a*d+a])
	}
	ridge = max(ridge, 1e-12)
	for a := range d {
		for b := 0; b <= a; b++ {
			s := cov[a*d+b]
			if a == b {
				s += ridge
			}
			for e := range b {
				s -= c[a*d+e] * c[b*d+e]
			}
			if a == b {
				if !(s > 0) || math.IsInf(s, 0) {
					return nil, fmt.Errorf("covariance %v is not positive definite", cov)
				}
				c[a*d+a] = math.Sqrt(s)
			} else {
				c[a*d+b] = s / c[b*d+b]
			}
		}
	}
	return c, nil
}

// grid returns G, the number of the grid's nodes.
func (q *reference) grid() int { return len(q.cum) }

// orbitLSE is log Σ_g exp(base_jg − Σ_m e^(−u_jgm) b_m), the sum over the grid of label j with
// B_kj· = b; hint is the node of the last such sum's peak for (k, j). Its terms are samples on a
// grid of a concave function of the orbit offset (a Gaussian's log density, linear terms and
// −e^(±z)·b): along every row of the grid (one for a matrix, one per node of the second direction
// for a 3-way tensor) they rise to one peak and fall, and so do the rows' peaks from row to row.
// It climbs from the hint to the peak, which moves little from one sum to the next, and sums out
// from it, row by row, until the terms fall lseCut below it. Over the orbits of higher-order
// tensors it visits every node.
func (q *reference) orbitLSE(j int, b []float64, hint *int) float64 {
	M, G, n := q.M, q.grid(), q.n
	base, eu := q.base[j*G:(j+1)*G], q.eu[j*G*M:(j+1)*G*M]
	term := func(g int) float64 {
		x := base[g]
		for m, bm := range b {
			x -= eu[g*M+m] * bm
		}
		return x
	}
	if M > 3 {
		top := math.Inf(-1)
		for g := range G {
			q.terms[g] = term(g)
			top = max(top, q.terms[g])
		}
		if math.IsInf(top, 0) || math.IsNaN(top) {
			return top
		}
		sum := 0.0
		for _, x := range q.terms {
			if x-top > -lseCut {
				sum += logtab.Exp(x - top)
			}
		}
		return top + math.Log(sum)
	}
	// rowPeak climbs row r from node a to the row's peak.
	rowPeak := func(r, a int) (int, float64) {
		t := term(r*n + a)
		for _, dir := range [2]int{1, -1} {
			for c := a + dir; c >= 0 && c < n; c += dir {
				u := term(r*n + c)
				if !(u > t) {
					break
				}
				a, t = c, u
			}
		}
		return a, t
	}
	rows := G / n
	h := min(max(*hint, 0), G-1)
	row, col := h/n, h%n
	col, top := rowPeak(row, col)
	for _, dir := range [2]int{1, -1} {
		moved := false
		for r := row + dir; r >= 0 && r < rows; r += dir {
			c, t := rowPeak(r, col)
			if !(t > top) {
				break
			}
			row, col, top, moved = r, c, t, true
		}
		if moved {
			break
		}
	}
	*hint = row*n + col
	if math.IsInf(top, 0) || math.IsNaN(top) {
		return top
	}
	sum := 0.0
	for _, dir := range [2]int{1, -1} {
		c := col
		for r := row; r >= 0 && r < rows; r += dir {
			if dir < 0 && r == row {
				continue
			}
			var t float64
			if c, t = rowPeak(r, c); t-top < -lseCut {
				break
			}
			sum += logtab.Exp(t - top)
			for _, d := range [2]int{1, -1} {
				for a := c + d; a >= 0 && a < n; a += d {
					u := term(r*n+a) - top
					if u < -lseCut {
						break
					}
					sum += logtab.Exp(u)
				}
			}
		}
	}
	return top + math.Log(sum)
}

// term returns the entry's share of T_kj under label j, α log β − log Γ(α) + (α − 1) log F, from
// logF = log F.
func (q *reference) term(m, i, j int, logF float64) float64 {
	e := i - i%q.R + j
	return q.norm[m][e] + (q.alpha[m][e]-1)*logF
}

// rowOf returns L[k, j] from T_kj and B_kj·.
func (q *reference) rowOf(k, j int) float64 {
	R, M := q.R, q.M
	return q.T[k*R+j] + q.orbitLSE(j, q.B[(k*R+j)*M:(k*R+j+1)*M], &q.hint[k*R+j])
}

// sample draws f from q: a relabeling uniformly, then per component a node of the grid and every
// entry from its Gamma there.
func (q *reference) sample(r *rand.Rand, f Factors) {
	R, M, G := q.R, q.M, q.grid()
	s := r.Perm(R)
	node := make([]int, R)
	for k := range R {
		node[k] = draw.Categorical(r, q.cum)
	}
	for m, fm := range f.F {
		for i := range fm {
			k := i % R
			j := s[k]
			e := i - k + j
			fm[i] = draw.Gamma(r, q.alpha[m][e], q.beta[m][e]*q.eu[(j*G+node[k])*M+m])
		}
	}
	q.refresh(f)
}

// refresh recomputes T, B and L from the factors.
func (q *reference) refresh(f Factors) {
	R, M := q.R, q.M
	clear(q.T)
	clear(q.B)
	for m, fm := range f.F {
		for i, F := range fm {
			k, logF := i%R, logtab.Log(F)
			for j := range R {
				q.T[k*R+j] += q.term(m, i, j, logF)
				q.B[(k*R+j)*M+m] += q.beta[m][i-k+j] * F
			}
		}
	}
	for k := range R {
		for j := range R {
			q.L[k*R+j] = q.rowOf(k, j)
		}
	}
}

// logDensity is log q(θ) at the point of the last refresh and updates.
func (q *reference) logDensity() float64 {
	return q.perm.logPerm(q.L) - q.logFact
}

// beginColumn computes the minors M_kj of row k, for the updates of component k's entries.
func (q *reference) beginColumn(k int) {
	q.perm.logMinors(q.L, k, q.minor)
}

// prepare readies the conditional of entry e of mode m (component k) at its value old: T_kj and
// B_kj· without it, and with more than one label each label's bound ub_j on its term of entryLog
// less (α − 1)·φ: the term at F = 0, as the sum over the grid falls as F grows.
func (q *reference) prepare(m, e, k int, old float64) {
	R, M := q.R, q.M
	copy(q.bb, q.B[k*R*M:(k+1)*R*M])
	logOld := logtab.Log(old)
	for j := range R {
		q.tb[j] = q.minor[j] + q.T[k*R+j] - q.term(m, e, j, logOld)
		q.bb[j*M+m] -= q.beta[m][e-k+j] * old
		q.bb[j*M+m] = max(q.bb[j*M+m], 0)
		if R > 1 {
			q.ub[j] = q.tb[j] + q.norm[m][e-k+j] + q.orbitLSE(j, q.bb[j*M:(j+1)*M], &q.hint[k*R+j])
		}
	}
}

// labelCut is how far below the sum of entryLog's terms so far a label's bound must fall for the
// label to be left out: it would add less than e^−40 of the sum.
const labelCut = 40

// entryLog is log q(θ) as a function of φ = log F of the prepared entry, up to a constant: the sum
// over the labels j of the terms T_kj + M_kj + log q_j, the label with the highest bound at φ
// first, then every other label whose bound is within labelCut of the sum so far. Where the
// components are told apart, one sum over the grid per call, not R.
func (q *reference) entryLog(m, e int, phi float64) float64 {
	R, M := q.R, q.M
	x, k := math.Exp(phi), e%R
	top := 0
	for j := 1; j < R; j++ {
		if q.ub[j]+(q.alpha[m][e-k+j]-1)*phi > q.ub[top]+(q.alpha[m][e-k+top]-1)*phi {
			top = j
		}
	}
	term := func(j int) float64 {
		ej := e - k + j
		copy(q.b, q.bb[j*M:(j+1)*M])
		q.b[m] += q.beta[m][ej] * x
		return q.tb[j] + q.norm[m][ej] + (q.alpha[m][ej]-1)*phi + q.orbitLSE(j, q.b, &q.hint[k*R+j])
	}
	v := term(top)
	for j := range R {
		if j == top || q.ub[j]+(q.alpha[m][e-k+j]-1)*phi < v-labelCut {
			continue
		}
		v = quad.LogAddExp(v, term(j))
	}
	return v
}

// rowExpansion is log Σ_j exp(M_kj + L[k, j]), log perm(exp L) by its expansion along row k with
// the minors of beginColumn: entryLog at the prepared entry's own value, up to rounding, for
// R exponentials in place of its sums over the grid.
func (q *reference) rowExpansion(k int) float64 {
	v := math.Inf(-1)
	for j := range q.R {
		v = quad.LogAddExp(v, q.minor[j]+q.L[k*q.R+j])
	}
	return v
}

// update moves the prepared entry (component k) from old to nu in T, B and L.
func (q *reference) update(m, e, k int, old, nu float64) {
	R, M := q.R, q.M
	logNu, logOld := logtab.Log(nu), logtab.Log(old)
	for j := range R {
		q.T[k*R+j] += q.term(m, e, j, logNu) - q.term(m, e, j, logOld)
		q.B[(k*R+j)*M+m] += q.beta[m][e-k+j] * (nu - old)
		q.L[k*R+j] = q.rowOf(k, j)
	}
}

// prepareShift readies log q as a function of a scale move of component k, F_m1[·, k]·e^v and
// F_m2[·, k]·e^(−v), which adds v·a_j to T_kj, a_j = (A_jm1 − n1) − (A_jm2 − n2) for n rows, and
// multiplies B_kjm1 by e^v and B_kjm2 by e^(−v).
func (q *reference) prepareShift(k, m1, m2 int, n1, n2 float64) {
	R, M := q.R, q.M
	q.beginColumn(k)
	for j := range R {
		q.tb[j] = q.minor[j] + q.T[k*R+j]
		q.aj[j] = (q.A[j*M+m1] - n1) - (q.A[j*M+m2] - n2)
	}
}

// shiftLog is log q after the prepared scale move by v, up to a constant.
func (q *reference) shiftLog(k, m1, m2 int, v float64) float64 {
	R, M := q.R, q.M
	ev, emv := math.Exp(v), math.Exp(-v)
	out := math.Inf(-1)
	for j := range R {
		copy(q.b, q.B[(k*R+j)*M:(k*R+j+1)*M])
		q.b[m1] *= ev
		q.b[m2] *= emv
		out = quad.LogAddExp(out, q.tb[j]+v*q.aj[j]+q.orbitLSE(j, q.b, &q.hint[k*R+j]))
	}
	return out
}

// shift applies the prepared scale move by v to T, B and L.
func (q *reference) shift(k, m1, m2 int, v float64) {
	R, M := q.R, q.M
	for j := range R {
		q.T[k*R+j] += v * q.aj[j]
		q.B[(k*R+j)*M+m1] *= math.Exp(v)
		q.B[(k*R+j)*M+m2] *= math.Exp(-v)
		q.L[k*R+j] = q.rowOf(k, j)
	}
}

// scaleMoves rescales every component between every pair of modes, F_m1[·, k]·c and F_m2[·, k]/c,
// with v = log c drawn by three slice updates from its conditional on the path from the reference,
//
//	log π_t(v) = (n1 − n2)·v − t·(λ_m1·S1·(e^v − 1) + λ_m2·S2·(e^(−v) − 1)) + (1 − t)·log q(θ(v)),
//
// which the likelihood does not enter (S = the columns' sums, n = rows; the Jacobian as in
// slice.LogScale; log q(θ(v)) from reference.shiftLog). The slice sweeps cross the orbits these
// moves follow only by small steps where the prior binds them weakly (a small matrix with large
// counts).
func (s *sliceState) scaleMoves(r *rand.Rand, t float64) {
	p, R, q := s.p, s.R, s.ref
	for m1 := range p.order {
		for m2 := m1 + 1; m2 < p.order; m2++ {
			n1, n2 := float64(p.shape[m1]), float64(p.shape[m2])
			l1, l2 := p.Rates[m1], p.Rates[m2]
			for k := range R {
				q.prepareShift(k, m1, m2, n1, n2)
				s1, s2 := s.cs[m1][k], s.cs[m2][k]
				h := func(v float64) float64 {
					return (n1-n2)*v - t*(l1*s1*math.Expm1(v)+l2*s2*math.Expm1(-v)) + (1-t)*q.shiftLog(k, m1, m2, v)
				}
				v := 0.0
				for range 3 {
					v = slice.Step(r, h, v, 1)
				}
				if v == 0 {
					continue
				}
				q.shift(k, m1, m2, v)
				s.f.rescale(s.cs, m1, m2, k, math.Exp(v))
			}
		}
	}
}

// shearLog is log q after moving components cr and cs of a matrix along the shear line
// F_0[:, cr] += ε·F_0[:, cs], F_1[:, cs] −= ε·F_1[:, cr] (sliceState.shearMoves): rows cr and cs of
// L recomputed from their changed entries, and the permanent. It needs f at ε = 0 and T, B
// consistent with it.
func (q *reference) shearLog(f Factors, cr, cs int, eps float64) float64 {
	R, M := q.R, q.M
	copy(q.Ls, q.L)
	for _, c := range [2]struct {
		comp, mode, from int
		sign             float64
	}{{cr, 0, cs, 1}, {cs, 1, cr, -1}} {
		fm := f.F[c.mode]
		rows := len(fm) / R
		// The entries' changes do not depend on the label: one logarithm per entry.
		dlog, dx := q.dlog[:rows], q.dx[:rows]
		for i := range rows {
			old := fm[i*R+c.comp]
			nu := old + c.sign*eps*fm[i*R+c.from]
			dlog[i], dx[i] = logtab.Log(nu)-logtab.Log(old), nu-old
		}
		for j := range R {
			t := q.T[c.comp*R+j]
			copy(q.b, q.B[(c.comp*R+j)*M:(c.comp*R+j+1)*M])
			for i := range rows {
				e := i*R + j
				t += (q.alpha[c.mode][e] - 1) * dlog[i]
				q.b[c.mode] += q.beta[c.mode][e] * dx[i]
			}
			q.Ls[c.comp*R+j] = t + q.orbitLSE(j, q.b, &q.hint[c.comp*R+j])
		}
	}
	return q.perm.logPerm(q.Ls) - q.logFact
}

// shearMoves moves each component cr of a matrix, with another one cs drawn at random, along
// the line F_0[:, cr] += ε·F_0[:, cs], F_1[:, cs] −= ε·F_1[:, cr], on which no cell's rate
// changes: the directions that mix the components of a matrix factorisation, flat in the
// likelihood and bound by the prior and the entries' signs alone, which the slice sweeps cross by
// small steps where the counts are large. The map is linear with unit determinant, so ε's
// conditional on the path is
//
//	log π_t(ε) = −t·ε·(λ_0·Σ_i F_0[i, cs] − λ_1·Σ_j F_1[j, cr]) + (1 − t)·log q(θ(ε))
//
// on the interval where every entry stays positive (as models.Poisson's shear, whose prior term
// this is; without a reference, q's term is left out), and three slice updates draw it. Tensors
// of higher order have no such lines.
func (s *sliceState) shearMoves(r *rand.Rand, t float64) {
	p, R, q := s.p, s.R, s.ref
	if p.order != 2 || R < 2 {
		return
	}
	w, h := s.f.F[0], s.f.F[1]
	for cr := range R {
		cs := (cr + 1 + r.IntN(R-1)) % R
		lo, hi := math.Inf(-1), math.Inf(1)
		for i := cr; i < len(w); i += R {
			lo = max(lo, -w[i]/w[i-cr+cs])
		}
		for j := cs; j < len(h); j += R {
			hi = min(hi, h[j]/h[j-cs+cr])
		}
		if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
			continue
		}
		k := p.Rates[0]*s.cs[0][cs] - p.Rates[1]*s.cs[1][cr]
		logp := func(eps float64) float64 {
			if !(eps > lo && eps < hi) {
				return math.Inf(-1)
			}
			if q == nil {
				return -t * eps * k
			}
			return -t*eps*k + (1-t)*q.shearLog(s.f, cr, cs, eps)
		}
		eps := 0.0
		for range 3 {
			eps = slice.Step(r, logp, eps, (hi-lo)/4)
		}
		if eps == 0 {
			continue
		}
		for i := cr; i < len(w); i += R {
			w[i] += eps * w[i-cr+cs]
		}
		for j := cs; j < len(h); j += R {
			h[j] -= eps * h[j-cs+cr]
		}
		s.cs[0][cr] += eps * s.cs[0][cs]
		s.cs[1][cs] -= eps * s.cs[1][cr]
		if q != nil {
			q.refresh(s.f)
		}
	}
}

// pathMoves are the moves along the directions the likelihood leaves flat that every sweep on the
// path from a reference ends with: the components' scales, a matrix's shears, and the transfers of
// a row's mass between components alike in every other mode.
func (s *sliceState) pathMoves(r *rand.Rand, t float64) {
	s.scaleMoves(r, t)
	s.shearMoves(r, t)
	s.transferMoves(r, t)
}

// crossFlats moves g's point at t = 1 along a matrix's shear lines and the transfer lines between
// alike components (shearMoves and transferMoves without a reference), which g's sweeps cross a
// count's worth at a time; the scale orbits g's own moves cross.
func (s *sliceState) crossFlats(r *rand.Rand, g *gibbs) {
	s.f.CopyFrom(g.State)
	s.refresh()
	s.shearMoves(r, 1)
	s.transferMoves(r, 1)
	g.SetState(s.f)
}
