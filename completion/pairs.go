package completion

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// PairObs is one observed entry of a co-location tensor: Y is the value for job I when it
// shares worker type W with job K (for example log(I's normalized rate)). Measuring a pair
// usually yields two observations, (W, I, K) and (W, K, I).
//
// A censored observation only bounds the value from below: the measurement saturated at Y and
// the true value is Y or more (a co-located rate clipped at the isolated rate, say), so a
// prediction above Y costs nothing and one below it the usual squared error.
type PairObs struct {
	W, I, K  int
	Y        float64
	Censored bool
}

// PairSettings configures [FitPairs]. Zero fields select defaults.
type PairSettings struct {
	Dim          int     // embedding dimension; 0 means 2, negative means none
	LambdaBias   float64 // L2 on per-job victim/aggressor biases; 0 means 1
	LambdaShare  float64 // L2 pulling a job's biases on each worker type towards its own mean over types; 0 means 1, negative none
	LambdaEmbed  float64 // L2 on embeddings; 0 means 1
	LambdaGlobal float64 // L2 on per-worker feature and interaction weights; 0 means 0.1
	// LambdaWorker, when positive, gives each job a deviation U[w][j] of its embedding per
	// worker type (its embedding on w is Z[j] + U[w][j]), with this L2 penalty; 0 means none:
	// one embedding per job for every worker type.
	LambdaWorker float64
	Seed         uint64  // seed for the random initial embeddings
	Tol          float64 // relative objective change to stop at; 0 means 1e-7
	MaxIter      int     // 0 means 300
}

// penaltyDefault applies the Settings convention for an L2 weight: zero selects the default d,
// negative selects no penalty.
func penaltyDefault(x *float64, d float64) {
	if *x == 0 {
		*x = d
	} else if *x < 0 {
		*x = 0
	}
}

// validate rejects settings FitPairsWithPrior cannot use, as Settings.validate does Fit's: a
// negative iteration cap (no iteration would run, leaving the random start returned as if
// fitted) and a NaN or infinite penalty, here or in prior (nil: none). A NaN penalty makes
// every prediction NaN, an infinite one the objective NaN (∞·0), so neither yields a fit. A
// finite negative penalty keeps its documented meaning, none, and a negative Tol is never met,
// so the fit runs to MaxIter. The error names every bad field and wraps ErrBadSettings.
func (s PairSettings) validate(prior *PairPrior) error {
	bad := checkAllFinite(checkMaxIter(nil, s.MaxIter, 300),
		field{"LambdaBias", s.LambdaBias}, field{"LambdaShare", s.LambdaShare}, field{"LambdaEmbed", s.LambdaEmbed},
		field{"LambdaGlobal", s.LambdaGlobal}, field{"LambdaWorker", s.LambdaWorker})
	if prior != nil {
		bad = checkFinite(bad, "prior Lambda", prior.Lambda)
	}
	return settingsError("pair fit: ", bad)
}

// withDefaults replaces zero (and negative, where documented) fields by their values.
func (s PairSettings) withDefaults() PairSettings {
	if s.Dim == 0 {
		s.Dim = 2
	} else if s.Dim < 0 {
		s.Dim = 0
	}
	penaltyDefault(&s.LambdaBias, 1)
	penaltyDefault(&s.LambdaShare, 1)
	penaltyDefault(&s.LambdaEmbed, 1)
	penaltyDefault(&s.LambdaGlobal, 0.1)
	if s.Tol == 0 {
		s.Tol = 1e-7
	}
	if s.MaxIter == 0 {
		s.MaxIter = 300
	}
	return s
}

// PairModel is a fitted pairwise model:
//
//	Y(w, i, k) ≈ Mean[w] + Beta[w]·x_i + Gamma[w]·x_k + A[i][w] + C[k][w] + Σ_{d,e} G[w][d,e]·Z[i][d]·Z[k][e]
//
// x_i are the jobs' side features (row i of the feature matrix), A is how much a job suffers on
// a worker type beyond what its features say, C how much it slows its partner, and Z one
// embedding per job used in both roles, combined per worker type by the (not necessarily
// symmetric) matrix G[w], so how i suffers next to k may differ from how k suffers next to i.
// With PairSettings.LambdaWorker, Z[i] there is Z[i] + U[w][i] on worker type w: a job's
// interference may differ between worker types in ways its shared embedding and per-type
// biases do not capture (on Gavel's V100 the Recommendation jobs slow each other far more,
// relative to other pairs, than on a K80 or P100).
type PairModel struct {
	Workers, Jobs, Dim int
	Mean               []float64
	Beta, Gamma        [][]float64   // [w][feature]
	G                  [][]float64   // [w][d·Dim+e]: interaction weights between Z[i][d] and Z[k][e]
	A, C               [][]float64   // [job][w]
	Z                  [][]float64   // [job][dim]
	U                  [][][]float64 // [w][job][dim] per-worker deviations of Z; nil without LambdaWorker
	e                  [][][]float64 // [w][job][dim] Z + U, the embedding on w; nil without U
	AM, CM             []float64     // per-job means of A and C over worker types (with sharing)
	vf, af             [][]float64   // cached Beta[w]·x_i and Gamma[w]·x_k, [w][job]
	gz, gtz            [][][]float64 // cached G[w]·emb(w, j) and G[w]ᵀ·emb(w, j), [w][job][dim]
	X                  [][]float64   // features [job][feature], may have zero columns
	Iterations         int
	prior              *PairPrior
	Status             Status
	Objective          float64
}

