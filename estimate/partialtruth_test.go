package estimate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// holeyTruth is Gavel's block with some pairs never measured: each of jobs 0-7 lacks its
// pairs with a third of the others on each worker type, as a user's own table would.
func holeyTruth(t *testing.T) *Data {
	t.Helper()
	d := gavelBlock(t)
	for w := range d.Workers {
		for i := range 8 {
			for k := range d.Jobs {
				if (i+k+w)%3 == 0 {
					for _, e := range [][2]int{{i, k}, {k, i}} {
						d.State[w][e[0]][e[1]], d.Norm[w][e[0]][e[1]] = table.Missing, 0
					}
				}
			}
		}
	}
	return d
}

// isClique reports whether the jobs of set are measured with themselves and each other on
// every worker type of d.
func isClique(d *Data, set []int) bool {
	for w := range d.Workers {
		for _, i := range set {
			for _, k := range set {
				if d.State[w][i][k] == table.Missing {
					return false
				}
			}
		}
	}
	return true
}

// On a partial truth the references are job types measured against each other fully, drawn
// anew for each seed, and a pair the truth lacks is never revealed: at P = 1 exactly the
// truth's pairs of a non-reference with a reference are.
func TestProtocolPartialTruth(t *testing.T) {
	truth := holeyTruth(t)
	sets := map[string]bool{}
	for seed := range uint64(4) {
		h, err := Protocol(truth, 12, 1, seed)
		if err != nil {
			t.Fatal(err)
		}
		if !isClique(truth, h.References) {
			t.Errorf("seed %d: references %v are not all measured with each other", seed, h.References)
		}
		sets[fmt.Sprint(h.References)] = true
		isRef := make([]bool, len(truth.Jobs))
		for _, r := range h.References {
			isRef[r] = true
		}
		want := 0
		for w := range truth.Workers {
			for i := range truth.Jobs {
				for k := range truth.Jobs {
					known := truth.State[w][i][k] != table.Missing
					if !isRef[i] && isRef[k] && known {
						want++
					}
					if got := h.Partial.State[w][i][k] != table.Missing; got && !known {
						t.Fatalf("seed %d: (%d, %d, %d) revealed but the truth lacks it", seed, w, i, k)
					} else if known && (isRef[k] || isRef[i]) && !got {
						t.Errorf("seed %d: (%d, %d, %d) with a reference not revealed at P = 1", seed, w, i, k)
					}
				}
			}
		}
		if h.Revealed != want {
			t.Errorf("seed %d: revealed %d, want %d", seed, h.Revealed, want)
		}
	}
	if len(sets) < 2 {
		t.Errorf("the same references %v for every seed", sets)
	}
	// Jobs 0-7 each lack a third of their pairs, so no 25 job types are measured together.
	if _, err := Protocol(truth, 25, 0.2, 0); err == nil || !strings.Contains(err.Error(), "references 25: the largest set") {
		t.Errorf("R = 25: err %v, want one naming the largest set found", err)
	}
}

// graphData is a block of n job types on one worker type, each measured with itself and with k
// where measured(i, k) (both ways: the pair is measured when either order says so).
func graphData(n int, measured func(i, k int) bool) *Data {
	jobs := make([]table.JobType, n)
	for i := range jobs {
		jobs[i] = table.JobType{Model: fmt.Sprintf("j%02d", i), ScaleFactor: 1}
	}
	d := NewData([]string{"w"}, jobs)
	for i := range jobs {
		d.Iso[0][i] = 1
		for k := range jobs {
			if i == k || measured(i, k) || measured(k, i) {
				d.Norm[0][i][k], d.State[0][i][k] = 0.5, table.Measured
			}
		}
	}
	return d
}

// Job types 0-19 are measured together; each of 20-59 with itself and all of them but two, and
// with nothing else. Any set with one of 20-59 has at most 19 job types, and a random order
// almost always takes one of them early, so 20 references are found by the greedy fallback
// (0-19 have the most entries) and only by it.
func TestProtocolFindsPlantedReferences(t *testing.T) {
	d := graphData(60, func(i, k int) bool {
		return k < 20 && (i < 20 || k != i%20 && k != (i+1)%20)
	})
	want := make([]int, 20)
	for i := range want {
		want[i] = i
	}
	for seed := range uint64(4) {
		h, err := Protocol(d, 20, 0.2, seed)
		if err != nil || !slices.Equal(h.References, want) {
			t.Fatalf("seed %d: references %v (err %v), want 0-19", seed, h.References, err)
		}
	}
}

