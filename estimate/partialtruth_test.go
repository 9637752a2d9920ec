package estimate

import (
	"context"
	"math"
	"slices"
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

// On a partial truth the references come from the job types measured against each other
// fully, and a pair the truth lacks is never revealed: at P = 1 exactly the truth's pairs of a
// non-reference with a reference are.
func TestProtocolPartialTruth(t *testing.T) {
	truth := holeyTruth(t)
	cands := truth.References()
	if len(cands) < 12 || len(cands) == len(truth.Jobs) {
		t.Fatalf("%d reference candidates; the test wants at least 12 and not all", len(cands))
	}
	for seed := range uint64(4) {
		h, err := Protocol(truth, 12, 1, seed)
		if err != nil {
			t.Fatal(err)
		}
		isRef := make([]bool, len(truth.Jobs))
		for _, r := range h.References {
			isRef[r] = true
			if !slices.Contains(cands, r) {
				t.Errorf("seed %d: reference %d has a pair with another candidate missing", seed, r)
			}
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
	if _, err := Protocol(truth, len(cands)+1, 0.2, 0); err == nil {
		t.Errorf("R = %d with %d candidates: want an error", len(cands)+1, len(cands))
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

// Evaluate on a partial truth scores each seed over the entries the truth has (counted here
// from the seed's references), leaves the downstream ratio out and says why; on the complete
// truth there is no note.
func TestEvaluatePartialTruth(t *testing.T) {
	truth := holeyTruth(t)
	o := EvalOptions{References: 12, Fraction: 0.3, Seeds: []uint64{0, 1}, Methods: []Method{PartnerMean{}},
		Downstream: func(*Data, *Result) (float64, error) {
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
	var entries []float64
	for x, seed := range o.Seeds {
		h, err := Protocol(truth, o.References, o.Fraction, seed)
		if err != nil {
			t.Fatal(err)
		}
		isRef := make([]bool, len(truth.Jobs))
		for _, r := range h.References {
			isRef[r] = true
		}
		want := 0
		for w := range truth.Workers {
			for i := range truth.Jobs {
				for k := range truth.Jobs {
					if !(isRef[i] && isRef[k]) && truth.State[w][i][k] != table.Missing {
						want++
					}
				}
			}
		}
		if got := rep.PerSeed[x]; got.Entries != want || got.DownstreamRatio != nil {
			t.Errorf("seed %d: %d entries scored (want %d), downstream %v (want none)", seed, got.Entries, want, got.DownstreamRatio)
		}
		entries = append(entries, float64(want))
	}
	if want := int(math.Round((entries[0] + entries[1]) / 2)); rep.Entries != want {
		t.Errorf("mean entries %d, want %d", rep.Entries, want)
	}

	o.Downstream = func(*Data, *Result) (float64, error) { return 1, nil }
	if ev, err = Evaluate(context.Background(), gavelBlock(t), o); err != nil || ev.Notes != nil {
		t.Errorf("complete truth: notes %q, err %v; want none", ev.Notes, err)
	}
}