// Predict returns the model's value for job i next to job k on worker type w.
func (m *PairModel) Predict(w, i, k int) float64 {
	v := m.Mean[w] + m.A[i][w] + m.C[k][w]
	for f := range m.Beta[w] {
		v += m.Beta[w][f]*m.X[i][f] + m.Gamma[w][f]*m.X[k][f]
	}
	D := m.Dim
	zi, zk := m.embedding(w, i), m.embedding(w, k)
	for d := 0; d < D; d++ {
		for e := 0; e < D; e++ {
			v += m.G[w][d*D+e] * zi[d] * zk[e]
		}
	}
	return v
}

// embedding returns a new copy of job i's embedding on worker type w, Z[i] + U[w][i]. Predict and
// Grid compute it afresh rather than read the fit's cache (emb), so they follow a caller's edits
// of the exported Z and U.
func (m *PairModel) embedding(w, i int) []float64 {
	dst := append([]float64(nil), m.Z[i]...)
	if m.U != nil {
		for d := range dst {
			dst[d] += m.U[w][i][d]
		}
	}
	return dst
}

// emb returns job i's embedding on worker type w, from the cache kept during the fit.
func (m *PairModel) emb(w, i int) []float64 {
	if m.e == nil {
		return m.Z[i]
	}
	return m.e[w][i]
}

// refreshEmb recomputes what is cached of job j after Z[j] or U[·][j] changed: its per-worker
// embeddings and their couplings.
func (m *PairModel) refreshEmb(j int) {
	for w := range m.G {
		if m.e != nil {
			for d := range m.Z[j] {
				m.e[w][j][d] = m.Z[j][d] + m.U[w][j][d]
			}
		}
		m.refreshCoupling(w, j)
	}
}

// refreshCoupling recomputes job j's couplings on worker type w, G[w]·emb and G[w]ᵀ·emb: every
// observation of a partner of j needs one, so computing them once per change of G[w] or of j's
// embedding, rather than per observation, takes the fit's most repeated product out of its
// inner loop.
func (m *PairModel) refreshCoupling(w, j int) {
	D := m.Dim
	z := m.emb(w, j)
	for d := 0; d < D; d++ {
		f, g := 0.0, 0.0
		for e := 0; e < D; e++ {
			f += m.G[w][d*D+e] * z[e]
			g += m.G[w][e*D+d] * z[e]
		}
		m.gz[w][j][d], m.gtz[w][j][d] = f, g
	}
}

// FitPairs fits a [PairModel] to obs by alternating ridge regressions: the per-worker weights
// with every job fixed, then each job's biases and embedding with everything else fixed
// (Gauss-Seidel over jobs). features may be nil; otherwise it has one row per job. A job with no
// observations keeps zero biases and embedding, so its predictions come from its features alone
// (a cold start). A NaN or infinite feature is an error, as in [FitFootprints], and settings it
// cannot use (a negative MaxIter, a NaN or infinite penalty) are an error wrapping
// [ErrBadSettings]. It checks ctx before every iteration and, once ctx is done, returns no model
// and an error wrapping ctx.Err().
func FitPairs(ctx context.Context, obs []PairObs, workers, jobs int, features *mat.Dense, s PairSettings) (*PairModel, error) {
	return FitPairsWithPrior(ctx, obs, workers, jobs, features, nil, s)
}

// JobWeight is one term of a [PairPrior] mix.
type JobWeight struct {
	Job    int
	Weight float64
}

// PairPrior says, for some jobs, which other jobs they probably resemble. A job measured next to
// few partners has an embedding that its own observations barely determine, and the L2 penalty
// alone shrinks it to zero, the embedding of a job that interferes like nobody in particular;
// pulling it instead towards the embeddings of jobs known to behave alike (for example its
// nearest references by fingerprint) carries over their interference pattern with partners the
// job was never measured with, while its own observations still correct it.
type PairPrior struct {
	// Mix lists, per job, the jobs (with weights summing to 1) whose mean embedding the job's
	// embedding is pulled towards; nil or empty for none. A job with a mix gets that pull even
	// without observations.
	Mix [][]JobWeight
	// Lambda weighs the pull, Lambda·|Z_j − Σ weight·Z_mix|², on top of LambdaEmbed·|Z_j|²;
	// zero or negative means no pull, as a negative penalty in PairSettings means none.
	Lambda float64
	// WorkerMix, [w][job], gives per worker type the jobs whose mean deviation on w
	// (PairSettings.LambdaWorker) a job's deviation on w is pulled towards, with weight Lambda;
	// nil means Mix on every worker type. How a job interferes on one worker type may resemble
	// other jobs than how it does on another, and its entries on w say which.
	WorkerMix [][][]JobWeight
}

