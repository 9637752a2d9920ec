package completion

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestFitPairsRecoversPlantedModel plants a pairwise model with one shared embedding per job,
// observes 40% of the entries and checks the rest are predicted closely.
func TestFitPairsRecoversPlantedModel(t *testing.T) {
	const W, n, D = 2, 30, 2
	rng := rand.New(rand.NewPCG(3, 3))
	a := grid(n, W)
	c := grid(n, W)
	z := grid(n, D)
	for i := 0; i < n; i++ {
		for w := 0; w < W; w++ {
			a[i][w] = 0.3 * rng.NormFloat64()
			c[i][w] = 0.3 * rng.NormFloat64()
		}
		for d := 0; d < D; d++ {
			z[i][d] = rng.NormFloat64()
		}
	}
	truth := func(w, i, k int) float64 {
		v := -0.5 + 0.2*float64(w) + a[i][w] + c[k][w]
		for d := 0; d < D; d++ {
			v += 0.2 * z[i][d] * z[k][d]
		}
		return v
	}
	obs, held := splitPairs(rng, W, n, 0.4, truth)
	m, err := FitPairs(t.Context(), obs, W, n, nil, PairSettings{Dim: D, LambdaBias: 1e-3, LambdaShare: -1, LambdaEmbed: 1e-3, LambdaGlobal: 1e-3, Seed: 1, MaxIter: 500, Tol: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	g := m.Grid()
	for _, h := range held[:50] {
		if d := g[h[0]][h[1]][h[2]] - m.Predict(h[0], h[1], h[2]); math.Abs(d) > 1e-12 {
			t.Fatalf("Grid and Predict differ by %v at %v", d, h)
		}
	}
	sse := 0.0
	for _, h := range held {
		e := m.Predict(h[0], h[1], h[2]) - truth(h[0], h[1], h[2])
		sse += e * e
	}
	if rmse := math.Sqrt(sse / float64(len(held))); rmse > 0.03 {
		t.Errorf("held-out RMSE %.4f > 0.03 (%v after %d iterations)", rmse, m.Status, m.Iterations)
	}
}

func TestFitPairsColdStartUsesFeatures(t *testing.T) {
	// Y depends on the job's feature only; a job never observed is predicted from it.
	const n = 12
	x := make([]float64, n)
	var obs []PairObs
	for i := 0; i < n; i++ {
		x[i] = float64(i) / n
	}
	for i := 0; i < n-1; i++ { // job n-1 is never observed
		for k := 0; k < n-1; k++ {
			obs = append(obs, PairObs{W: 0, I: i, K: k, Y: 2 * x[i]})
		}
	}
	f := denseCol(x)
	m, err := FitPairs(t.Context(), obs, 1, n, f, PairSettings{Dim: -1, LambdaGlobal: 1e-6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Predict(0, n-1, 0), 2*x[n-1]; math.Abs(got-want) > 0.05 {
		t.Errorf("cold-start prediction %.3f, want %.3f", got, want)
	}
}

// biasOnlyObs returns observations of a model without embeddings (so the fit is convex and its
// optimum unique): Y(0, i, k) = 0.1·i − 0.05·k, every pair but (0, 0) and (1, 1).
func biasOnlyObs(n int) []PairObs {
	var obs []PairObs
	for i := 0; i < n; i++ {
		for k := 0; k < n; k++ {
			if i == k && i < 2 {
				continue
			}
			obs = append(obs, PairObs{W: 0, I: i, K: k, Y: 0.1*float64(i) - 0.05*float64(k)})
		}
	}
	return obs
}

// TestFitPairsCensoredIsOneSided checks a censored observation against the plain fit: one below
// the plain fit's prediction changes nothing, one far above it acts as a plain observation.
func TestFitPairsCensoredIsOneSided(t *testing.T) {
	const n = 6
	s := PairSettings{Dim: -1, LambdaBias: 0.1, LambdaShare: -1, Tol: 1e-14, MaxIter: 5000}
	base := biasOnlyObs(n)
	plain, err := FitPairs(t.Context(), base, 1, n, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	p0 := plain.Predict(0, 0, 0)
	same := func(a, b *PairModel, what string) {
		t.Helper()
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				if d := a.Predict(0, i, k) - b.Predict(0, i, k); math.Abs(d) > 1e-6 {
					t.Fatalf("%s: predictions differ by %g at (%d, %d)", what, d, i, k)
				}
			}
		}
	}
	below := append(append([]PairObs(nil), base...), PairObs{W: 0, I: 0, K: 0, Y: p0 - 1, Censored: true})
	mb, err := FitPairs(t.Context(), below, 1, n, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	same(mb, plain, "censored below the fit")

	above := PairObs{W: 0, I: 0, K: 0, Y: p0 + 1}
	ref, err := FitPairs(t.Context(), append(append([]PairObs(nil), base...), above), 1, n, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Predict(0, 0, 0) >= above.Y {
		t.Fatalf("the plain observation is fitted to %.3f, not below %.3f: the test needs it below", ref.Predict(0, 0, 0), above.Y)
	}
	above.Censored = true
	ma, err := FitPairs(t.Context(), append(append([]PairObs(nil), base...), above), 1, n, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	same(ma, ref, "censored above the fit")
	if ma.Predict(0, 0, 0) <= p0 {
		t.Errorf("censored observation above the fit did not raise the prediction (%.4f, plain %.4f)", ma.Predict(0, 0, 0), p0)
	}
}

// TestFitPairsPriorPlacesUnobservedJob: a job with no observations and a prior mix of one other
// job gets that job's embedding shrunk by the ridge solution λ_prior/(λ_prior + λ_embed).
func TestFitPairsPriorPlacesUnobservedJob(t *testing.T) {
	const W, n, D = 1, 8, 2
	rng := rand.New(rand.NewPCG(5, 5))
	var obs []PairObs
	for i := 0; i < n-1; i++ { // job n-1 is never observed
		for k := 0; k < n-1; k++ {
			obs = append(obs, PairObs{W: 0, I: i, K: k, Y: rng.NormFloat64()})
		}
	}
	mix := make([][]JobWeight, n)
	mix[n-1] = []JobWeight{{Job: 2, Weight: 1}}
	const lp, le = 0.6, 0.2
	m, err := FitPairsWithPrior(t.Context(), obs, W, n, nil, &PairPrior{Mix: mix, Lambda: lp}, PairSettings{Dim: D, LambdaEmbed: le, Seed: 1, MaxIter: 20})
	if err != nil {
		t.Fatal(err)
	}
	for d := 0; d < D; d++ {
		want := lp / (lp + le) * m.Z[2][d]
		if math.Abs(m.Z[n-1][d]-want) > 1e-8 || m.Z[2][d] == 0 {
			t.Errorf("Z[%d][%d] = %.6f, want %.6f (Z[2][%d] = %.6f)", n-1, d, m.Z[n-1][d], want, d, m.Z[2][d])
		}
	}
	plain, err := FitPairs(t.Context(), obs, W, n, nil, PairSettings{Dim: D, LambdaEmbed: le, Seed: 1, MaxIter: 20})
	if err != nil {
		t.Fatal(err)
	}
	for d := 0; d < D; d++ {
		if plain.Z[n-1][d] != 0 {
			t.Errorf("without a prior the unobserved job's embedding is %v, want zero", plain.Z[n-1])
		}
	}
}

// TestFitPairsPriorHelpsSparseJob plants a job that interferes exactly like another one and
// observes it next to two partners only: pulled towards its twin, its held-out entries are
// predicted better than from its two observations alone.
func TestFitPairsPriorHelpsSparseJob(t *testing.T) {
	const W, n, D = 1, 20, 2
	rng := rand.New(rand.NewPCG(7, 7))
	z := grid(n, D)
	for i := range z {
		for d := range z[i] {
			z[i][d] = rng.NormFloat64()
		}
	}
	const twin, sparse = 3, n - 1
	copy(z[sparse], z[twin])
	truth := func(i, k int) float64 { return 0.5 * (z[i][0]*z[k][0] + z[i][1]*z[k][1]) }
	var obs []PairObs
	for i := 0; i < n; i++ {
		for k := 0; k < n; k++ {
			if (i == sparse || k == sparse) && !(i == sparse && k < 2) {
				continue
			}
			obs = append(obs, PairObs{W: 0, I: i, K: k, Y: truth(i, k)})
		}
	}
	mix := make([][]JobWeight, n)
	mix[sparse] = []JobWeight{{Job: twin, Weight: 1}}
	s := PairSettings{Dim: D, LambdaBias: 0.1, LambdaEmbed: 0.01, LambdaGlobal: 0.01, Seed: 2, MaxIter: 300}
	rmse := func(m *PairModel) float64 {
		sse := 0.0
		for k := 2; k < n; k++ {
			e1 := m.Predict(0, sparse, k) - truth(sparse, k)
			e2 := m.Predict(0, k, sparse) - truth(k, sparse)
			sse += e1*e1 + e2*e2
		}
		return math.Sqrt(sse / float64(2*(n-2)))
	}
	plain, err := FitPairs(t.Context(), obs, W, n, nil, s)
	if err != nil {
		t.Fatal(err)
	}
	pulled, err := FitPairsWithPrior(t.Context(), obs, W, n, nil, &PairPrior{Mix: mix, Lambda: 1}, s)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := rmse(pulled), rmse(plain); !(a < 0.5*b) {
		t.Errorf("held-out RMSE of the sparse job: %.3f with the prior, %.3f without; want under half", a, b)
	}
}

// TestFitPairsWorkerDeviationsRecoverPlantedModel plants, on each of two worker types, a rank-1
// interaction between its own job factors (y = −0.5·v_w[i]·v_w[k], v_0 and v_1 drawn
// independently) and observes 70% of the entries. One shared one-dimensional embedding cannot
// represent both types; with per-worker deviations the held-out entries are recovered. (This is
// one fixed draw: alternating fits of such models can stall in a local optimum on others.)
func TestFitPairsWorkerDeviationsRecoverPlantedModel(t *testing.T) {
	const W, n = 2, 20
	rng := rand.New(rand.NewPCG(11, 1))
	v := [W][]float64{make([]float64, n), make([]float64, n)}
	for i := 0; i < n; i++ {
		for w := 0; w < W; w++ {
			v[w][i] = 1 + 0.3*rng.NormFloat64()
		}
	}
	truth := func(w, i, k int) float64 { return -0.5 * v[w][i] * v[w][k] }
	obs, held := splitPairs(rng, W, n, 0.7, truth)
	rmse := func(lw float64) float64 {
		m, err := FitPairs(t.Context(), obs, W, n, nil, PairSettings{Dim: 1, LambdaBias: 1e-3, LambdaShare: -1, LambdaEmbed: 1e-3, LambdaWorker: lw, LambdaGlobal: 1e-3, Seed: 1, MaxIter: 1000, Tol: 1e-12})
		if err != nil {
			t.Fatal(err)
		}
		g := m.Grid()
		sse := 0.0
		for _, h := range held {
			if d := g[h[0]][h[1]][h[2]] - m.Predict(h[0], h[1], h[2]); math.Abs(d) > 1e-12 {
				t.Fatalf("Grid and Predict differ by %v at %v", d, h)
			}
			e := m.Predict(h[0], h[1], h[2]) - truth(h[0], h[1], h[2])
			sse += e * e
		}
		return math.Sqrt(sse / float64(len(held)))
	}
	with, without := rmse(1e-3), rmse(0)
	if with > 0.002 || without < 0.01 {
		t.Errorf("held-out RMSE %.4f with per-worker deviations (want under 0.002), %.4f without (want 0.01 or more: not representable)", with, without)
	}
}

// TestFitPairsWorkerMixPlacesUnobservedJob: a job with no observations whose per-worker mix on
// each worker type names another job gets, on each type, that job's deviation shrunk by the
// ridge solution λ_prior/(λ_prior + λ_worker), and its shared embedding as
// TestFitPairsPriorPlacesUnobservedJob says.
func TestFitPairsWorkerMixPlacesUnobservedJob(t *testing.T) {
	const W, n, D = 2, 8, 2
	rng := rand.New(rand.NewPCG(13, 13))
	var obs []PairObs
	for w := 0; w < W; w++ {
		for i := 0; i < n-1; i++ { // job n-1 is never observed
			for k := 0; k < n-1; k++ {
				obs = append(obs, PairObs{W: w, I: i, K: k, Y: rng.NormFloat64()})
			}
		}
	}
	mix := make([][]JobWeight, n)
	mix[n-1] = []JobWeight{{Job: 1, Weight: 1}}
	workerMix := [][][]JobWeight{make([][]JobWeight, n), make([][]JobWeight, n)}
	workerMix[0][n-1] = []JobWeight{{Job: 2, Weight: 1}}
	workerMix[1][n-1] = []JobWeight{{Job: 3, Weight: 0.5}, {Job: 4, Weight: 0.5}}
	const lp, le, lw = 0.6, 0.2, 0.3
	m, err := FitPairsWithPrior(t.Context(), obs, W, n, nil, &PairPrior{Mix: mix, WorkerMix: workerMix, Lambda: lp},
		PairSettings{Dim: D, LambdaEmbed: le, LambdaWorker: lw, Seed: 1, MaxIter: 20})
	if err != nil {
		t.Fatal(err)
	}
	for d := 0; d < D; d++ {
		if want := lp / (lp + le) * m.Z[1][d]; math.Abs(m.Z[n-1][d]-want) > 1e-8 {
			t.Errorf("Z[%d][%d] = %.6f, want %.6f", n-1, d, m.Z[n-1][d], want)
		}
		for w, target := range []float64{m.U[0][2][d], 0.5 * (m.U[1][3][d] + m.U[1][4][d])} {
			want := lp / (lp + lw) * target
			if math.Abs(m.U[w][n-1][d]-want) > 1e-8 || target == 0 {
				t.Errorf("U[%d][%d][%d] = %.6f, want %.6f (mix's %.6f)", w, n-1, d, m.U[w][n-1][d], want, target)
			}
		}
	}
}

// TestFitPairsPriorChecksWorkerMix: a per-worker mix for the wrong number of worker types or
// naming a job out of range is a programming error, reported by a panic naming it.
func TestFitPairsPriorChecksWorkerMix(t *testing.T) {
	obs := []PairObs{{W: 0, I: 0, K: 1, Y: 0.1}, {W: 1, I: 1, K: 0, Y: 0.2}}
	mix := make([][]JobWeight, 2)
	bad := [][]JobWeight{nil, {{Job: 5, Weight: 1}}}
	for _, c := range []struct {
		name      string
		workerMix [][][]JobWeight
		want      string
	}{
		{"one worker type of two", [][][]JobWeight{mix}, "worker mixes for 1 worker types, want 2"},
		{"job out of range", [][][]JobWeight{mix, bad}, "on worker type 1 of job 1 names job 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Errorf("panic %v, want one containing %q", r, c.want)
				}
			}()
			_, _ = FitPairsWithPrior(t.Context(), obs, 2, 2, nil, &PairPrior{Mix: mix, WorkerMix: c.workerMix, Lambda: 1}, PairSettings{Dim: 1, LambdaWorker: 1})
		})
	}
}

// Predict and Grid read the exported parameters, not a copy kept by the fit: after a caller
// moves one job's embedding and deviation, both give the model's formula with the new values.
func TestPairModelFollowsEditedEmbeddings(t *testing.T) {
	const W, n = 2, 6
	rng := rand.New(rand.NewPCG(5, 1))
	var obs []PairObs
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				obs = append(obs, PairObs{W: w, I: i, K: k, Y: -0.5 + 0.1*rng.NormFloat64()})
			}
		}
	}
	m, err := FitPairs(t.Context(), obs, W, n, nil, PairSettings{Dim: 2, LambdaWorker: 0.1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	m.Z[3][0], m.Z[3][1] = 2, -1
	m.U[1][3][0] = 0.5
	g := m.Grid()
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				want := m.Mean[w] + m.A[i][w] + m.C[k][w] // no features
				for d := 0; d < 2; d++ {
					for e := 0; e < 2; e++ {
						want += m.G[w][d*2+e] * (m.Z[i][d] + m.U[w][i][d]) * (m.Z[k][e] + m.U[w][k][e])
					}
				}
				if got := m.Predict(w, i, k); math.Abs(got-want) > 1e-12 {
					t.Errorf("Predict(%d, %d, %d) = %v, want %v", w, i, k, got, want)
				}
				if math.Abs(g[w][i][k]-want) > 1e-12 {
					t.Errorf("Grid[%d][%d][%d] = %v, want %v", w, i, k, g[w][i][k], want)
				}
			}
		}
	}
}

