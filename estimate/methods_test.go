package estimate

import (
	"context"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// PartnerMean once decided (i, k) from partner k's column alone, so a pair could be infeasible
// for one job and feasible for the other. Here jobs 0 and 1 are references, job 2 is infeasible
// next to both, job 3 measured feasibly next to both, and (2, 3) missing: partner 2's column
// holds only infeasible entries (so (3, 2) is predicted infeasible), partner 3's only measured
// ones (so (2, 3) alone would be feasible). A pair is infeasible for both jobs or neither, so
// both directions must be infeasible.
func TestPartnerMeanInfeasibleSymmetric(t *testing.T) {
	d := NewData([]string{"k80"}, []table.JobType{{Model: "a", ScaleFactor: 1}, {Model: "b", ScaleFactor: 1},
		{Model: "c", ScaleFactor: 1}, {Model: "d", ScaleFactor: 1}})
	for i := range d.Jobs {
		d.Iso[0][i] = 1
	}
	set := func(i, k int, s table.State) {
		d.State[0][i][k], d.State[0][k][i] = s, s
		if s == table.Measured {
			d.Norm[0][i][k], d.Norm[0][k][i] = 0.6, 0.6
		}
	}
	set(0, 0, table.Measured)
	set(1, 1, table.Measured)
	set(0, 1, table.Measured)
	set(2, 0, table.Infeasible)
	set(2, 1, table.Infeasible)
	set(3, 0, table.Measured)
	set(3, 1, table.Measured)
	r, err := PartnerMean{}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Infeasible[0][2][3] || !r.Infeasible[0][3][2] {
		t.Errorf("pair (c, d): infeasible %v for c, %v for d; want true for both", r.Infeasible[0][2][3], r.Infeasible[0][3][2])
	}
}

// On the holdout protocol every pair must come out infeasible for both jobs or neither (94
// asymmetric entries on seed 0 before the fix).
func TestPartnerMeanInfeasibleSymmetricOnHoldout(t *testing.T) {
	h, err := Protocol(gavelBlock(t), 16, 0.2, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := PartnerMean{}.Estimate(context.Background(), h.Partial)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for w := range r.Infeasible {
		for i := range r.Infeasible[w] {
			for k := range r.Infeasible[w][i] {
				if r.Infeasible[w][i][k] != r.Infeasible[w][k][i] {
					n++
				}
			}
		}
	}
	if n != 0 {
		t.Errorf("%d ordered entries infeasible for one job of the pair only, want 0", n)
	}
}
