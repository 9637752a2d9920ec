package completion

import (
	"math"
	"math/rand/v2"
	"testing"
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
	var obs []PairObs
	var held [][3]int
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				if rng.Float64() < 0.4 {
					obs = append(obs, PairObs{W: w, I: i, K: k, Y: truth(w, i, k)})
				} else {
					held = append(held, [3]int{w, i, k})
				}
			}
		}
	}
	m, err := FitPairs(obs, W, n, nil, PairSettings{Dim: D, LambdaBias: 1e-3, LambdaShare: -1, LambdaEmbed: 1e-3, LambdaGlobal: 1e-3, Seed: 1, MaxIter: 500, Tol: 1e-12})
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
	m, err := FitPairs(obs, 1, n, f, PairSettings{Dim: -1, LambdaGlobal: 1e-6, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := m.Predict(0, n-1, 0), 2*x[n-1]; math.Abs(got-want) > 0.05 {
		t.Errorf("cold-start prediction %.3f, want %.3f", got, want)
	}
}
