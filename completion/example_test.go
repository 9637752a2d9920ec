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