// FitPairsWithPrior is [FitPairs] with embeddings pulled towards prior's mixes (nil: none).
// The pull is one-way: the jobs in a mix are fitted as if nobody were pulled towards them, so the
// Objective (which counts the pull) need not fall at every iteration as it does without a prior.
// A NaN or infinite prior Lambda is an error wrapping [ErrBadSettings], as unusable settings are.
// It panics if prior's Mix (or a WorkerMix) has a length other than jobs or names a job out of
// range, or WorkerMix has one other than workers. Like FitPairs, it stops once ctx is done.
func FitPairsWithPrior(ctx context.Context, obs []PairObs, workers, jobs int, features *mat.Dense, prior *PairPrior, s PairSettings) (*PairModel, error) {
	if err := s.validate(prior); err != nil {
		return nil, err
	}
	if len(obs) == 0 {
		return nil, ErrNoObservations
	}
	s = s.withDefaults()
	idx, err := indexPairObs(obs, workers, jobs)
	if err != nil {
		return nil, err
	}
	checkPrior(prior, workers, jobs)
	featureCount(features, jobs) // panics on a row count other than jobs, before the check below
	if err := finiteFeatures(features); err != nil {
		return nil, err // a NaN feature would make every prediction NaN
	}
	m := newPairModel(workers, jobs, features, s)
	m.prior = prior
	rng := rand.New(rand.NewPCG(s.Seed, 0x2545f4914f6cdd1d))
	for i := range m.Z {
		if len(idx.asVictim[i])+len(idx.asAggressor[i]) == 0 {
			continue
		}
		for d := range m.Z[i] {
			m.Z[i][d] = 0.3 * rng.NormFloat64()
		}
		m.refreshEmb(i)
	}
	// Censored observations are fitted by majorization: each iteration fits the plain squared
	// error to the targets max(Y, current prediction), an upper bound on the one-sided loss that
	// touches it at the current model, so what lowers the bound lowers the loss.
	fit := obs
	var pred []float64
	if anyCensored(obs) {
		fit = append([]PairObs(nil), obs...)
		pred = m.predictions(obs, nil)
	}
	prev := math.Inf(1)
	m.Status = IterationCap
	scratch := m.newJobScratch()
	for it := 1; it <= s.MaxIter; it++ {
		if err := stopped(ctx, "pair fit", it); err != nil {
			return nil, err
		}
		m.Iterations = it
		for x, o := range obs {
			if o.Censored {
				fit[x].Y = math.Max(o.Y, pred[x])
			}
		}
		for w := 0; w < workers; w++ {
			m.fitWorker(w, fit, idx.byWorker[w], s)
			m.cacheFeatures(w)
			for j := 0; j < jobs; j++ {
				m.refreshCoupling(w, j)
			}
		}
		for j := 0; j < jobs; j++ {
			m.fitJob(j, fit, idx.asVictim[j], idx.asAggressor[j], s, scratch)
		}
		var obj float64
		obj, pred = m.objective(obs, s, pred)
		m.Objective = obj
		if math.Abs(prev-obj) <= s.Tol*math.Max(obj, 1e-12) {
			m.Status = Converged
			break
		}
		prev = obj
	}
	return m, nil
}

// checkPrior panics if prior (when given) does not fit workers worker types and jobs jobs.
func checkPrior(prior *PairPrior, workers, jobs int) {
	if prior == nil {
		return
	}
	checkMixes(prior.Mix, jobs, "")
	if prior.WorkerMix != nil && len(prior.WorkerMix) != workers {
		panic(fmt.Sprintf("completion: prior worker mixes for %d worker types, want %d", len(prior.WorkerMix), workers))
	}
	for w, mixes := range prior.WorkerMix {
		checkMixes(mixes, jobs, fmt.Sprintf(" on worker type %d", w))
	}
}

// checkMixes panics if mixes (where says which) do not fit jobs jobs.
func checkMixes(mixes [][]JobWeight, jobs int, where string) {
	if len(mixes) != jobs {
		panic(fmt.Sprintf("completion: prior mixes%s for %d jobs, want %d", where, len(mixes), jobs))
	}
	for j, mix := range mixes {
		for _, t := range mix {
			if t.Job < 0 || t.Job >= jobs {
				panic(fmt.Sprintf("completion: prior mix%s of job %d names job %d, out of range", where, j, t.Job))
			}
		}
	}
}

func anyCensored(obs []PairObs) bool {
	for _, o := range obs {
		if o.Censored {
			return true
		}
	}
	return false
}

// pairIndex lists, by position in obs, the observations each job takes part in as the job that
// suffers (asVictim) and as the partner (asAggressor; self pairs count once, as victim), and the
// observations on each worker type.
type pairIndex struct {
	asVictim, asAggressor, byWorker [][]int
}

