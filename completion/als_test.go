package completion

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// planted returns a rank-k matrix with biases and a mask revealing fraction p of it.
func planted(r, c, k int, p float64, seed uint64) (a, mask *mat.Dense) {
	rng := rand.New(rand.NewPCG(seed, 1))
	u := mat.NewDense(r, k, nil)
	v := mat.NewDense(c, k, nil)
	for i := 0; i < r; i++ {
		for d := 0; d < k; d++ {
			u.Set(i, d, rng.NormFloat64())
		}
	}
	for j := 0; j < c; j++ {
		for d := 0; d < k; d++ {
			v.Set(j, d, rng.NormFloat64())
		}
	}
	a = mat.NewDense(r, c, nil)
	a.Mul(u, v.T())
	mask = mat.NewDense(r, c, nil)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			a.Set(i, j, a.At(i, j)+2+0.5*float64(i%3)-0.3*float64(j%4))
			if rng.Float64() < p {
				mask.Set(i, j, 1)
			}
		}
	}
	return a, mask
}

func heldOutRMSE(a, mask mat.Matrix, m *Model) float64 {
	r, c := a.Dims()
	sse, n := 0.0, 0
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if mask.At(i, j) == 0 {
				e := a.At(i, j) - m.At(i, j)
				sse += e * e
				n++
			}
		}
	}
	return math.Sqrt(sse / float64(n))
}

func TestFitRecoversPlantedLowRank(t *testing.T) {
	tests := []struct {
		name    string
		r, c, k int
		p       float64
		maxRMSE float64
	}{
		{"rank2 60x40 half", 60, 40, 2, 0.5, 0.02},
		{"rank3 80x50 40%", 80, 50, 3, 0.4, 0.05},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, mask := planted(tt.r, tt.c, tt.k, tt.p, 7)
			m, err := Fit(t.Context(), a, mask, Settings{Rank: tt.k, Lambda: 1e-4, Seed: 1, MaxIter: 500, Tol: 1e-12})
			if err != nil {
				t.Fatal(err)
			}
			// The entries' standard deviation is about sqrt(k); the held-out error must be tiny.
			if got := heldOutRMSE(a, mask, m); got > tt.maxRMSE {
				t.Errorf("held-out RMSE %.4f > %.4f (status %v after %d iterations)", got, tt.maxRMSE, m.Status, m.Iterations)
			}
		})
	}
}

func TestFitDeterministic(t *testing.T) {
	a, mask := planted(20, 15, 2, 0.5, 3)
	m1, _ := Fit(t.Context(), a, mask, Settings{Seed: 5})
	m2, _ := Fit(t.Context(), a, mask, Settings{Seed: 5})
	if !mat.Equal(m1.Dense(), m2.Dense()) {
		t.Error("same seed gave different fits")
	}
}

func TestFitErrors(t *testing.T) {
	a := mat.NewDense(2, 2, nil)
	if _, err := Fit(t.Context(), a, mat.NewDense(2, 2, nil), Settings{}); err != ErrNoObservations {
		t.Errorf("empty mask: err = %v, want ErrNoObservations", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("shape mismatch did not panic")
		}
	}()
	Fit(t.Context(), a, mat.NewDense(3, 2, nil), Settings{})
}

