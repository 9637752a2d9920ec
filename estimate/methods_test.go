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

// A partner with nothing measured takes its worker type's majority: where every measured pair
// was infeasible (multi-GPU jobs in Gavel's table), its pairs were predicted to fit, at 1/2.
func TestPartnerMeanUnknownPartnerTakesMajority(t *testing.T) {
	d := NewData([]string{"fits", "full"}, []table.JobType{{Model: "a", ScaleFactor: 1}, {Model: "b", ScaleFactor: 1},
		{Model: "c", ScaleFactor: 1}})
	for w, s := range []table.State{table.Measured, table.Infeasible} {
		for i := range 2 {
			d.Iso[w][i] = 1
			for k := range 2 {
				d.State[w][i][k] = s
				if s == table.Measured {
					d.Norm[w][i][k] = 0.6
				}
			}
		}
		d.Iso[w][2] = 1 // c: isolated rate only
	}
	r, err := PartnerMean{}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	for w, want := range []bool{false, true} {
		for _, p := range [][2]int{{2, 2}, {0, 2}, {2, 0}} {
			if got := r.Infeasible[w][p[0]][p[1]]; got != want {
				t.Errorf("%s: entry %v infeasible %v, want %v", d.Workers[w], p, got, want)
			}
		}
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

// subBlock returns the first n job types of d, every entry copied.
func subBlock(d *Data, n int) *Data {
	s := NewData(d.Workers, d.Jobs[:n])
	for w := range d.Workers {
		copy(s.Iso[w], d.Iso[w][:n])
		for i := 0; i < n; i++ {
			copy(s.Norm[w][i], d.Norm[w][i][:n])
			copy(s.State[w][i], d.State[w][i][:n])
		}
	}
	return s
}

// On a table of 3 job types with 1 reference, ALS has fewer measured entries than its 5
// cross-validation folds (3 on seed 0: the reference with itself on each worker type); it used to
// fail the whole evaluation with "too few for 5 folds". It now fits fixed settings there, so
// every method is reported.
func TestEvaluateFewObservationsReportsEveryMethod(t *testing.T) {
	truth := subBlock(gavelBlock(t), 3)
	ev, err := Evaluate(context.Background(), truth, EvalOptions{References: 1, Fraction: 0.2, Seeds: []uint64{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range DefaultMethods(0) {
		if rep := ev.Methods[m.Name()]; rep == nil || len(rep.PerSeed) != 2 {
			t.Errorf("method %s: report %+v, want one per seed", m.Name(), rep)
		}
	}
}