// indexPairObs checks obs (indices in range: panic; values finite: error) and indexes it.
func indexPairObs(obs []PairObs, workers, jobs int) (pairIndex, error) {
	idx := pairIndex{asVictim: make([][]int, jobs), asAggressor: make([][]int, jobs), byWorker: make([][]int, workers)}
	for x, o := range obs {
		if o.W < 0 || o.W >= workers || o.I < 0 || o.I >= jobs || o.K < 0 || o.K >= jobs {
			panic(fmt.Sprintf("completion: observation %d (%d, %d, %d) out of range", x, o.W, o.I, o.K))
		}
		if math.IsNaN(o.Y) || math.IsInf(o.Y, 0) {
			return idx, fmt.Errorf("completion: observation %d (%d, %d, %d) is %v", x, o.W, o.I, o.K, o.Y)
		}
		idx.asVictim[o.I] = append(idx.asVictim[o.I], x)
		if o.K != o.I {
			idx.asAggressor[o.K] = append(idx.asAggressor[o.K], x)
		}
		idx.byWorker[o.W] = append(idx.byWorker[o.W], x)
	}
	return idx, nil
}

// featureCount returns the number of side features per job (0 without features); it panics
// if features has a row count other than jobs.
func featureCount(features *mat.Dense, jobs int) int {
	if features == nil {
		return 0
	}
	r, c := features.Dims()
	if r != jobs {
		panic(fmt.Sprintf("completion: %d feature rows for %d jobs", r, jobs))
	}
	return c
}

// finiteFeatures returns an error naming the first feature (job, then feature index) that is
// NaN or infinite; nil features have none.
func finiteFeatures(features *mat.Dense) error {
	if features == nil {
		return nil
	}
	r, c := features.Dims()
	for i := 0; i < r; i++ {
		for f := 0; f < c; f++ {
			if v := features.At(i, f); math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("completion: feature %d of job %d is %v", f, i, v)
			}
		}
	}
	return nil
}

// newPairModel returns the starting model: everything zero but the features and each worker
// type's interaction matrix G[w], the identity. It panics if features has a row count other
// than jobs.
func newPairModel(workers, jobs int, features *mat.Dense, s PairSettings) *PairModel {
	nf := featureCount(features, jobs)
	m := &PairModel{Workers: workers, Jobs: jobs, Dim: s.Dim,
		Mean: make([]float64, workers), Beta: grid(workers, nf), Gamma: grid(workers, nf),
		G: grid(workers, s.Dim*s.Dim), vf: grid(workers, jobs), af: grid(workers, jobs),
		AM: make([]float64, jobs), CM: make([]float64, jobs), A: grid(jobs, workers), C: grid(jobs, workers),
		Z: grid(jobs, s.Dim), X: grid(jobs, nf), gz: make([][][]float64, workers), gtz: make([][][]float64, workers)}
	for w := range m.gz {
		m.gz[w], m.gtz[w] = grid(jobs, s.Dim), grid(jobs, s.Dim)
	}
	for i := 0; i < jobs; i++ {
		for f := 0; f < nf; f++ {
			m.X[i][f] = features.At(i, f)
		}
	}
	for w := range m.G {
		for d := 0; d < s.Dim; d++ {
			m.G[w][d*s.Dim+d] = 1
		}
	}
	if s.LambdaWorker > 0 && s.Dim > 0 {
		m.U, m.e = make([][][]float64, workers), make([][][]float64, workers)
		for w := range m.U {
			m.U[w], m.e[w] = grid(jobs, s.Dim), grid(jobs, s.Dim)
		}
	}
	return m
}

// grid returns an r×c matrix as rows sharing one backing array.
func grid(r, c int) [][]float64 {
	out := make([][]float64, r)
	flat := make([]float64, r*c)
	for i := range out {
		out[i] = flat[i*c : (i+1)*c : (i+1)*c]
	}
	return out
}

// ridge accumulates and solves a small regularized least-squares problem. The normal matrix is
// kept as a plain row-major slice (upper triangle filled while accumulating) because this is
// the inner loop of every fit.
type ridge struct {
	p   int
	ata []float64
	atb []float64
	x   []float64
}

func newRidge(p int) *ridge {
	return &ridge{p: p, ata: make([]float64, p*p), atb: make([]float64, p), x: make([]float64, p)}
}

// reset empties r for a new problem of the same size, as newRidge would return it.
func (r *ridge) reset() {
	clear(r.ata)
	clear(r.atb)
	clear(r.x)
}

// addBiasEmb adds one row of fitJob's layout with target t: coefficient 1 at each index of
// bias, emb at base, base+1, ... (indices all distinct). It adds what the
// general sparse outer product would, each sum once per row (a product by 1 is exact), without
// an index per coefficient: this is the inner loop of every job's step.
func (r *ridge) addBiasEmb(bias []int, base int, emb []float64, t float64) {
	p := r.p
	for _, a := range bias {
		r.atb[a] += t
		row := r.ata[a*p : a*p+p]
		for _, b := range bias {
			row[b]++
		}
		for e, g := range emb {
			row[base+e] += g
		}
	}
	for d, v := range emb {
		r.atb[base+d] += v * t
		row := r.ata[(base+d)*p : (base+d)*p+p]
		for _, b := range bias {
			row[b] += v
		}
		for e, g := range emb {
			row[base+e] += v * g
		}
	}
}

// addDense adds one row with every feature present.
func (r *ridge) addDense(val []float64, t float64) {
	p := r.p
	for a := 0; a < p; a++ {
		va := val[a]
		if va == 0 {
			continue
		}
		r.atb[a] += va * t
		row := r.ata[a*p : a*p+p]
		for b := a; b < p; b++ {
			row[b] += va * val[b]
		}
	}
}