func TestCrossValidatePicksPlantedRank(t *testing.T) {
	a, mask := planted(50, 40, 2, 0.6, 11)
	s, scores, err := CrossValidate(t.Context(), a, mask, Settings{Seed: 1, MaxIter: 300}, CVGrid{Ranks: []int{1, 2, 4}, Lambdas: []float64{1e-3, 1}, Folds: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != 6 {
		t.Fatalf("%d scores, want 6", len(scores))
	}
	if s.Rank != 2 {
		t.Errorf("chose rank %d, want the planted 2 (scores %+v)", s.Rank, scores)
	}
	// The choice is the grid point of least RMSE, the simpler model on ties.
	best := scores[0]
	for _, c := range scores[1:] {
		if c.RMSE < best.RMSE-1e-12 || math.Abs(c.RMSE-best.RMSE) <= 1e-12 && (c.Rank < best.Rank || c.Rank == best.Rank && c.Lambda > best.Lambda) {
			best = c
		}
	}
	if s.Rank != best.Rank || s.Lambda != best.Lambda {
		t.Errorf("chose rank %d, lambda %v; the least RMSE is rank %d, lambda %v (scores %+v)", s.Rank, s.Lambda, best.Rank, best.Lambda, scores)
	}
}

func TestCrossValidateDefaultGrid(t *testing.T) {
	a, mask := planted(12, 10, 1, 0.7, 3)
	_, scores, err := CrossValidate(t.Context(), a, mask, Settings{MaxIter: 20}, CVGrid{})
	if err != nil {
		t.Fatal(err)
	}
	if len(scores) != 5*3 || scores[0].Rank != 1 || scores[len(scores)-1].Rank != 8 || scores[len(scores)-1].Lambda != 1 {
		t.Errorf("zero CVGrid: %d scores from rank %d to %d, want ranks 1..8 × 3 lambdas", len(scores), scores[0].Rank, scores[len(scores)-1].Rank)
	}
	if _, _, err := CrossValidate(t.Context(), a, mask, Settings{}, CVGrid{Folds: 1}); err == nil || !strings.Contains(err.Error(), "folds") {
		t.Errorf("1 fold: err %v, want one naming the folds", err)
	}
}

func TestCompleteKeepsInfeasibleOutOfValues(t *testing.T) {
	// Row 0 is infeasible with columns 0-2 everywhere observed; values elsewhere are 1.
	// If infeasible cells were averaged in as 0, predictions would drop well below 1.
	r, c := 8, 6
	a := mat.NewDense(r, c, nil)
	cells := make([][]Cell, r)
	for i := range cells {
		cells[i] = make([]Cell, c)
		for j := range cells[i] {
			a.Set(i, j, 1)
			cells[i][j] = Known
			if j < 3 && i < 4 {
				cells[i][j] = Infeasible
				a.Set(i, j, 0)
			}
		}
	}
	cells[4][0] = Unknown // a row like the feasible ones: stays feasible
	cells[5][4] = Unknown
	cells[3][1] = Unknown // in the infeasible block
	res, err := Complete(t.Context(), a, cells, Settings{Rank: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if v := res.Values.At(5, 4); math.Abs(v-1) > 0.05 {
		t.Errorf("feasible unknown predicted %.3f, want about 1", v)
	}
	if !res.Infeasible[3][1] || res.Infeasible[4][0] || res.Infeasible[5][4] {
		t.Errorf("infeasible predictions (3,1)=%v (4,0)=%v (5,4)=%v, want true false false",
			res.Infeasible[3][1], res.Infeasible[4][0], res.Infeasible[5][4])
	}
	if len(res.PredictedInfeasible) != 1 || res.PredictedInfeasible[0] != [2]int{3, 1} {
		t.Errorf("PredictedInfeasible = %v, want [[3 1]]", res.PredictedInfeasible)
	}
}

// Gavel's stopping rule (change of the reconstruction per entry) stops long before a strict
// objective tolerance on the same problem.
func TestChangeTolStopsEarly(t *testing.T) {
	a, mask := planted(30, 20, 2, 0.5, 5)
	strict, _ := Fit(t.Context(), a, mask, Settings{Rank: 2, Seed: 1, Tol: 1e-14, MaxIter: 300})
	gavel, _ := Fit(t.Context(), a, mask, Settings{Rank: 2, Seed: 1, ChangeTol: 1e-3, MaxIter: 300})
	if gavel.Status != Converged || gavel.Iterations >= strict.Iterations {
		t.Errorf("ChangeTol: %v after %d iterations; strict Tol: %d iterations", gavel.Status, gavel.Iterations, strict.Iterations)
	}
}
