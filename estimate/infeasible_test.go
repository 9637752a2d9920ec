package estimate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/gavelkit/gavel/completion"
	"github.com/gavelkit/gavel/table"
)

// footprintBlock returns a complete block in which jobs i and k do not fit on worker type w when
// size[i] + size[k] > capacity[w]; feasible pairs run at normalized rate 0.6 each.
func footprintBlock(size, capacity []float64) *Data {
	workers := make([]string, len(capacity))
	for w := range workers {
		workers[w] = fmt.Sprintf("gpu%c", 'a'+w)
	}
	jobs := make([]table.JobType, len(size))
	for i := range jobs {
		jobs[i] = table.JobType{Model: fmt.Sprintf("job%02d", i), ScaleFactor: 1}
	}
	d := NewData(workers, jobs)
	for w := range workers {
		for i := range jobs {
			d.Iso[w][i] = 1 + float64(i%3)
			for k := range jobs {
				if size[i]+size[k] > capacity[w] {
					d.State[w][i][k] = table.Infeasible
				} else {
					d.State[w][i][k], d.Norm[w][i][k] = table.Measured, 0.6
				}
			}
		}
	}
	return d
}

// sizeBounds returns, for each job, the interval (lo, hi] its size must lie in given d's
// measurements with the references (whose sizes are known), if every job's size is the same
// on every worker type: a pair that does not fit with reference r on w says size > c_w − size_r,
// one that fits says size ≤ c_w − size_r.
func sizeBounds(d *Data, size, capacity []float64, refs int) (lo, hi []float64) {
	n := len(size)
	lo, hi = make([]float64, n), make([]float64, n)
	for k := range lo {
		lo[k], hi[k] = math.Inf(-1), math.Inf(1)
		if k < refs {
			lo[k], hi[k] = size[k], size[k]
			continue
		}
		for w, cw := range capacity {
			for r := 0; r < refs; r++ {
				switch d.State[w][r][k] {
				case table.Infeasible:
					lo[k] = math.Max(lo[k], cw-size[r])
				case table.Measured:
					hi[k] = math.Min(hi[k], cw-size[r])
				}
			}
		}
	}
	return lo, hi
}

// TestPairwiseRecoversPlantedFootprints runs our estimator on blocks with a planted footprint
// structure where only pairs with the first refs jobs (the references) were measured, those
// seen(w, reference, job) allows, and checks every missing pair whose outcome the measurements
// decide (see sizeBounds): a pair is sure not to fit when its lower bounds already exceed the
// capacity, sure to fit when its upper bounds do not, both by a slack of one size unit, since the
// classifier is not told the references' sizes either, only their outcomes with each other.
func TestPairwiseRecoversPlantedFootprints(t *testing.T) {
	const refs, slack = 10, 1.0
	size := []float64{4, 9, 1, 7, 2, 10, 5, 3, 8, 6, 3, 8, 5, 10, 6, 2, 7, 9}
	cases := []struct {
		name     string
		capacity []float64
		seen     func(w, ref, job int) bool
	}{
		{"every worker type", []float64{12.5, 9.5, 14.5}, func(w, ref, job int) bool { return true }},
		// About half of each job's pairs with the references, as in Gavel's protocol.
		{"half the references", []float64{12.5, 9.5, 14.5}, func(w, ref, job int) bool { return (w*7+ref*5+job*3)%4 < 2 }},
		// Capacities out of worker order, and each job missing on one worker type: its
		// footprint there comes from what it showed on the others.
		{"one worker type unmeasured per job", []float64{14.5, 12.5, 9.5}, func(w, ref, job int) bool { return w != job%3 }},
		{"a worker type where everything fits", []float64{12.5, 21, 9.5}, func(w, ref, job int) bool { return true }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			truth := footprintBlock(size, c.capacity)
			d := truth.Clone()
			n := len(size)
			for w := range d.Workers {
				for i := 0; i < n; i++ {
					for k := refs; k < n; k++ {
						if i >= refs || !c.seen(w, i, k) {
							d.State[w][i][k], d.State[w][k][i] = table.Missing, table.Missing
						}
					}
				}
			}
			lo, hi := sizeBounds(d, size, c.capacity, refs)
			// Our estimator as it is, and a crisper classifier (small penalty, threshold 0.5).
			crisp := footprints{Settings: completion.FootprintSettings{LambdaSize: 0.01, LambdaDev: 10}, Threshold: 0.5}
			for _, m := range []struct {
				name     string
				estimate func(*Data) (*Result, error)
			}{
				{"ours", func(d *Data) (*Result, error) { return Pairwise{Seed: 1}.Estimate(context.Background(), d) }},
				{"crisp", func(d *Data) (*Result, error) {
					r := newResult(d)
					_, ind := observations(d)
					return r, crisp.predict(context.Background(), d, ind, features(d), r)
				}},
			} {
				r, err := m.estimate(d)
				if err != nil {
					t.Fatal(err)
				}
				checked := 0
				for w, cw := range c.capacity {
					for i := 0; i < n; i++ {
						for k := i; k < n; k++ {
							sure := lo[i]+lo[k] >= cw+slack || hi[i]+hi[k] <= cw-slack
							if d.State[w][i][k] != table.Missing || !sure {
								continue
							}
							checked++
							want := truth.State[w][i][k] == table.Infeasible
							if r.Infeasible[w][i][k] != want || r.Infeasible[w][k][i] != want {
								t.Errorf("%s: %s: %s (size %v) with %s (size %v), capacity %v: infeasible %v, want %v (score %.2f)",
									m.name, d.Workers[w], d.Jobs[i].Model, size[i], d.Jobs[k].Model, size[k], cw, r.Infeasible[w][i][k], want, r.InfeasibleScore[w][i][k])
							}
						}
					}
				}
				if checked < 40 {
					t.Fatalf("only %d pairs checked", checked)
				}
			}
		})
	}
}