// addDense2 adds two rows, v with target t then u with target s: what addDense(v, t) then
// addDense(u, s) add, to the same sums in the same order, so to the same bits, in one pass.
func (r *ridge) addDense2(v []float64, t float64, u []float64, s float64) {
	p := r.p
	v, u = v[:p], u[:p]
	for a := 0; a < p; a++ {
		va, ua := v[a], u[a]
		row := r.ata[a*p : a*p+p]
		switch {
		case va != 0 && ua != 0:
			r.atb[a] = r.atb[a] + va*t + ua*s
			for b := a; b < p; b++ {
				row[b] = row[b] + va*v[b] + ua*u[b]
			}
		case va != 0:
			r.atb[a] += va * t
			for b := a; b < p; b++ {
				row[b] += va * v[b]
			}
		case ua != 0:
			r.atb[a] += ua * s
			for b := a; b < p; b++ {
				row[b] += ua * u[b]
			}
		}
	}
}

func (r *ridge) penalize(i int, l float64) { r.ata[i*r.p+i] += l }

// couple adds l·(x_i − x_j)².
func (r *ridge) couple(i, j int, l float64) {
	r.ata[i*r.p+i] += l
	r.ata[j*r.p+j] += l
	r.ata[i*r.p+j] -= l
	r.ata[j*r.p+i] -= l
}

// solve solves the normal equations by a plain Cholesky factorization of the upper triangle
// (gonum's also estimates the condition number, which costs more than the solve at these sizes).
func (r *ridge) solve() ([]float64, bool) {
	p := r.p
	l := r.ata // factor in place: l[j*p+i] (i ≥ j) holds L[i][j] in the lower part
	for i := 0; i < p; i++ {
		l[i*p+i] += 1e-10
		for j := 0; j <= i; j++ {
			sum := l[j*p+i] // upper triangle: A[j][i]
			for k := 0; k < j; k++ {
				sum -= l[i*p+k] * l[j*p+k]
			}
			if i == j {
				if sum <= 0 {
					return nil, false
				}
				l[i*p+i] = math.Sqrt(sum)
			} else {
				l[i*p+j] = sum / l[j*p+j]
			}
		}
	}
	x := r.x
	for i := 0; i < p; i++ { // L y = b
		sum := r.atb[i]
		for k := 0; k < i; k++ {
			sum -= l[i*p+k] * x[k]
		}
		x[i] = sum / l[i*p+i]
	}
	for i := p - 1; i >= 0; i-- { // Lᵀ x = y
		sum := x[i]
		for k := i + 1; k < p; k++ {
			sum -= l[k*p+i] * x[k]
		}
		x[i] = sum / l[i*p+i]
	}
	return x, true
}

// maxGlobalObs caps the observations used per worker type in the per-worker step.
const maxGlobalObs = 2000

// fitWorker solves for Mean[w], Beta[w], Gamma[w] and G[w].
func (m *PairModel) fitWorker(w int, obs []PairObs, xs []int, s PairSettings) {
	if len(xs) == 0 {
		return
	}
	nf := len(m.Beta[w])
	D := m.Dim
	p := 1 + 2*nf + D*D
	r := newRidge(p)
	// The per-worker weights are few (1 + 2·features + Dim²) and well determined by a few
	// thousand observations; a deterministic stride keeps this step cheap on large tables.
	// Rows are added two at a time (addDense2), in the same order, half the passes over the
	// normal matrix: this step was a tenth of the time of a fit on the 1,000-job benchmark table.
	stride := (len(xs) + maxGlobalObs - 1) / maxGlobalObs
	vals := [2][]float64{make([]float64, p), make([]float64, p)}
	var ts [2]float64
	n := 0 // rows in vals
	for q := 0; q < len(xs); q += stride {
		o := obs[xs[q]]
		val := vals[n]
		val[0] = 1
		for f := 0; f < nf; f++ {
			val[1+f] = m.X[o.I][f]
			val[1+nf+f] = m.X[o.K][f]
		}
		zi, zk := m.emb(w, o.I), m.emb(w, o.K)
		for d := 0; d < D; d++ {
			for e := 0; e < D; e++ {
				val[1+2*nf+d*D+e] = zi[d] * zk[e]
			}
		}
		ts[n] = o.Y - m.A[o.I][w] - m.C[o.K][w]
		if n++; n == 2 {
			r.addDense2(vals[0], ts[0], vals[1], ts[1])
			n = 0
		}
	}
	if n == 1 {
		r.addDense(vals[0], ts[0])
	}
	for q := 1; q < p; q++ {
		r.penalize(q, s.LambdaGlobal)
	}
	sol, ok := r.solve()
	if !ok {
		return
	}
	m.Mean[w] = sol[0]
	for f := 0; f < nf; f++ {
		m.Beta[w][f] = sol[1+f]
		m.Gamma[w][f] = sol[1+nf+f]
	}
	for q := 0; q < D*D; q++ {
		m.G[w][q] = sol[1+2*nf+q]
	}
}