// splitPairs observes each entry (w, i, k) of truth with probability p, drawn from rng in
// order, and returns the observations and the held-out entries.
func splitPairs(rng *rand.Rand, W, n int, p float64, truth func(w, i, k int) float64) (obs []PairObs, held [][3]int) {
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				if rng.Float64() < p {
					obs = append(obs, PairObs{W: w, I: i, K: k, Y: truth(w, i, k)})
				} else {
					held = append(held, [3]int{w, i, k})
				}
			}
		}
	}
	return obs, held
}

// A NaN or infinite side feature used to be accepted and to make every prediction NaN; it is an
// error naming the job and feature, as in FitFootprints.
func TestFitPairsRejectsNonFiniteFeatures(t *testing.T) {
	obs := []PairObs{{W: 0, I: 0, K: 1, Y: -0.1}, {W: 0, I: 1, K: 0, Y: -0.2}, {W: 0, I: 1, K: 1, Y: -0.3}}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		x := mat.NewDense(2, 2, []float64{0.5, 1, 0, v})
		want := fmt.Sprintf("feature 1 of job 1 is %v", v)
		if _, err := FitPairs(context.Background(), obs, 1, 2, x, PairSettings{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FitPairs with feature %v: err %v, want %q", v, err, want)
		}
		prior := &PairPrior{Mix: [][]JobWeight{nil, {{Job: 0, Weight: 1}}}, Lambda: 1}
		if _, err := FitPairsWithPrior(context.Background(), obs, 1, 2, x, prior, PairSettings{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FitPairsWithPrior with feature %v: err %v, want %q", v, err, want)
		}
	}
	x := mat.NewDense(2, 2, []float64{0.5, 1, 0, -1})
	m, err := FitPairs(context.Background(), obs, 1, 2, x, PairSettings{})
	if err != nil || math.IsNaN(m.Predict(0, 0, 0)) {
		t.Errorf("finite features: err %v, prediction %v", err, m.Predict(0, 0, 0))
	}
}

// A prior Lambda of zero or less applies no pull in the fit; a negative one used to enter the
// Objective all the same, as a reward for an embedding far from its mix's. The fit and its
// Objective must be those of Lambda 0, with embeddings far enough from their mixes' that the
// term is not zero.
func TestFitPairsNegativePriorLambdaIsNoPull(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	z := grid(8, 2)
	for i := range z {
		z[i][0], z[i][1] = rng.NormFloat64(), rng.NormFloat64()
	}
	obs, _ := splitPairs(rng, 2, 8, 0.6, func(w, i, k int) float64 { return z[i][0]*z[k][0] + z[i][1]*z[k][1] })
	mix := make([][]JobWeight, 8)
	mix[3] = []JobWeight{{Job: 1, Weight: 1}}
	fit := func(lambda float64) *PairModel {
		m, err := FitPairsWithPrior(t.Context(), obs, 2, 8, nil, &PairPrior{Mix: mix, Lambda: lambda}, PairSettings{Seed: 1, LambdaWorker: 1})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	off, neg := fit(0), fit(-1)
	if dz := math.Hypot(off.Z[3][0]-off.Z[1][0], off.Z[3][1]-off.Z[1][1]); dz < 0.1 {
		t.Fatalf("job 3's embedding is %.3f from its mix's: too close for the test to tell", dz)
	}
	if neg.Objective != off.Objective || neg.Iterations != off.Iterations {
		t.Errorf("prior Lambda -1: objective %v after %d iterations, Lambda 0: %v after %d", neg.Objective, neg.Iterations, off.Objective, off.Iterations)
	}
	if p, q := neg.Predict(0, 3, 2), off.Predict(0, 3, 2); p != q {
		t.Errorf("prior Lambda -1 predicts %v, Lambda 0 %v", p, q)
	}
}
