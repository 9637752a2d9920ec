package completion

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
)

// Alone, as the partner of a [FeasObs], says the job ran by itself.
const Alone = -1

// FeasObs is one observed feasibility outcome: job I sharing worker type W with job K (or
// running by itself when K is [Alone]) did or did not fit.
type FeasObs struct {
	W, I, K    int
	Infeasible bool
}

// FootprintSettings configures [FitFootprints]. Zero fields select defaults; a negative Lambda
// switches that penalty off.
type FootprintSettings struct {
	LambdaSize     float64 // L2 on each job's footprint shared by every worker type; 0 means 1
	LambdaDev      float64 // L2 on a job's footprint on one worker type beyond its shared one; 0 means 1
	LambdaFeature  float64 // L2 on the per-worker-type feature weights; 0 means 1
	LambdaCapacity float64 // L2 on capacities, so a worker type where everything fits stays finite; 0 means 0.01
	// InfeasibleWeight is the weight of an infeasible outcome in the likelihood, a feasible one
	// weighing 1: above 1 when missing an infeasible pair costs more than a false alarm, so the
	// fit bends to explain every infeasible outcome instead of treating a few as noise; 0 or less means 1.
	InfeasibleWeight float64
	MaxIter          int     // Newton steps; 0 means 100
	Tol              float64 // stop when no parameter moves more than this; 0 means 1e-8
}

// validate rejects settings FitFootprints cannot use, as Settings.validate does Fit's: a
// negative iteration cap (no Newton step would run, leaving the all-zero start returned as if
// fitted) and a NaN or infinite penalty or InfeasibleWeight (the objective is NaN at every θ, so
// no step is accepted and the all-zero start was reported as converged). A finite negative
// penalty keeps its documented meaning, none, and a finite InfeasibleWeight of 0 or less means 1.
// The error names every bad field and wraps ErrBadSettings.
func (s FootprintSettings) validate() error {
	bad := checkAllFinite(checkMaxIter(nil, s.MaxIter, 100),
		field{"LambdaSize", s.LambdaSize}, field{"LambdaDev", s.LambdaDev}, field{"LambdaFeature", s.LambdaFeature},
		field{"LambdaCapacity", s.LambdaCapacity}, field{"InfeasibleWeight", s.InfeasibleWeight})
	return settingsError("footprint fit: ", bad)
}

func (s FootprintSettings) withDefaults() FootprintSettings {
	penaltyDefault(&s.LambdaSize, 1)
	penaltyDefault(&s.LambdaDev, 1)
	penaltyDefault(&s.LambdaFeature, 1)
	penaltyDefault(&s.LambdaCapacity, 0.01)
	if s.InfeasibleWeight <= 0 {
		s.InfeasibleWeight = 1
	}
	if s.MaxIter == 0 {
		s.MaxIter = 100
	}
	if s.Tol == 0 {
		s.Tol = 1e-8
	}
	return s
}

// FootprintModel is a fitted threshold model of feasibility: jobs i and k fit together on
// worker type w unless their footprints add up to more than its capacity,
//
//	logit P(infeasible) = F(w, i) + F(w, k) − Capacity[w],   F(w, i) = Size[i] + Dev[i][w] + Beta[w]·x_i
//
// and a job alone is infeasible with logit F(w, i) − Capacity[w]. Footprints are in logit units:
// they are only known up to the steepness the penalties allow, so they rank jobs (and worker
// types) but are not bytes.
type FootprintModel struct {
	Workers, Jobs int
	Capacity      []float64   // [w]
	Size          []float64   // [job]
	Dev           [][]float64 // [job][w]
	Beta          [][]float64 // [w][feature]
	X             [][]float64 // features [job][feature], may have zero columns
	Iterations    int
	Status        Status
}

// Footprint returns job i's footprint on worker type w.
func (m *FootprintModel) Footprint(w, i int) float64 {
	v := m.Size[i] + m.Dev[i][w]
	for f, b := range m.Beta[w] {
		v += b * m.X[i][f]
	}
	return v
}

// Logit returns the log-odds that i and k (or i alone when k is [Alone]) do not fit on w.
func (m *FootprintModel) Logit(w, i, k int) float64 {
	v := m.Footprint(w, i) - m.Capacity[w]
	if k != Alone {
		v += m.Footprint(w, k)
	}
	return v
}

// Prob returns the probability that i and k (or i alone) do not fit on w; it is symmetric in
// i and k.
func (m *FootprintModel) Prob(w, i, k int) float64 { return 1 / (1 + math.Exp(-m.Logit(w, i, k))) }

