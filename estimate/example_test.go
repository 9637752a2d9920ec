package estimate_test

import (
	"context"
	"fmt"

	"github.com/gavelkit/gavel/estimate"
	"github.com/gavelkit/gavel/table"
)

// Forget the V100 pairs of one job type except its pair with itself, then estimate them back.
func ExampleTable() {
	t := table.Default().Select(nil, []string{"k80", "p100", "v100"})
	jobs := t.JobTypesWithScaleFactor(1)
	j := jobs[len(jobs)-1]
	for _, k := range jobs {
		if k != j {
			t.DeletePair("v100", j, k)
		}
	}
	full, rep, err := estimate.Table(context.Background(), t, estimate.Options{Seed: 1})
	if err != nil {
		panic(err)
	}
	_, _, s := full.Pair("v100", j, jobs[0])
	fmt.Println("estimated:", rep.Estimated, "now:", s)
	// Output: estimated: 50 now: measured
}

// The same forgotten V100 pairs, each predicted feasible with an interval meant to hold its true
// normalized rate four times in five and the chance that its packing decision is wrong.
func ExampleTable_uncertainty() {
	t := table.Default().Select(nil, []string{"k80", "p100", "v100"})
	jobs := t.JobTypesWithScaleFactor(1)
	j := jobs[len(jobs)-1]
	for _, k := range jobs {
		if k != j {
			t.DeletePair("v100", j, k)
		}
	}
	_, rep, err := estimate.Table(context.Background(), t, estimate.Options{Seed: 1, Uncertainty: true})
	if err != nil {
		panic(err)
	}
	with, around := 0, 0
	for _, e := range rep.Entries {
		if u := e.Uncertainty; u != nil {
			with++
			if u.NormalizedLow < e.Normalized && e.Normalized < u.NormalizedHigh && u.PackingWrong < 1 {
				around++
			}
		}
	}
	fmt.Println("estimated:", rep.Estimated, "predicted infeasible:", rep.InfeasiblePredicted)
	fmt.Println("with an interval:", with, "around the estimate:", around)
	// Output:
	// estimated: 50 predicted infeasible: 2
	// with an interval: 48 around the estimate: 48
}

// Forget the V100 pairs of one job type, then ask which three measurements to make first: all
// pair the forgotten job with a partner on the V100, best first.
func ExampleSuggestTable() {
	t := table.Default().Select(nil, []string{"k80", "p100", "v100"})
	jobs := t.JobTypesWithScaleFactor(1)
	j := jobs[len(jobs)-1]
	for _, k := range jobs {
		t.DeletePair("v100", j, k)
	}
	ms, _, err := estimate.SuggestTable(context.Background(), t, 3, estimate.Options{Seed: 1})
	if err != nil {
		panic(err)
	}
	for x, m := range ms {
		involves := m.WorkerType == "v100" && (m.Job == j.Model || m.Partner == j.Model)
		fmt.Println(involves, x == 0 || m.Score <= ms[x-1].Score)
	}
	// Output:
	// true true
	// true true
	// true true
}

// Score the partner-mean baseline on the embedded table's single-GPU block (K80, P100, V100): 20
// references, and each pair of another job type with a reference revealed with probability 0.5.
func ExampleEvaluate() {
	blocks, _, err := estimate.Blocks(table.Default(), nil, true)
	if err != nil {
		panic(err)
	}
	ev, err := estimate.Evaluate(context.Background(), blocks[0], estimate.EvalOptions{
		References: 20, Fraction: 0.5, Seeds: []uint64{0},
		Methods: []estimate.Method{estimate.PartnerMean{}},
	})
	if err != nil {
		panic(err)
	}
	m := ev.Methods["partner_mean"]
	fmt.Println(ev.Order, m.Entries, m.PackingAgreement > 0.5)
	// Output: [partner_mean] 828 true
}

// One draw of Gavel's hold-out protocol by hand, what Evaluate repeats per seed and method: 16
// references fully measured, each pair of another job type with a reference revealed with
// probability 0.2, the rest estimated and scored against the truth on every entry but the
// reference pairs (3 worker types × (26² − 16²) entries).
func ExampleProtocol() {
	blocks, _, err := estimate.Blocks(table.Default(), nil, true)
	if err != nil {
		panic(err)
	}
	truth := blocks[0] // single-GPU job types on the K80, P100 and V100
	h, err := estimate.Protocol(truth, 16, 0.2, 0)
	if err != nil {
		panic(err)
	}
	r, err := estimate.PartnerMean{}.Estimate(context.Background(), h.Partial)
	if err != nil {
		panic(err)
	}
	m := estimate.Score(truth, r, h.References)
	fmt.Println(len(truth.Jobs), len(h.References), h.Revealed > 0, m.Entries, m.MAPE > 0)
	// Output: 26 16 true 1260 true
}