// TestPairwiseNothingInfeasible: with no infeasible measurement, nothing is predicted
// infeasible and there is no score.
func TestPairwiseNothingInfeasible(t *testing.T) {
	size := []float64{1, 2, 3, 4, 5, 6}
	d := footprintBlock(size, []float64{100, 100})
	for w := range d.Workers {
		d.State[w][4][5], d.State[w][5][4] = table.Missing, table.Missing
	}
	r, err := Pairwise{Seed: 1}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if r.InfeasibleScore != nil {
		t.Error("infeasibility score without an infeasible measurement")
	}
	for w := range d.Workers {
		if r.Infeasible[w][4][5] || r.Infeasible[w][5][4] {
			t.Errorf("%s: missing pair predicted infeasible", d.Workers[w])
		}
	}
}

// TestFootprintsInfeasibleAlone: a job whose isolated rate is 0 on a worker type (it does not fit
// even alone) and that has no pair measured there is predicted infeasible with every job there,
// though nothing else marks it as large, and its log isolated rate (not finite) does not spoil
// the fit.
func TestFootprintsInfeasibleAlone(t *testing.T) {
	size := []float64{1, 2, 3, 4, 5, 6, 7, 13}
	d := footprintBlock(size, []float64{30, 12.5}) // everything fits on the first
	big := len(size) - 1
	d.Iso[1][big] = 0
	for k := range size {
		d.State[1][big][k], d.State[1][k][big] = table.Missing, table.Missing
	}
	_, ind := observations(d)
	r := newResult(d)
	if err := defaultFootprints().predict(context.Background(), d, ind, features(d), r); err != nil {
		t.Fatal(err)
	}
	for k := range size {
		if !r.Infeasible[1][big][k] || !r.Infeasible[1][k][big] {
			t.Errorf("%s: %s with %s: feasible (score %.2f), want infeasible", d.Workers[1], d.Jobs[big].Model, d.Jobs[k].Model, r.InfeasibleScore[1][big][k])
		}
	}
}

// A job that cannot run alone on a worker type (isolated rate 0, every pair there infeasible,
// as gavel-profile records an out-of-memory job) leaves the rest of the estimate finite, and
// its pairs there are predicted infeasible.
func TestPairwiseJobInfeasibleAlone(t *testing.T) {
	h, err := Protocol(gavelBlock(t), 16, 0.2, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := h.Partial
	j := -1
	for i := range d.Jobs {
		if !slicesContains(h.References, i) {
			j = i
			break
		}
	}
	const w = 0
	d.Iso[w][j] = 0
	for k := range d.Jobs {
		d.State[w][j][k], d.State[w][k][j] = table.Infeasible, table.Infeasible
		d.Norm[w][j][k], d.Norm[w][k][j] = 0, 0
	}
	r, err := Pairwise{Seed: 1}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	for v := range r.Norm {
		for i := range r.Norm[v] {
			for k, x := range r.Norm[v][i] {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					t.Fatalf("%s: %s next to %s: estimate %v", d.Workers[v], d.Jobs[i].Model, d.Jobs[k].Model, x)
				}
			}
		}
	}
	for k := range d.Jobs {
		if !r.Infeasible[w][j][k] || !r.Infeasible[w][k][j] {
			t.Errorf("%s: %s cannot run alone, yet its pair with %s is predicted feasible", d.Workers[w], d.Jobs[j].Model, d.Jobs[k].Model)
		}
	}
}

// A pair with a job that does not fit alone is infeasible whatever the partner: it is no
// outcome of the footprint model (the job's Alone outcome stands for it), else a partner
// measured only next to such a job looks large. On a table where the first reference could
// not run alone on p100, this predicted 498 of p100's 600 estimated entries infeasible (1
// with the reference's rate positive).
func TestFeasObsSkipsPairsOfJobsThatCannotRunAlone(t *testing.T) {
	d := NewData([]string{"a", "b"}, []table.JobType{{Model: "x", ScaleFactor: 1}, {Model: "y", ScaleFactor: 1}, {Model: "z", ScaleFactor: 1}})
	for w := range d.Iso {
		for i := range d.Iso[w] {
			d.Iso[w][i] = 1
		}
	}
	d.Iso[1][0] = 0 // x does not fit alone on b
	ind := []completion.PairObs{
		{W: 0, I: 0, K: 1, Y: 0}, {W: 0, I: 1, K: 0, Y: 0}, // feasible on a
		{W: 1, I: 0, K: 1, Y: 1}, {W: 1, I: 1, K: 0, Y: 1}, // with x on b: no outcome
		{W: 1, I: 1, K: 2, Y: 1}, {W: 1, I: 2, K: 1, Y: 1}, // infeasible on b
	}
	got := feasObs(d, ind)
	want := []completion.FeasObs{
		{W: 0, I: 0, K: 1, Infeasible: false},
		{W: 1, I: 1, K: 2, Infeasible: true},
		{W: 1, I: 0, K: completion.Alone, Infeasible: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("feasObs = %v, want %v", got, want)
	}
}
