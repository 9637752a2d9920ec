package completion_test

import (
	"fmt"

	"github.com/gavelkit/gavel/completion"
	"gonum.org/v1/gonum/mat"
)

// A rank-1 matrix with one entry hidden is filled in from the rest.
func ExampleFit() {
	a := mat.NewDense(3, 3, []float64{
		1, 2, 3,
		2, 4, 6,
		3, 6, 0, // hidden: 9
	})
	mask := mat.NewDense(3, 3, []float64{1, 1, 1, 1, 1, 1, 1, 1, 0})
	m, err := completion.Fit(a, mask, completion.Settings{Rank: 1, Lambda: 1e-6, Seed: 1, MaxIter: 2000, Tol: 1e-14})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.1f\n", m.At(2, 2))
	// Output: 9.0
}

// Four jobs on one worker type, where job i next to job k keeps y = −0.1·(i+1) − 0.2·k (a log
// normalized rate: heavier partners slow it more). Every pair but (3, 3) is observed; the fit
// places the hidden self pair from job 3's other entries in both roles.
func ExampleFitPairs() {
	var obs []completion.PairObs
	for i := 0; i < 4; i++ {
		for k := 0; k < 4; k++ {
			if i == 3 && k == 3 {
				continue // hidden: −0.4 − 0.6 = −1.0
			}
			obs = append(obs, completion.PairObs{W: 0, I: i, K: k, Y: -0.1*float64(i+1) - 0.2*float64(k)})
		}
	}
	m, err := completion.FitPairs(obs, 1, 4, nil, completion.PairSettings{Dim: -1, LambdaBias: 1e-6, LambdaShare: -1, Tol: 1e-6, MaxIter: 2000})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.2f %v\n", m.Predict(0, 3, 3), m.Status)
	// Output: -1.00 converged
}