// featurePart is the part of o's prediction that no job's A, C or Z enters: the worker type's
// mean and the feature terms of both jobs (from the cache cacheFeatures fills).
func (m *PairModel) featurePart(o PairObs) float64 {
	return m.Mean[o.W] + m.vf[o.W][o.I] + m.af[o.W][o.K]
}

// cacheFeatures refreshes vf and af for worker type w.
func (m *PairModel) cacheFeatures(w int) { m.vf[w], m.af[w] = m.featureTerms(w) }

// featureTerms returns Beta[w]·x_i and Gamma[w]·x_i for every job i.
func (m *PairModel) featureTerms(w int) (vf, af []float64) {
	vf, af = make([]float64, m.Jobs), make([]float64, m.Jobs)
	for i := 0; i < m.Jobs; i++ {
		for f := range m.Beta[w] {
			vf[i] += m.Beta[w][f] * m.X[i][f]
			af[i] += m.Gamma[w][f] * m.X[i][f]
		}
	}
	return vf, af
}

// Grid returns every prediction, [w][i][k]; faster than calling Predict for each entry.
func (m *PairModel) Grid() [][][]float64 {
	D := m.Dim
	out := make([][][]float64, m.Workers)
	v := make([]float64, D)
	for w := 0; w < m.Workers; w++ {
		vf, af := m.featureTerms(w)
		emb := make([][]float64, m.Jobs)
		for i := range emb {
			emb[i] = m.embedding(w, i)
		}
		out[w] = make([][]float64, m.Jobs)
		for i := 0; i < m.Jobs; i++ {
			row := make([]float64, m.Jobs)
			out[w][i] = row
			zi := emb[i]
			for e := 0; e < D; e++ {
				v[e] = 0
				for d := 0; d < D; d++ {
					v[e] += zi[d] * m.G[w][d*D+e]
				}
			}
			base := m.Mean[w] + vf[i] + m.A[i][w]
			for k := 0; k < m.Jobs; k++ {
				y := base + af[k] + m.C[k][w]
				zk := emb[k]
				for e := 0; e < D; e++ {
					y += v[e] * zk[e]
				}
				row[k] = y
			}
		}
	}
	return out
}

// fitJob solves for job j's A[j], C[j] and Z[j] with everything else fixed, then (with
// per-worker deviations) for U[·][j] with those fixed. Unknowns are laid out as A (W), C (W),
// then Z (Dim), then the two per-job means that the sharing penalty pulls each worker type's
// bias towards.
func (m *PairModel) fitJob(j int, obs []PairObs, victim, aggressor []int, s PairSettings, scratch *jobScratch) {
	if len(victim)+len(aggressor) == 0 && len(m.mix(j)) == 0 {
		return
	}
	W := m.Workers
	r, acc := scratch.reset()
	var biases [2]int
	// A row's coefficients on Z[j] are the partner's coupling (refreshCoupling's cache):
	// G[w]·emb(w, k) when j is the victim next to k, G[w]ᵀ·emb(w, k) when j slows victim k.
	for _, x := range victim {
		o := obs[x]
		bias := append(biases[:0], o.W)
		t := o.Y - m.featurePart(o)
		self := o.K == j
		if self {
			bias = append(bias, W+o.W)
		} else {
			t -= m.C[o.K][o.W]
		}
		// For the self pair the interaction is quadratic in Z[j]; linearize at the current value.
		f := m.gz[o.W][o.K]
		m.addRow(acc, j, o.W, f, t, true, self)
		r.addBiasEmb(bias, 2*W, f, t-m.deviationTerm(j, o.W, f))
	}
	for _, x := range aggressor {
		o := obs[x]
		t := o.Y - m.featurePart(o) - m.A[o.I][o.W]
		f := m.gtz[o.W][o.I]
		m.addRow(acc, j, o.W, f, t, false, true)
		r.addBiasEmb(append(biases[:0], W+o.W), 2*W, f, t-m.deviationTerm(j, o.W, f))
	}
	m.regularizeJob(r, s)
	m.pullJob(j, r)
	sol, ok := r.solve()
	if !ok {
		return
	}
	m.setJob(j, sol)
	if acc != nil {
		m.fitDeviations(j, acc, s, scratch.dev)
	}
	m.refreshEmb(j)
}

// jobScratch is the working memory of fitJob, kept from job to job and iteration to iteration
// of a fit: allocating it afresh for every job was a tenth of the fit's time, in allocation
// and garbage collection.
type jobScratch struct {
	r   *ridge         // fitJob's system
	acc *deviationSums // nil without per-worker deviations
	dev *ridge         // fitDeviations' system, one worker type at a time
}

func (m *PairModel) newJobScratch() *jobScratch {
	W, D := m.Workers, m.Dim
	sc := &jobScratch{r: newRidge(2*W + D + 2), dev: newRidge(D)}
	if m.U != nil {
		sc.acc = newDeviationSums(W, D)
	}
	return sc
}

// reset empties the scratch's system and sums for a new job and returns them.
func (sc *jobScratch) reset() (*ridge, *deviationSums) {
	sc.r.reset()
	if sc.acc != nil {
		sc.acc.reset()
	}
	return sc.r, sc.acc
}

