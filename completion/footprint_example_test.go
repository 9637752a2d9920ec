package completion_test

import (
	"context"
	"fmt"

	"github.com/gavelkit/gavel/completion"
)

// Four jobs of sizes 1, 3, 4 and 6 (in some unit) on a worker type of capacity 6.5: jobs 0 and 1
// were measured with each other and with every job, and the fit tells that the pairs never
// measured do not fit: job 2 does not fit with job 1 (size 3), so it is larger than 3.5, and job
// 3 does not fit with job 0 (size 1), so it is larger than 5.5.
func ExampleFitFootprints() {
	size := []float64{1, 3, 4, 6}
	var obs []completion.FeasObs
	for i := 0; i < 2; i++ {
		for k := i; k < len(size); k++ {
			obs = append(obs, completion.FeasObs{W: 0, I: i, K: k, Infeasible: size[i]+size[k] > 6.5})
		}
	}
	m, err := completion.FitFootprints(context.Background(), obs, 1, len(size), nil, completion.FootprintSettings{LambdaSize: 0.01})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range [][2]int{{2, 2}, {2, 3}, {3, 3}} {
		fmt.Printf("jobs %d and %d: infeasible %v\n", p[0], p[1], m.Prob(0, p[0], p[1]) >= 0.5)
	}
	// Output:
	// jobs 2 and 2: infeasible true
	// jobs 2 and 3: infeasible true
	// jobs 3 and 3: infeasible true
}
