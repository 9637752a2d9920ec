package completion_test

import (
	"context"
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
	m, err := completion.Fit(context.Background(), a, mask, completion.Settings{Rank: 1, Lambda: 1e-6, Seed: 1, MaxIter: 2000, Tol: 1e-14})
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
	m, err := completion.FitPairs(context.Background(), obs, 1, 4, nil, completion.PairSettings{Dim: -1, LambdaBias: 1e-6, LambdaShare: -1, Tol: 1e-6, MaxIter: 2000})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.2f %v\n", m.Predict(0, 3, 3), m.Status)
	// Output: -1.00 converged
}

// Job 5 interferes like job 0 (both slow heavy partners: y = −0.1 − 0.5·z_i·z_k with z = 1
// for jobs 0, 1 and 5, 0.5 for job 4 and 0 for jobs 2 and 3), but it was only measured next
// to jobs 2 and 3, which tell nothing about that. Alone, the fit predicts job 5 next to job 1
// as an average pair; told that job 5 probably resembles job 0, it carries job 0's pattern over.
func ExampleFitPairsWithPrior() {
	z := []float64{1, 1, 0, 0, 0.5, 1}
	var obs []completion.PairObs
	for i := 0; i < 6; i++ {
		for k := 0; k < 6; k++ {
			if (i == 5 || k == 5) && i+k != 7 && i+k != 8 {
				continue // job 5 only next to jobs 2 and 3
			}
			obs = append(obs, completion.PairObs{W: 0, I: i, K: k, Y: -0.1 - 0.5*z[i]*z[k]})
		}
	}
	s := completion.PairSettings{Dim: 1, LambdaBias: 0.01, LambdaEmbed: 0.01, LambdaGlobal: 0.01, Seed: 1, MaxIter: 500}
	alone, err := completion.FitPairs(context.Background(), obs, 1, 6, nil, s)
	if err != nil {
		panic(err)
	}
	mix := make([][]completion.JobWeight, 6)
	mix[5] = []completion.JobWeight{{Job: 0, Weight: 1}}
	pulled, err := completion.FitPairsWithPrior(context.Background(), obs, 1, 6, nil, &completion.PairPrior{Mix: mix, Lambda: 1}, s)
	if err != nil {
		panic(err)
	}
	fmt.Printf("alone %.2f, with the prior %.2f, truth %.2f\n", alone.Predict(0, 5, 1), pulled.Predict(0, 5, 1), -0.1-0.5*z[5]*z[1])
	// Output: alone -0.33, with the prior -0.59, truth -0.60
}