// setJob stores job j's solution from fitJob's ridge system, laid out as its victim biases
// (one per worker type), its aggressor biases, its embedding and its two bias means.
func (m *PairModel) setJob(j int, sol []float64) {
	W, D := m.Workers, m.Dim
	for w := 0; w < W; w++ {
		m.A[j][w] = sol[w]
		m.C[j][w] = sol[W+w]
	}
	for d := 0; d < D; d++ {
		m.Z[j][d] = sol[2*W+d]
	}
	m.AM[j], m.CM[j] = sol[2*W+D], sol[2*W+D+1]
}

// deviationTerm is U[w][j]·f, job j's per-worker deviation's part of an observation whose
// coefficients on Z[j] are f (0 without deviations).
func (m *PairModel) deviationTerm(j, w int, f []float64) float64 {
	if m.U == nil {
		return 0
	}
	v := 0.0
	for d, x := range f {
		v += x * m.U[w][j][d]
	}
	return v
}

// deviationSums accumulates, per worker type, what the regression for job j's deviation U[w][j]
// needs from j's observations on w: Σ f·fᵀ, Σ f·t, and Σ f over the rows where A[j][w] and
// C[j][w] enter, with f the row's coefficients on the embedding and t its target less
// everything but j's bias and embedding. The deviation enters every row exactly as Z[j] does,
// so these sums, gathered in fitJob's pass over the observations, spare a second pass.
type deviationSums struct {
	ff, ft, fa, fc [][]float64 // [w][Dim·Dim] (upper triangle), [w][Dim] ×3
}

func newDeviationSums(W, D int) *deviationSums {
	return &deviationSums{ff: grid(W, D*D), ft: grid(W, D), fa: grid(W, D), fc: grid(W, D)}
}

// reset sets every sum to zero.
func (acc *deviationSums) reset() {
	for _, g := range [][][]float64{acc.ff, acc.ft, acc.fa, acc.fc} {
		for _, row := range g {
			clear(row)
		}
	}
}

// addRow adds one row (coefficients f on the embedding, target t) on worker type w to acc
// (nil: nothing); victim says A[j][w] enters it, partner that C[j][w] does.
func (m *PairModel) addRow(acc *deviationSums, j, w int, f []float64, t float64, victim, partner bool) {
	if acc == nil {
		return
	}
	D := len(f)
	ff := acc.ff[w]
	for d, x := range f {
		acc.ft[w][d] += x * t
		if victim {
			acc.fa[w][d] += x
		}
		if partner {
			acc.fc[w][d] += x
		}
		row := ff[d*D : d*D+D]
		for e := d; e < D; e++ {
			row[e] += x * f[e]
		}
	}
}

// fitDeviations solves for job j's deviations U[w][j], one small ridge regression per worker
// type (in r, of size Dim), with A[j], C[j] and Z[j] at their new values.
func (m *PairModel) fitDeviations(j int, acc *deviationSums, s PairSettings, r *ridge) {
	D := m.Dim
	for w := 0; w < m.Workers; w++ {
		r.reset()
		copy(r.ata, acc.ff[w])
		for d := 0; d < D; d++ {
			// Σ f·(t − A − C − f·Z): the target less the new bias and shared embedding.
			v := acc.ft[w][d] - m.A[j][w]*acc.fa[w][d] - m.C[j][w]*acc.fc[w][d]
			for e := 0; e < D; e++ {
				v -= acc.ff[w][min(d, e)*D+max(d, e)] * m.Z[j][e]
			}
			r.atb[d] = v
			r.penalize(d, s.LambdaWorker)
		}
		m.pullWorker(w, j, r)
		if sol, ok := r.solve(); ok {
			copy(m.U[w][j], sol)
		}
	}
}

// workerMix returns job j's per-worker prior mix on w: the prior's WorkerMix when it has one,
// else its Mix.
func (m *PairModel) workerMix(w, j int) []JobWeight {
	if m.prior == nil {
		return nil
	}
	if m.prior.WorkerMix != nil {
		return m.prior.WorkerMix[w][j]
	}
	return m.prior.Mix[j]
}

// workerTarget returns the weighted mean deviation on w of job j's per-worker mix.
func (m *PairModel) workerTarget(w, j int) []float64 {
	t := make([]float64, m.Dim)
	for _, jw := range m.workerMix(w, j) {
		for d := range t {
			t[d] += jw.Weight * m.U[w][jw.Job][d]
		}
	}
	return t
}

// pullWorker adds the prior's pull of U[w][j] towards its per-worker mix's (held fixed) to r.
func (m *PairModel) pullWorker(w, j int, r *ridge) {
	if len(m.workerMix(w, j)) == 0 || m.prior.Lambda <= 0 {
		return
	}
	for d, t := range m.workerTarget(w, j) {
		r.penalize(d, m.prior.Lambda)
		r.atb[d] += m.prior.Lambda * t
	}
}

// mix returns job j's prior mix (nil without a prior).
func (m *PairModel) mix(j int) []JobWeight {
	if m.prior == nil {
		return nil
	}
	return m.prior.Mix[j]
}