// Job type 0 is measured with each of 1-8, which are measured with nothing else; 9-12 with
// each other. The greedy set starts from 0, the job with the most entries, and stops at two;
// a random order starting in 9-12 finds the four.
func TestProtocolBeatsGreedyReferences(t *testing.T) {
	d := graphData(13, func(i, k int) bool { return k == 0 && i >= 1 && i <= 8 || i >= 9 && k >= 9 })
	if g := d.References(); len(g) != 2 {
		t.Fatalf("greedy set %v, the test wants 2 job types", g)
	}
	for seed := range uint64(4) {
		h, err := Protocol(d, 4, 0.5, seed)
		if err != nil || !slices.Equal(h.References, []int{9, 10, 11, 12}) {
			t.Errorf("seed %d: references %v (err %v), want 9-12", seed, h.References, err)
		}
	}
}

// The reveal draws are taken whether or not the truth has the pair, so one more pair missing
// changes no other reveal.
func TestProtocolOneMorePairMissing(t *testing.T) {
	truth := holeyTruth(t)
	h, err := Protocol(truth, 12, 0.3, 5)
	if err != nil {
		t.Fatal(err)
	}
	isRef := make([]bool, len(truth.Jobs))
	for _, r := range h.References {
		isRef[r] = true
	}
	// The first pair of a non-reference with a reference, on the last worker type, that the
	// truth has and the draw left unrevealed.
	w, i, k := len(truth.Workers)-1, -1, -1
	for a := range truth.Jobs {
		for _, b := range h.References {
			if i < 0 && !isRef[a] && truth.State[w][a][b] != table.Missing && h.Partial.State[w][a][b] == table.Missing {
				i, k = a, b
			}
		}
	}
	if i < 0 {
		t.Fatal("no unrevealed pair")
	}
	less := truth.Clone()
	less.State[w][i][k], less.State[w][k][i] = table.Missing, table.Missing
	h2, err := Protocol(less, 12, 0.3, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.References, h2.References) || h2.Revealed != h.Revealed ||
		!slices.EqualFunc(h.Partial.State, h2.Partial.State, func(a, b [][]table.State) bool { return slices.EqualFunc(a, b, slices.Equal) }) {
		t.Errorf("one unrevealed pair less in the truth changed the draw: references %v → %v, revealed %d → %d", h.References, h2.References, h.Revealed, h2.Revealed)
	}
}

// Entries the truth lacks are not scored: the hand-computed block of TestScoreHandComputed
// without its pair (0, 1) leaves (0, 0) (exact) and (1, 1) (infeasible, missed).
func TestScoreSkipsEntriesTheTruthLacks(t *testing.T) {
	d := NewData([]string{"w"}, []table.JobType{{Model: "a", ScaleFactor: 1}, {Model: "b", ScaleFactor: 1}})
	d.Iso[0] = []float64{1, 1}
	d.Norm[0][0][0], d.State[0][0][0] = 0.5, table.Measured
	d.State[0][1][1] = table.Infeasible
	r := newResult(d)
	r.Norm[0][0][0], r.Norm[0][0][1], r.Norm[0][1][0], r.Norm[0][1][1] = 0.5, 0.3, 0.5, 0.5
	r.Infeasible[0][1][1] = false
	m := Score(d, r, nil)
	if m.Entries != 2 || m.Pairs != 2 || m.ScoredEntries != 1 || m.ScoredPairs != 1 {
		t.Errorf("%d entries, %d pairs, %d and %d scored; want 2, 2, 1 and 1", m.Entries, m.Pairs, m.ScoredEntries, m.ScoredPairs)
	}
	if m.MAE != 0 || m.PackingAgreement != 1 || m.InfeasibleRecall != 0 {
		t.Errorf("MAE %v, agreement %v, infeasible recall %v; want 0, 1 and 0", m.MAE, m.PackingAgreement, m.InfeasibleRecall)
	}
	// A Data built by hand may know one direction of a pair: its entry counts, not the pair
	// (the other rate would be read as 0).
	d.Norm[0][0][1], d.State[0][0][1] = 0.6, table.Measured
	if m = Score(d, r, nil); m.Entries != 3 || m.Pairs != 2 || m.PackingAgreement != 1 {
		t.Errorf("(0, 1) known one way: %d entries, %d pairs, agreement %v; want 3, 2 and 1", m.Entries, m.Pairs, m.PackingAgreement)
	}
}