// FitFootprints fits a [FootprintModel] to obs by penalized logistic regression (Newton's
// method with step halving; the objective is convex, so the result does not depend on a
// start or seed). features may be nil; otherwise it has one row per job. A job with no
// observations keeps zero size and deviations, so its footprint comes from its features alone.
//
// Why a threshold on a sum: running out of memory is two footprints against one capacity, so a
// job seen not to fit with a large partner says little about a small one, and a job's partners
// rank much the same way on every worker type; the shared Size carries that order to worker types
// where a job was not measured. Why log-odds and not least squares on the 0/1 outcome: a job
// that fits with nobody would pull every partner's least-squares score up with it, while under
// the logistic loss its size alone can grow to explain it.
//
// Settings it cannot use (a negative MaxIter, a NaN or infinite penalty or InfeasibleWeight) are
// an error wrapping [ErrBadSettings]. A parameter whose penalty is off (a negative Lambda) and
// that no observation determines is an error naming it, since any value of it fits as well as
// any other: the capacity of a worker type, size of a job or deviation of a job on a worker type
// with no observation, or the weight of a feature that is 0 for every job observed on its worker
// type. So are sums beyond the range of float64 (features or an InfeasibleWeight near it). With
// penalties off, outcomes that a threshold separates exactly have no most likely footprints (the
// further apart, the likelier): the fit ends where float64 shows no more progress, with
// footprints far apart.
//
// It checks ctx before every Newton step and every conjugate-gradient step within one, and once
// ctx is done returns no model and an error wrapping ctx.Err().
func FitFootprints(ctx context.Context, obs []FeasObs, workers, jobs int, features *mat.Dense, s FootprintSettings) (*FootprintModel, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if len(obs) == 0 {
		return nil, ErrNoObservations
	}
	s = s.withDefaults()
	nf := featureCount(features, jobs)
	for x, o := range obs {
		if o.W < 0 || o.W >= workers || o.I < 0 || o.I >= jobs || o.K < Alone || o.K >= jobs {
			panic(fmt.Sprintf("completion: feasibility observation %d (%d, %d, %d) out of range", x, o.W, o.I, o.K))
		}
	}
	m := &FootprintModel{Workers: workers, Jobs: jobs, Capacity: make([]float64, workers), Size: make([]float64, jobs),
		Dev: grid(jobs, workers), Beta: grid(workers, nf), X: grid(jobs, nf)}
	if err := finiteFeatures(features); err != nil {
		return nil, err
	}
	for i := 0; i < jobs; i++ {
		for f := 0; f < nf; f++ {
			m.X[i][f] = features.At(i, f)
		}
	}
	fp := footprintProblem{m: m, obs: obs, s: s, nf: nf}
	if err := fp.solve(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// footprintProblem lays out the model's parameters as one vector θ: capacities, sizes,
// deviations ([job][w]) and feature weights ([w][feature]).
type footprintProblem struct {
	m   *FootprintModel
	obs []FeasObs
	s   FootprintSettings
	nf  int
}

func (p *footprintProblem) size() int {
	W, n := p.m.Workers, p.m.Jobs
	return W + n + n*W + W*p.nf
}

// paramName says which of the model's parameters θ[j] is, for an error message.
func (p *footprintProblem) paramName(j int) string {
	W, n := p.m.Workers, p.m.Jobs
	switch {
	case j < W:
		return fmt.Sprintf("capacity of worker type %d", j)
	case j < W+n:
		return fmt.Sprintf("size of job %d", j-W)
	case j < W+n+n*W:
		return fmt.Sprintf("deviation of job %d on worker type %d", (j-W-n)/W, (j-W-n)%W)
	}
	j -= W + n + n*W
	return fmt.Sprintf("weight of feature %d on worker type %d", j%p.nf, j/p.nf)
}

// sparseRow is one observation's design row: its logit is Σ val[x]·θ[idx[x]]. A row touches a
// capacity and one or two footprints, so it has a handful of entries whatever the table's size.
type sparseRow struct {
	idx []int
	val []float64
}

func (r sparseRow) dot(theta []float64) float64 {
	z := 0.0
	for x, j := range r.idx {
		z += r.val[x] * theta[j]
	}
	return z
}

// addFootprint appends job i's footprint on worker type w (size, deviation, feature terms).
func (p *footprintProblem) addFootprint(r *sparseRow, w, i int) {
	W, n := p.m.Workers, p.m.Jobs
	r.idx = append(r.idx, W+i, W+n+i*W+w)
	r.val = append(r.val, 1, 1)
	base := W + n + n*W + w*p.nf
	for f := 0; f < p.nf; f++ {
		r.idx = append(r.idx, base+f)
		r.val = append(r.val, p.m.X[i][f])
	}
}

// design returns the observation's row. A job next to itself counts its footprint twice.
func (p *footprintProblem) design(o FeasObs) sparseRow {
	r := sparseRow{idx: []int{o.W}, val: []float64{-1}}
	p.addFootprint(&r, o.W, o.I)
	switch o.K {
	case Alone:
	case o.I:
		for x := 1; x < len(r.val); x++ {
			r.val[x] *= 2
		}
	default:
		p.addFootprint(&r, o.W, o.K)
	}
	return r
}

// penalty returns each parameter's L2 weight.
func (p *footprintProblem) penalty() []float64 {
	W, n := p.m.Workers, p.m.Jobs
	pen := make([]float64, p.size())
	for j := range pen {
		switch {
		case j < W:
			pen[j] = p.s.LambdaCapacity
		case j < W+n:
			pen[j] = p.s.LambdaSize
		case j < W+n+n*W:
			pen[j] = p.s.LambdaDev
		default:
			pen[j] = p.s.LambdaFeature
		}
	}
	return pen
}

// objective is the negative log-likelihood plus the penalty at θ.
func (p *footprintProblem) objective(rows []sparseRow, theta, pen []float64) float64 {
	obj := 0.0
	for x, o := range p.obs {
		z := rows[x].dot(theta)
		if o.Infeasible {
			obj += p.s.InfeasibleWeight * softplus(-z)
		} else {
			obj += softplus(z)
		}
	}
	for j, t := range theta {
		obj += 0.5 * pen[j] * t * t
	}
	return obj
}

// softplus is log(1 + e^z), without overflow.
func softplus(z float64) float64 {
	if z > 30 {
		return z
	}
	return math.Log1p(math.Exp(z))
}

// solve runs Newton's method from θ = 0 and stores θ in the model; it stops with an error
// wrapping ctx.Err() once ctx is done.
func (p *footprintProblem) solve(ctx context.Context) error {
	P := p.size()
	rows := make([]sparseRow, len(p.obs))
	for x, o := range p.obs {
		rows[x] = p.design(o)
	}
	pen := p.penalty()
	// A parameter is determined by the data only where some row's coefficient on it is nonzero:
	// a feature weight whose feature is 0 for every job observed on its worker type appears in
	// rows but not in the likelihood. Without a penalty either, any value fits as well as any
	// other, and its Hessian row is zero: the conjugate-gradient step would be 0/0, no step
	// accepted, and the all-zero start would look converged.
	hasData := make([]bool, P)
	for _, r := range rows {
		for x, j := range r.idx {
			hasData[j] = hasData[j] || r.val[x] != 0
		}
	}
	for j := range pen {
		if pen[j] == 0 && !hasData[j] {
			return fmt.Errorf("completion: footprint fit: the %s has neither data nor penalty", p.paramName(j))
		}
	}
	theta := make([]float64, P)
	obj := p.objective(rows, theta, pen)
	p.m.Status = IterationCap
	next := make([]float64, P)
	for it := 1; it <= p.s.MaxIter; it++ {
		if err := stopped(ctx, "footprint fit", it); err != nil {
			return err
		}
		p.m.Iterations = it
		step, err := p.newtonStep(ctx, rows, theta, pen)
		if err != nil {
			return fmt.Errorf("completion: footprint fit stopped in iteration %d: %w", it, err)
		}
		// Step halving keeps every step downhill; near the optimum the full step is taken.
		moved := 0.0
		for t := 1.0; t >= 1.0/1024; t /= 2 {
			for j := range theta {
				next[j] = theta[j] - t*step[j]
			}
			if o := p.objective(rows, next, pen); o <= obj {
				obj = o
				for j := range theta {
					moved = math.Max(moved, math.Abs(next[j]-theta[j]))
				}
				copy(theta, next)
				break
			}
		}
		if moved <= p.s.Tol {
			p.m.Status = Converged
			break
		}
	}
	p.store(theta)
	return nil
}

// newtonStep returns H⁻¹g at θ, with g and H the objective's gradient and Hessian, solved by
// conjugate gradients on Hessian-vector products (H = Σ wt·q(1−q)·row rowᵀ + diag(pen)), so a
// step costs a few passes over the rows rather than a dense factorization of a matrix with a
// parameter per job and worker type: the dense version took over 50 s at 800 job types. It
// returns ctx.Err() if ctx is done before the solve ends, and an error naming the parameter if
// the gradient, the Hessian's diagonal or the step is not finite.
func (p *footprintProblem) newtonStep(ctx context.Context, rows []sparseRow, theta, pen []float64) ([]float64, error) {
	P := len(theta)
	g := make([]float64, P)
	curv := make([]float64, len(rows)) // wt·q(1−q) per row
	diag := make([]float64, P)         // H's diagonal, the preconditioner
	for x, o := range p.obs {
		q := 1 / (1 + math.Exp(-rows[x].dot(theta)))
		y, wt := 0.0, 1.0
		if o.Infeasible {
			y, wt = 1, p.s.InfeasibleWeight
		}
		curv[x] = wt * q * (1 - q)
		for k, a := range rows[x].idx {
			v := rows[x].val[k]
			g[a] += wt * (q - y) * v
			diag[a] += curv[x] * v * v
		}
	}
	for j := range theta {
		g[j] += pen[j] * theta[j]
		diag[j] += pen[j]
		if diag[j] == 0 {
			// No curvature: an unpenalized parameter whose rows all have q exactly 0 or 1 (a
			// separable fit's logits past ±37). Its Hessian row and column are then zero, so
			// Newton's model has no step for it; it stays where it is this step, rather than
			// make the preconditioned residual 0/0 and the whole step NaN.
			g[j], diag[j] = 0, 1
		}
		// Sums that overflowed (features or an InfeasibleWeight near the float64 range) would
		// give a zero or NaN step, which looks like convergence at the all-zero start.
		if !finite(g[j]) || !finite(diag[j]) {
			return nil, fmt.Errorf("the %s has gradient %v and curvature %v: features or InfeasibleWeight too large for float64", p.paramName(j), g[j], diag[j])
		}
	}
	hv := func(v, out []float64) {
		for j := range out {
			out[j] = pen[j] * v[j]
		}
		for x, r := range rows {
			c := curv[x] * r.dot(v)
			for k, a := range r.idx {
				out[a] += c * r.val[k]
			}
		}
	}
	step, err := conjugateGradient(ctx, hv, g, diag, 1e-12, 4*P)
	if err != nil {
		return nil, err
	}
	for j, v := range step {
		if !finite(v) {
			// A NaN step would make every trial objective NaN: no step accepted, and the fit
			// reported as converged wherever θ stands.
			return nil, fmt.Errorf("the Newton step is %v for the %s", v, p.paramName(j))
		}
	}
	return step, nil
}

// conjugateGradient solves A x = b for a symmetric positive (semi)definite A given as a product
// hv, preconditioned by A's diagonal (every entry positive), until the residual's norm falls
// below tol times b's (or after maxIter steps, or at a direction without curvature). It checks
// ctx before every step, each a pass over the rows that dwarfs the check, and returns ctx.Err()
// once ctx is done.
func conjugateGradient(ctx context.Context, hv func(v, out []float64), b, diag []float64, tol float64, maxIter int) ([]float64, error) {
	n := len(b)
	x := make([]float64, n)
	r := append([]float64(nil), b...)
	z := make([]float64, n)
	for j := range z {
		z[j] = r[j] / diag[j]
	}
	d := append([]float64(nil), z...)
	ad := make([]float64, n)
	rz := floats.Dot(r, z)
	stop := tol * tol * floats.Dot(b, b)
	for it := 0; it < maxIter && floats.Dot(r, r) > stop; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hv(d, ad)
		dad := floats.Dot(d, ad)
		if !(dad > 0) {
			// No curvature along d, which only a semidefinite A has (penalties off, and rows
			// saturated at q exactly 0 or 1 or parameters collinear): the quadratic has no
			// minimum along d, and dividing by dad would make the step NaN. Keep what the
			// solve has.
			break
		}
		alpha := rz / dad
		floats.AddScaled(x, alpha, d)
		floats.AddScaled(r, -alpha, ad)
		for j := range z {
			z[j] = r[j] / diag[j]
		}
		rzNext := floats.Dot(r, z)
		for j := range d {
			d[j] = z[j] + rzNext/rz*d[j]
		}
		rz = rzNext
	}
	return x, nil
}

// store copies θ into the model's fields.
func (p *footprintProblem) store(theta []float64) {
	W, n := p.m.Workers, p.m.Jobs
	copy(p.m.Capacity, theta[:W])
	copy(p.m.Size, theta[W:W+n])
	for i := 0; i < n; i++ {
		copy(p.m.Dev[i], theta[W+n+i*W:W+n+(i+1)*W])
	}
	for w := 0; w < W; w++ {
		copy(p.m.Beta[w], theta[W+n+n*W+w*p.nf:W+n+n*W+(w+1)*p.nf])
	}
}