// mixTarget returns the weighted mean embedding of job j's mix.
func (m *PairModel) mixTarget(j int) []float64 {
	t := make([]float64, m.Dim)
	for _, jw := range m.mix(j) {
		for d := range t {
			t[d] += jw.Weight * m.Z[jw.Job][d]
		}
	}
	return t
}

// pullJob adds the prior's pull of job j's embedding towards its mix's (held fixed) to r.
func (m *PairModel) pullJob(j int, r *ridge) {
	if len(m.mix(j)) == 0 || m.prior.Lambda <= 0 {
		return
	}
	z := 2 * m.Workers
	for d, t := range m.mixTarget(j) {
		r.penalize(z+d, m.prior.Lambda)
		r.atb[z+d] += m.prior.Lambda * t
	}
}

// regularizeJob adds fitJob's penalties to r. With sharing, a job's bias on worker type w is
// its own mean plus a deviation: λ_bias·mean² + λ_share·Σ_w (bias_w − mean)². Without it,
// λ_bias·Σ_w bias_w² (and a unit penalty keeps the unused means at zero).
func (m *PairModel) regularizeJob(r *ridge, s PairSettings) {
	W, D := m.Workers, m.Dim
	ma, mc := 2*W+D, 2*W+D+1
	if s.LambdaShare > 0 {
		for w := 0; w < W; w++ {
			r.couple(w, ma, s.LambdaShare)
			r.couple(W+w, mc, s.LambdaShare)
		}
		r.penalize(ma, s.LambdaBias)
		r.penalize(mc, s.LambdaBias)
	} else {
		for w := 0; w < W; w++ {
			r.penalize(w, s.LambdaBias)
			r.penalize(W+w, s.LambdaBias)
		}
		r.penalize(ma, 1)
		r.penalize(mc, 1)
	}
	for d := 0; d < D; d++ {
		r.penalize(2*W+d, s.LambdaEmbed)
	}
}

// predictions returns the model's value for every observation, written into out (allocated
// when nil).
func (m *PairModel) predictions(obs []PairObs, out []float64) []float64 {
	if out == nil {
		out = make([]float64, len(obs))
	}
	// zg[w][i] = Z[i]·G[w], so each prediction costs Dim operations instead of Dim².
	D := m.Dim
	zg := make([][][]float64, m.Workers)
	for w := range zg {
		zg[w] = grid(m.Jobs, D)
		for i := 0; i < m.Jobs; i++ {
			zi := m.emb(w, i)
			for d := 0; d < D; d++ {
				for e := 0; e < D; e++ {
					zg[w][i][e] += zi[d] * m.G[w][d*D+e]
				}
			}
		}
	}
	for x, o := range obs {
		y := m.featurePart(o) + m.A[o.I][o.W] + m.C[o.K][o.W]
		zk := m.emb(o.W, o.K)
		for e := 0; e < D; e++ {
			y += zg[o.W][o.I][e] * zk[e]
		}
		out[x] = y
	}
	return out
}

// objective returns the regularized squared error (one-sided for censored observations) that
// FitPairs' iterations decrease, and every observation's prediction, written into buf
// (allocated when nil).
func (m *PairModel) objective(obs []PairObs, s PairSettings, buf []float64) (float64, []float64) {
	pred := m.predictions(obs, buf)
	// The fit (pullJob, pullWorker) applies no pull for a prior Lambda of zero or less; counting
	// a negative one here made the Objective smaller than the loss of the model fitted.
	pull := m.prior != nil && m.prior.Lambda > 0
	obj := 0.0
	for x, o := range obs {
		e := o.Y - pred[x]
		if o.Censored && e < 0 {
			e = 0
		}
		obj += e * e
	}
	for j := 0; j < m.Jobs; j++ {
		if s.LambdaShare > 0 {
			obj += s.LambdaBias * (m.AM[j]*m.AM[j] + m.CM[j]*m.CM[j])
			for w := 0; w < m.Workers; w++ {
				da, dc := m.A[j][w]-m.AM[j], m.C[j][w]-m.CM[j]
				obj += s.LambdaShare * (da*da + dc*dc)
			}
		} else {
			for w := 0; w < m.Workers; w++ {
				obj += s.LambdaBias * (m.A[j][w]*m.A[j][w] + m.C[j][w]*m.C[j][w])
			}
		}
		for d := 0; d < m.Dim; d++ {
			obj += s.LambdaEmbed * m.Z[j][d] * m.Z[j][d]
		}
		if pull && len(m.mix(j)) > 0 {
			for d, t := range m.mixTarget(j) {
				obj += m.prior.Lambda * (m.Z[j][d] - t) * (m.Z[j][d] - t)
			}
		}
		for w := range m.U {
			for d := 0; d < m.Dim; d++ {
				u := m.U[w][j][d]
				obj += s.LambdaWorker * u * u
			}
			if pull && len(m.workerMix(w, j)) > 0 {
				for d, t := range m.workerTarget(w, j) {
					obj += m.prior.Lambda * (m.U[w][j][d] - t) * (m.U[w][j][d] - t)
				}
			}
		}
	}
	return obj, pred
}