// Active on a partial truth spends its whole budget on pairs the truth has: without the pool
// Suggest's cold starts go to the jobs with holes, and measuring a pair nobody measured reveals
// nothing.
func TestActivePartialTruthSpendsBudget(t *testing.T) {
	truth := holeyTruth(t)
	h, err := Protocol(truth, 12, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := onlyReferences(h.Partial, h.References)
	for _, aim := range []Aim{AimBalanced, AimDecisions} {
		d, err := Active(context.Background(), truth, base, Pairwise{}, 40, 2, aim)
		if err != nil {
			t.Fatal(err)
		}
		if got := knownPairs(d) - knownPairs(base); got != 40 {
			t.Errorf("aim %v: %d pairs measured for a budget of 40", aim, got)
		}
	}
}

// When coverage finds fewer pairs than its share (every pair with a reference is known already),
// the batches spend the rest: the budget is spent in full.
func TestActiveSpendsWhatCoverLeaves(t *testing.T) {
	truth := gavelBlock(t)
	h, err := Protocol(truth, 16, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(Cover(h.Partial, 4)) != 0 {
		t.Fatal("coverage still has pairs with references to measure")
	}
	d, err := Active(context.Background(), truth, h.Partial, Pairwise{}, 20, 1, AimBalanced)
	if err != nil {
		t.Fatal(err)
	}
	if got := knownPairs(d) - knownPairs(h.Partial); got != 20 {
		t.Errorf("%d pairs measured for a budget of 20", got)
	}
}

// Evaluate on a partial truth scores each seed over the entries the truth has (counted here
// from the seed's references), leaves the downstream ratio out and says why; on the complete
// truth there is no note.
func TestEvaluatePartialTruth(t *testing.T) {
	truth := holeyTruth(t)
	o := EvalOptions{References: 12, Fraction: 0.3, Seeds: []uint64{0, 1}, Methods: []Method{PartnerMean{}},
		Downstream: func(context.Context, *Data, *Result) (float64, error) {
			t.Error("downstream scored against a partial truth")
			return 1, nil
		}}
	ev, err := Evaluate(context.Background(), truth, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Notes) != 2 || !hasNote(ev.Notes, "lacks", "neither revealed nor scored") || !hasNote(ev.Notes, "downstream_ratio left out") {
		t.Errorf("notes %q", ev.Notes)
	}
	rep := ev.Methods[PartnerMean{}.Name()]
	var missing []float64 // per seed, the scored entries that were estimated
	for x, seed := range o.Seeds {
		h, err := Protocol(truth, o.References, o.Fraction, seed)
		if err != nil {
			t.Fatal(err)
		}
		isRef := make([]bool, len(truth.Jobs))
		for _, r := range h.References {
			isRef[r] = true
		}
		want, miss := 0, 0
		for w := range truth.Workers {
			for i := range truth.Jobs {
				for k := range truth.Jobs {
					if !(isRef[i] && isRef[k]) && truth.State[w][i][k] != table.Missing {
						want++
						if h.Partial.State[w][i][k] == table.Missing {
							miss++
						}
					}
				}
			}
		}
		if got := rep.PerSeed[x]; got.Entries != want || got.DownstreamRatio != nil {
			t.Errorf("seed %d: %d entries scored (want %d), downstream %v (want none)", seed, got.Entries, want, got.DownstreamRatio)
		}
		missing = append(missing, float64(miss))
	}
	// The estimated entries differ by seed (the measurements do): their count is the rounded mean.
	if missing[0] == missing[1] {
		t.Fatalf("both seeds estimated %v entries; the test wants them to differ", missing[0])
	}
	if want := int(math.Round((missing[0] + missing[1]) / 2)); rep.EstimatedOnly.Entries != want {
		t.Errorf("estimated-only entries %d, want %d (mean of %v)", rep.EstimatedOnly.Entries, want, missing)
	}

	o.Downstream = func(context.Context, *Data, *Result) (float64, error) { return 1, nil }
	if ev, err = Evaluate(context.Background(), gavelBlock(t), o); err != nil || ev.Notes != nil {
		t.Errorf("complete truth: notes %q, err %v; want none", ev.Notes, err)
	}
}
