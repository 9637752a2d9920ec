package policy

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// pairTimes sums each pair's time fractions over worker types.
func pairTimes(a *Allocation) map[Combination]float64 {
	y := map[Combination]float64{}
	for c, x := range a.Fractions {
		if c.IsPair() {
			for _, v := range x {
				y[c] += v
			}
		}
	}
	return y
}

// worstOddSet checks every set of 3 and 5 jobs by brute force: the pairs
// inside an odd set S can take at most (|S|-1)/2 of the time in any
// sequence of rounds. It returns the largest excess and its set.
func worstOddSet(ids []string, y map[Combination]float64) (float64, []string) {
	worst, at := 0.0, []string(nil)
	var rec func(start int, s []string)
	rec = func(start int, s []string) {
		if len(s) == 3 || len(s) == 5 {
			in := 0.0
			for i, a := range s {
				for _, b := range s[i+1:] {
					in += y[PairOf(a, b)]
				}
			}
			if ex := in - float64(len(s)-1)/2; ex > worst {
				worst, at = ex, slices.Clone(s)
			}
		}
		if len(s) == 5 {
			return
		}
		for i := start; i < len(ids); i++ {
			rec(i+1, append(s, ids[i]))
		}
	}
	rec(0, nil)
	return worst, at
}

// On these 14 jobs (every GPU busy, most jobs at their full time) the
// max-min packed LP without odd-set rows gave j03+j08 0.699, j08+j09 0.301
// and j03+j09 0.045 of the time: 1.045 in a triangle, where at most one of
// the three pairs can run at a time, so no round schedule could realize
// it. With the rows no set of 3 or 5 jobs is over, and the objective is
// what it was to 1e-5 (0.599414 without, the LP had an alternative optimum).
func TestPackedAllocationHasNoOverfullOddSet(t *testing.T) {
	jf, err := LoadJobs("testdata/packed14.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"max_min_fairness_packed", "max_min_fairness_water_filling_packed", "finish_time_fairness_packed"} {
		p, err := New(name)
		if err != nil {
			t.Fatal(err)
		}
		a, err := p.Allocate(context.Background(), &Problem{Table: table.Default(),
			Cluster: Cluster{"v100": 3, "p100": 3, "k80": 3}, Jobs: jf.Jobs})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var ids []string
		for _, j := range jf.Jobs {
			ids = append(ids, j.ID)
		}
		if ex, s := worstOddSet(ids, pairTimes(a)); ex > 1e-6 {
			t.Errorf("%s: pairs inside %v take %.4f more than (|S|-1)/2 of the time", name, s, ex)
		}
		if name != "max_min_fairness_packed" {
			continue
		}
		// The rows cost nothing here: the objective is the LP's without them (solved now,
		// with the rows off), to within 1e-5, and never above it.
		without, _ := New(name)
		without.(*named).opt.oddSetRounds = -1
		w, err := without.Allocate(context.Background(), &Problem{Table: table.Default(),
			Cluster: Cluster{"v100": 3, "p100": 3, "k80": 3}, Jobs: jf.Jobs})
		if err != nil {
			t.Fatal(err)
		}
		if a.Objective < w.Objective-1e-5 || a.Objective > w.Objective+1e-6 {
			t.Errorf("%s: objective %.6f, want the LP's without odd-set rows, %.6f, within 1e-5", name, a.Objective, w.Objective)
		}
		if ex, _ := worstOddSet(ids, pairTimes(w)); ex < 0.04 {
			t.Errorf("without the rows a set is over by only %.4f: the instance no longer tests them", ex)
		}
	}
}

// The separation finds exactly the overfull sets of 3 and 5 jobs of a
// hand-made solution: a triangle at 0.5 a pair (1.5 > 1), a 5-cycle at 0.45
// a pair (2.25 > 2), and a 4-cycle at 0.5 (even: no constraint); jobs 12-14
// form a triangle at exactly 1, which is allowed.
func TestViolatedOddSets(t *testing.T) {
	in := &instance{jobs: make([]Job, 15), workers: []string{"g"}}
	var x [][]float64
	for i := range in.jobs {
		in.combos = append(in.combos, combo{a: i, b: -1})
		x = append(x, []float64{0})
	}
	pair := func(a, b int, v float64) {
		in.combos = append(in.combos, combo{a: a, b: b})
		x = append(x, []float64{v})
	}
	pair(0, 1, 0.5)
	pair(1, 2, 0.5)
	pair(0, 2, 0.5)
	for i := 3; i < 8; i++ {
		pair(i, 3+(i-3+1)%5, 0.45)
	}
	for i := 8; i < 12; i++ {
		pair(i, 8+(i-8+1)%4, 0.5)
	}
	pair(12, 13, 0.4)
	pair(13, 14, 0.3)
	pair(12, 14, 0.3)
	got, complete := in.violatedOddSets(x)
	want := [][]int{{0, 1, 2}, {3, 4, 5, 6, 7}}
	if !slices.EqualFunc(got, want, slices.Equal[[]int]) || !complete {
		t.Errorf("violated sets %v (complete %v), want %v (complete)", got, complete, want)
	}
}

// The 14 jobs' LP breaks a triangle row before its first re-solve. With no
// re-solves allowed the allocation says so in a warning and its stats count
// the LP; with the default cap it settles and does not warn.
func TestUnsettledOddSetsWarn(t *testing.T) {
	jf, err := LoadJobs("testdata/packed14.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rounds int
		warns  bool
	}{{-1, true}, {0, false}} {
		p, _ := New("max_min_fairness_packed")
		p.(*named).opt.oddSetRounds = c.rounds
		a, err := p.Allocate(context.Background(), &Problem{Table: table.Default(),
			Cluster: Cluster{"v100": 3, "p100": 3, "k80": 3}, Jobs: jf.Jobs})
		if err != nil {
			t.Fatal(err)
		}
		warned := slices.ContainsFunc(a.Warnings, func(w string) bool { return strings.Contains(w, "odd set of 3 or 5 jobs") })
		if warned != c.warns || (a.Stats.Unsettled > 0) != c.warns {
			t.Errorf("re-solve cap %d: warnings %q, unsettled %d; want a warning: %v", c.rounds, a.Warnings, a.Stats.Unsettled, c.warns)
		}
	}
}
