package fingerprint_test

import (
	"fmt"
	"math"

	"github.com/gavelkit/gavel/fingerprint"
)

func ExampleMatch() {
	refs := [][]float64{
		{0.9, 0.8, 0.7, 0.9},
		{0.4, 0.5, 0.3, 0.4},
	}
	partial := []float64{0.42, math.NaN(), 0.31, math.NaN()} // two entries measured so far
	res, err := fingerprint.Match(partial, refs, fingerprint.Settings{K: 1, Distance: fingerprint.MeanAbsLog})
	if err != nil {
		panic(err)
	}
	fmt.Println("nearest reference:", res.Neighbors[0].Index)
	fmt.Printf("its entry 1: %.1f\n", res.Predict(refs, 1))
	// Output:
	// nearest reference: 1
	// its entry 1: 0.5
}
