package estimate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gavelkit/gavel/fingerprint"
	"github.com/gavelkit/gavel/table"
)

func gavelBlock(t *testing.T) *Data {
	t.Helper()
	blocks, _, err := Blocks(table.Default(), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 || blocks[0].Jobs[0].ScaleFactor != 1 {
		t.Fatal("no scale-factor-1 block")
	}
	return blocks[0]
}

func TestBlocksDedupeUnconsolidated(t *testing.T) {
	d := gavelBlock(t)
	if len(d.Jobs) != 26 {
		t.Errorf("%d sf=1 job types, want 26", len(d.Jobs))
	}
	// The *_unconsolidated types repeat the consolidated ones at sf=1 and must be dropped; the
	// data decides, so check that what is left has no two identical worker types.
	for v := range d.Workers {
		for w := v + 1; w < len(d.Workers); w++ {
			if d.sameWorker(v, w) {
				t.Errorf("worker types %s and %s are identical", d.Workers[v], d.Workers[w])
			}
		}
	}
	if len(d.Workers) != 3 {
		t.Errorf("worker types %v, want 3 distinct", d.Workers)
	}
	if d.Missing() != 0 {
		t.Errorf("%d missing entries in the complete table", d.Missing())
	}
}

func TestProtocol(t *testing.T) {
	truth := gavelBlock(t)
	h, err := Protocol(truth, 16, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.References) != 16 {
		t.Fatalf("%d references", len(h.References))
	}
	// P = 1 reveals every pair with a reference; only pairs of two non-references stay missing.
	wantMissing := len(truth.Workers) * 10 * 10
	if got := h.Partial.Missing(); got != wantMissing {
		t.Errorf("missing %d, want %d", got, wantMissing)
	}
	if got := h.Revealed; got != len(truth.Workers)*10*16 {
		t.Errorf("revealed %d, want %d", got, len(truth.Workers)*10*16)
	}
	if refs := h.Partial.References(); len(refs) != 16 {
		t.Errorf("References() found %d, want 16", len(refs))
	}
	for _, bad := range []struct {
		r int
		p float64
	}{{0, 0.2}, {26, 0.2}, {27, 0.2}, {16, 0}, {16, 1.5}} {
		if _, err := Protocol(truth, bad.r, bad.p, 0); err == nil {
			t.Errorf("Protocol(R=%d, P=%v): want an error", bad.r, bad.p)
		}
	}
}

func TestScorePerfectEstimate(t *testing.T) {
	truth := gavelBlock(t)
	r := newResult(truth)
	r.keepMeasured(truth)
	m := Score(truth, r, []int{0, 1, 2})
	if m.MAE != 0 || m.MAPE != 0 || m.PackingAgreement != 1 || m.InfeasiblePrecision != 1 || m.InfeasibleRecall != 1 {
		t.Errorf("perfect estimate scored %+v", m)
	}
	// 26² − 3² ordered entries per worker type.
	if want := len(truth.Workers) * (26*26 - 9); m.Entries != want {
		t.Errorf("entries %d, want %d", m.Entries, want)
	}
}

func TestScoreHandComputed(t *testing.T) {
	d := NewData([]string{"w"}, []table.JobType{{Model: "a", ScaleFactor: 1}, {Model: "b", ScaleFactor: 1}})
	d.Iso[0] = []float64{1, 1}
	set := func(i, k int, v float64) { d.Norm[0][i][k], d.State[0][i][k] = v, table.Measured }
	set(0, 0, 0.5)
	set(0, 1, 0.6)
	set(1, 0, 0.5)
	d.State[0][1][1] = table.Infeasible
	r := newResult(d)
	r.Norm[0][0][0], r.Norm[0][0][1], r.Norm[0][1][0] = 0.5, 0.3, 0.5 // (0,1) off by 0.3
	r.Infeasible[0][1][1] = false                                     // missed infeasible
	r.Norm[0][1][1] = 0.5
	m := Score(d, r, nil)
	// Feasible entries: (0,0) 0, (0,1) 0.3, (1,0) 0 → MAE 0.1, MAPE (0.3/0.6)/3.
	if math.Abs(m.MAE-0.1) > 1e-12 || math.Abs(m.MAPE-0.5/3) > 1e-12 {
		t.Errorf("MAE %v MAPE %v, want 0.1 and %v", m.MAE, m.MAPE, 0.5/3)
	}
	// Pairs: {0,0}: 1.0 vs 1.0 (no pack both); {0,1}: true 1.1 pack, est 0.8 no; {1,1} is
	// infeasible in the truth, so only infeasible recall sees it.
	if math.Abs(m.PackingAgreement-1.0/2) > 1e-12 || m.Pairs != 3 || m.ScoredPairs != 2 {
		t.Errorf("agreement %v over %d of %d pairs, want 1/2 over 2 of 3", m.PackingAgreement, m.ScoredPairs, m.Pairs)
	}
	if m.InfeasibleRecall != 0 || m.InfeasiblePrecision != 1 || m.PredictedInfeasible != 0 || m.TrueInfeasible != 1 {
		t.Errorf("infeasible precision %v over %d recall %v over %d, want 1 (none predicted) and 0 over 1",
			m.InfeasiblePrecision, m.PredictedInfeasible, m.InfeasibleRecall, m.TrueInfeasible)
	}

	// Predicting (0,1) infeasible gives it no rate: it leaves MAE, MAPE and agreement (where
	// its estimate of 0.3 was the only error) and is a false alarm.
	r.Infeasible[0][0][1] = true
	m = Score(d, r, nil)
	if m.MAE != 0 || m.MAPE != 0 || m.PackingAgreement != 1 || m.ScoredPairs != 1 {
		t.Errorf("with (0,1) predicted infeasible: MAE %v MAPE %v agreement %v over %d pairs, want 0, 0, 1 over 1",
			m.MAE, m.MAPE, m.PackingAgreement, m.ScoredPairs)
	}
	if m.InfeasiblePrecision != 0 || m.InfeasibleRecall != 0 || m.PredictedInfeasible != 1 || m.TrueInfeasible != 1 {
		t.Errorf("with (0,1) predicted infeasible: precision %v over %d recall %v over %d, want 0 over 1 and 0 over 1",
			m.InfeasiblePrecision, m.PredictedInfeasible, m.InfeasibleRecall, m.TrueInfeasible)
	}
	if m.ScoredEntries != 2 {
		t.Errorf("scored entries %d, want 2 ((0,0) and (1,0))", m.ScoredEntries)
	}

	// Everything called infeasible leaves nothing to score a rate or a decision on.
	for i := range r.Infeasible[0] {
		for k := range r.Infeasible[0][i] {
			r.Infeasible[0][i][k] = true
		}
	}
	if m = Score(d, r, nil); m.ScoredEntries != 0 || m.ScoredPairs != 0 || m.Entries != 4 || m.Pairs != 3 {
		t.Errorf("all predicted infeasible: %d of %d entries, %d of %d pairs scored; want 0 of 4, 0 of 3",
			m.ScoredEntries, m.Entries, m.ScoredPairs, m.Pairs)
	}
}

// With every job type a reference and everything measured, Gavel's estimator matches each job to
// itself and reproduces the table (Gavel's own test).
func TestGavelAllReferencesIsExact(t *testing.T) {
	truth := gavelBlock(t)
	r, err := Gavel{}.Estimate(context.Background(), truth)
	if err != nil {
		t.Fatal(err)
	}
	if m := Score(truth, r, nil); m.MAE != 0 || m.PackingAgreement != 1 {
		t.Errorf("scores %+v, want exact", m)
	}
}

// Gavel's estimator matches a job to the reference whose row its measurements follow (cosine)
// and copies that reference's rates: X measured as B is next to every reference, and Y as C,
// get B's and C's rates with each other and themselves.
func TestGavelMatchesAndCopiesReference(t *testing.T) {
	jobs := []table.JobType{{Model: "A", ScaleFactor: 1}, {Model: "B", ScaleFactor: 1}, {Model: "C", ScaleFactor: 1},
		{Model: "X", ScaleFactor: 1}, {Model: "Y", ScaleFactor: 1}}
	d := NewData([]string{"w"}, jobs)
	norm := [3][3]float64{{0.9, 0.5, 0.7}, {0.4, 0.8, 0.3}, {0.6, 0.6, 0.95}} // A, B, C next to A, B, C
	for i := range 3 {
		for k := range 3 {
			d.Norm[0][i][k], d.State[0][i][k] = norm[i][k], table.Measured
		}
	}
	const B, C, X, Y = 1, 2, 3, 4
	for job, like := range map[int]int{X: B, Y: C} {
		for k := range 3 {
			d.Norm[0][job][k], d.State[0][job][k] = norm[like][k], table.Measured
			d.Norm[0][k][job], d.State[0][k][job] = norm[k][like], table.Measured
		}
	}
	for i := range jobs {
		d.Iso[0][i] = 1
	}
	r, err := Gavel{Seed: 1}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct{ i, k, a, b int }{{X, X, B, B}, {Y, Y, C, C}, {X, Y, B, C}, {Y, X, C, B}} {
		if got := r.Norm[0][e.i][e.k]; got != norm[e.a][e.b] {
			t.Errorf("%s next to %s: %v, want %s's rate next to %s, %v", jobs[e.i].Model, jobs[e.k].Model, got,
				jobs[e.a].Model, jobs[e.b].Model, norm[e.a][e.b])
		}
	}
}

func TestMethodsBeatNothingOnHoldout(t *testing.T) {
	if testing.Short() {
		t.Skip("fits the model")
	}
	truth := gavelBlock(t)
	h, err := Protocol(truth, 16, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Metrics{}
	for _, m := range DefaultMethods(1) {
		r, err := m.Estimate(context.Background(), h.Partial)
		if err != nil {
			t.Fatal(err)
		}
		// Measured entries are kept exactly.
		for w := range truth.Workers {
			for _, i := range h.References {
				for _, k := range h.References {
					if r.Norm[w][i][k] != truth.Norm[w][i][k] && truth.State[w][i][k] == table.Measured {
						t.Fatalf("%s changed a measured entry", m.Name())
					}
				}
			}
		}
		got[m.Name()] = Score(truth, r, h.References)
	}
	// Loose bounds that any working estimator meets (measured: ours ≈ 9-10%, others 16-20%).
	if got["als"].MAPE > 0.2 || got["als"].MAPE >= got["partner_mean"].MAPE {
		t.Errorf("MAPE als %.3f partner_mean %.3f: want als ≤ 0.2 and below partner_mean", got["als"].MAPE, got["partner_mean"].MAPE)
	}
	if got["ours"].MAPE > 0.13 || got["ours"].MAPE >= got["gavel"].MAPE || got["ours"].MAPE >= got["partner_mean"].MAPE {
		t.Errorf("MAPE ours %.3f gavel %.3f partner_mean %.3f: want ours ≤ 0.13 and best", got["ours"].MAPE, got["gavel"].MAPE, got["partner_mean"].MAPE)
	}
}

func TestTableFillsMissingAndReports(t *testing.T) {
	full := table.Default().Select(nil, []string{"k80", "p100", "v100"})
	jobs := full.JobTypesWithScaleFactor(1)
	partial := full.Select(jobs, []string{"k80", "p100", "v100"})
	// Jobs 0-9 are references; drop every pair of jobs 10+ except their pairs with job 0.
	for _, w := range partial.WorkerTypes() {
		for i := 10; i < len(jobs); i++ {
			for k := 1; k < len(jobs); k++ {
				partial.DeletePair(w, jobs[i], jobs[k])
			}
		}
	}
	out, rep, err := Table(context.Background(), partial, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Missing ordered entries: per worker type, 16 jobs × 25 partners (all but job 0) counted from
	// both sides, minus double counting of pairs among the 16: 16·25·2 − 16·15 − ... computed here.
	missing := 0
	for i := 0; i < len(jobs); i++ {
		for k := 0; k < len(jobs); k++ {
			if (i >= 10 && k != 0) || (k >= 10 && i != 0) {
				missing++
			}
		}
	}
	if want := 3 * missing; rep.Estimated != want {
		t.Errorf("estimated %d entries, want %d", rep.Estimated, want)
	}
	if len(rep.Entries) != rep.Estimated {
		t.Errorf("%d listed entries for %d estimated", len(rep.Entries), rep.Estimated)
	}
	n := 0
	for _, e := range rep.Entries {
		if e.Infeasible {
			n++
		}
	}
	if n != rep.InfeasiblePredicted {
		t.Errorf("infeasible_predicted %d, list has %d", rep.InfeasiblePredicted, n)
	}
	for _, w := range out.WorkerTypes() {
		for _, a := range jobs {
			for _, b := range jobs {
				if _, _, s := out.Pair(w, a, b); s == table.Missing {
					t.Fatalf("%s %v %v still missing", w, a, b)
				}
			}
		}
	}
	// Measured entries are unchanged.
	ra, rb, _ := full.Pair("v100", jobs[12], jobs[0])
	ea, eb, _ := out.Pair("v100", jobs[12], jobs[0])
	if ra != ea || rb != eb {
		t.Errorf("measured pair changed: %v,%v → %v,%v", ra, rb, ea, eb)
	}
	// Each listed entry is what the table holds, on the job's side: its normalized rate times
	// the job's isolated rate, within [0.02, 1] as the README says.
	for _, e := range rep.Entries {
		a, b := table.JobType{Model: e.Job, ScaleFactor: e.ScaleFactor}, table.JobType{Model: e.Partner, ScaleFactor: e.ScaleFactor}
		rateA, _, s := out.Pair(e.WorkerType, a, b)
		iso, _ := out.Isolated(e.WorkerType, a)
		switch {
		case e.Infeasible:
			if s != table.Infeasible {
				t.Fatalf("%+v: the table holds state %v", e, s)
			}
		case s != table.Measured || math.Abs(rateA-e.Normalized*iso) > 1e-9*iso || rateA != e.Rate:
			t.Fatalf("%+v: the table holds %v for the job (isolated %v)", e, rateA, iso)
		case e.Normalized < 0.02 || e.Normalized > 1:
			t.Fatalf("%+v: normalized rate outside [0.02, 1]", e)
		}
	}
}

func TestTableUnchangedWhenComplete(t *testing.T) {
	full := table.Default().Select(nil, []string{"k80", "p100", "v100"})
	out, rep, err := Table(context.Background(), full, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Estimated != 0 || len(rep.Notes) == 0 || !out.Equal(full) {
		t.Errorf("complete table: estimated %d, notes %v, equal %v", rep.Estimated, rep.Notes, out.Equal(full))
	}
}

func TestTableNeedsReferences(t *testing.T) {
	full := table.Default().Select(nil, []string{"v100"})
	jobs := full.JobTypesWithScaleFactor(1)
	for _, a := range jobs {
		full.DeletePair("v100", a, a) // no job is measured with itself
	}
	if _, _, err := Table(context.Background(), full, Options{}); !errors.Is(err, ErrNoReference) {
		t.Errorf("err = %v, want ErrNoReference", err)
	}
}

func TestSuggest(t *testing.T) {
	truth := gavelBlock(t)
	h, _ := Protocol(truth, 16, 0.2, 0)
	r, err := Pairwise{Seed: 0}.Estimate(context.Background(), h.Partial)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Suggest(h.Partial, r, -1, AimBalanced); err == nil {
		t.Error("negative budget: want an error")
	}
	if ms, _ := Suggest(h.Partial, r, 0, AimBalanced); len(ms) != 0 {
		t.Errorf("budget 0 gave %d", len(ms))
	}
	ms, _ := Suggest(h.Partial, r, 40, AimBalanced)
	if len(ms) != 40 {
		t.Fatalf("%d suggestions, want 40", len(ms))
	}
	again, _ := Suggest(h.Partial, r, 40, AimBalanced)
	for x := range ms {
		if ms[x] != again[x] {
			t.Fatalf("Suggest is not deterministic at %d: %+v vs %+v", x, ms[x], again[x])
		}
	}
	seen := map[[3]int]bool{}
	for _, m := range ms {
		if h.Partial.State[m.W][m.I][m.K] != table.Missing && h.Partial.State[m.W][m.K][m.I] != table.Missing {
			t.Errorf("suggested a measured pair %+v", m)
		}
		key := [3]int{m.W, min(m.I, m.K), max(m.I, m.K)}
		if seen[key] {
			t.Errorf("pair suggested twice: %+v", m)
		}
		seen[key] = true
		if m.Reason == "" {
			t.Errorf("no reason: %+v", m)
		}
	}
}

func TestActiveSpendsBudget(t *testing.T) {
	truth := gavelBlock(t)
	h, _ := Protocol(truth, 16, 0.2, 0)
	base := onlyReferences(h.Partial, h.References)
	got := map[Aim][]*Data{}
	for _, c := range []struct {
		batches int
		aim     Aim
	}{{2, AimBalanced}, {0, AimBalanced}, {2, AimDecisions}} {
		d, err := Active(context.Background(), truth, base, Pairwise{}, 30, c.batches, c.aim)
		if err != nil {
			t.Fatal(err)
		}
		// Exactly 30 unordered pairs become known, each with both jobs' entries, as in the
		// random protocol.
		pairs := 0
		for w := range d.State {
			for i := range d.State[w] {
				for k := i; k < len(d.State[w]); k++ {
					if base.State[w][i][k] == table.Missing && d.State[w][i][k] != table.Missing {
						pairs++
					}
					if (d.State[w][i][k] == table.Missing) != (d.State[w][k][i] == table.Missing) {
						t.Errorf("%+v: (%d, %d, %d) known in one direction only", c, w, i, k)
					}
				}
			}
		}
		if pairs != 30 {
			t.Errorf("%+v: %d pairs measured for a budget of 30", c, pairs)
		}
		got[c.aim] = append(got[c.aim], d)
	}
	if slices.EqualFunc(got[AimBalanced][0].State, got[AimDecisions][0].State, func(a, b [][]table.State) bool {
		return slices.EqualFunc(a, b, slices.Equal)
	}) {
		t.Error("the decisions aim measured the same pairs as balanced: the aim is not used")
	}
}

// With a budget above what the decisions aim will suggest, SuggestTable says how many missing
// pairs it left out as predicted infeasible: they and the picks are all the missing pairs.
func TestSuggestTableDecisionsNotesInfeasible(t *testing.T) {
	h, err := Protocol(gavelBlock(t), 16, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	missing := 0
	for w := range h.Partial.State {
		for i := range h.Partial.State[w] {
			for k := i; k < len(h.Partial.State[w]); k++ {
				if h.Partial.State[w][i][k] == table.Missing {
					missing++
				}
			}
		}
	}
	ms, notes, err := SuggestTable(context.Background(), ToTable(h.Partial, nil), 5000, Options{Seed: 1, Aim: AimDecisions})
	if err != nil {
		t.Fatal(err)
	}
	var left int
	for _, n := range notes {
		if strings.Contains(n, "predicted infeasible not suggested (aim decisions)") {
			if _, err := fmt.Sscanf(n[strings.Index(n, ": ")+2:], "%d", &left); err != nil {
				t.Fatalf("note %q: %v", n, err)
			}
		}
	}
	if left == 0 || len(ms)+left != missing {
		t.Errorf("%d picks and %d left out as infeasible (notes %q), want %d missing pairs in all, some left out", len(ms), left, notes, missing)
	}
	if !hasNote(notes, fmt.Sprintf("budget 5000: only %d pairs to suggest; all are", len(ms))) {
		t.Errorf("notes %q: want one saying the budget was not filled", notes)
	}
	// A budget the picks fill has no such note.
	if _, notes, err = SuggestTable(context.Background(), ToTable(h.Partial, nil), len(ms), Options{Seed: 1, Aim: AimDecisions}); err != nil || hasNote(notes, "pairs to suggest") {
		t.Errorf("budget %d: notes %q (err %v), want no unfilled-budget note", len(ms), notes, err)
	}
}

// Coverage comes first: a job nobody has measured beyond the references gets picked before
// anything else, against a reference.
func TestSuggestCoversUnmeasuredJob(t *testing.T) {
	truth := gavelBlock(t)
	h, _ := Protocol(truth, 16, 1, 0) // every non-reference fully measured against references
	d := h.Partial
	var lone int
	for i := range d.Jobs {
		if !slicesContains(h.References, i) {
			lone = i
			break
		}
	}
	for w := range d.Workers {
		for _, k := range h.References {
			d.State[w][lone][k], d.State[w][k][lone] = table.Missing, table.Missing
		}
	}
	r, err := Pairwise{}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := Suggest(d, r, 3, AimBalanced)
	for _, m := range ms {
		if m.I != lone && m.K != lone {
			t.Errorf("suggested %+v, want pairs with the unmeasured job %d", m, lone)
		}
		if m.Reason != ReasonCoverage {
			t.Errorf("reason %q, want %q", m.Reason, ReasonCoverage)
		}
	}
}

func slicesContains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// Bootstrap fits and the cross-validated sum error add uncertainty without changing the
// estimate: the mean is over the fits on all the data either way.
func TestPairwiseCalibrationKeepsEstimate(t *testing.T) {
	truth := gavelBlock(t)
	h, _ := Protocol(truth, 16, 0.2, 3)
	plain, err := Pairwise{Seed: 3}.Estimate(context.Background(), h.Partial)
	if err != nil {
		t.Fatal(err)
	}
	cal, err := Pairwise{Seed: 3, Bootstrap: 4, Calibrate: 3}.Estimate(context.Background(), h.Partial)
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.SumError) != len(truth.Workers) || plain.SumError != nil {
		t.Fatalf("SumError %v (plain %v), want one per worker type only when calibrated", cal.SumError, plain.SumError)
	}
	for w, e := range cal.SumError {
		// At least the prior's share, and far below the range of a sum (0 to 2).
		if !(e >= sumErrorPrior/math.Sqrt(float64(h.Revealed+1)) && e < 1) {
			t.Errorf("worker %d: sum error %v", w, e)
		}
	}
	spread := false
	for w := range truth.Workers {
		for i := range truth.Jobs {
			for k := range truth.Jobs {
				if plain.Norm[w][i][k] != cal.Norm[w][i][k] {
					t.Fatalf("(%d,%d,%d): estimate %v with calibration, %v without", w, i, k, cal.Norm[w][i][k], plain.Norm[w][i][k])
				}
				if h.Partial.State[w][i][k] == table.Missing && cal.Spread[w][i][k] > plain.Spread[w][i][k] {
					spread = true
				}
			}
		}
	}
	if !spread {
		t.Error("bootstrap fits widened no spread")
	}
}

// With a calibrated sum error, the pair whose estimated sum sits on 1 is the most likely to
// have its packing decision wrong and is picked before pairs far from the line; a job with
// nothing known on a worker type comes first of all.
func TestSuggestCalibratedRanksByFlip(t *testing.T) {
	jobs := []table.JobType{{Model: "a", ScaleFactor: 1}, {Model: "b", ScaleFactor: 1}, {Model: "c", ScaleFactor: 1}}
	d := NewData([]string{"x"}, jobs)
	for i := range jobs {
		d.Iso[0][i] = 1
	}
	// a is known with itself and with b; c only with a.
	for _, p := range [][2]int{{0, 0}, {0, 1}, {0, 2}} {
		d.State[0][p[0]][p[1]], d.State[0][p[1]][p[0]] = table.Measured, table.Measured
	}
	r := newResult(d)
	r.SumError = []float64{0.05}
	set := func(i, k int, a, b float64) { r.Norm[0][i][k], r.Norm[0][k][i] = a, b }
	set(1, 1, 0.45, 0.45) // sum 0.9: two sigmas from the line
	set(1, 2, 0.49, 0.51) // sum 1.0: on the line
	set(2, 2, 0.8, 0.8)   // sum 1.6
	ms, err := Suggest(d, r, 3, AimBalanced)
	if err != nil {
		t.Fatal(err)
	}
	got := [][2]int{}
	for _, m := range ms {
		got = append(got, [2]int{m.I, m.K})
	}
	want := [][2]int{{1, 2}, {1, 1}, {2, 2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("picked %v, want %v", got, want)
	}
	if p := ms[0].Score; math.Abs(p-0.5) > 1e-9 {
		t.Errorf("flip probability on the line %v, want 0.5", p)
	}
	// Now b has nothing known: its pairs come first.
	d.State[0][0][1], d.State[0][1][0] = table.Missing, table.Missing
	set(0, 1, 0.3, 0.3)
	ms, _ = Suggest(d, r, 1, AimBalanced)
	if m := ms[0]; m.I != 1 && m.K != 1 || m.Reason != ReasonCoverage {
		t.Errorf("first pick %+v, want a pair with the unmeasured job b (coverage)", m)
	}
}

func TestEvaluateStopsWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Evaluate(ctx, gavelBlock(t), EvalOptions{References: 16, Fraction: 0.2, Seeds: []uint64{0},
		Methods: []Method{PartnerMean{}}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: err %v, want context.Canceled", err)
	}
}

// Every estimator, and the table-level calls built on them, give up with ctx's error rather
// than return an estimate computed in part.
func TestEstimatorsStopWhenCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h, err := Protocol(gavelBlock(t), 16, 0.2, 0)
	if err != nil {
		t.Fatal(err)
	}
	methods := append(DefaultMethods(0), Pairwise{Calibrate: 3, Bootstrap: 2})
	for _, m := range methods {
		if r, err := m.Estimate(ctx, h.Partial); !errors.Is(err, context.Canceled) || r != nil {
			t.Errorf("%s: canceled context: result %v, err %v; want nil, context.Canceled", m.Name(), r != nil, err)
		}
	}
	partial := table.Default().Select(nil, h.Partial.Workers)
	for w, wt := range h.Partial.Workers {
		for i, a := range h.Partial.Jobs {
			for k, b := range h.Partial.Jobs {
				if h.Partial.State[w][i][k] == table.Missing {
					partial.DeletePair(wt, a, b)
				}
			}
		}
	}
	if _, _, err := Table(ctx, partial, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Table: err %v, want context.Canceled", err)
	}
	if _, _, err := SuggestTable(ctx, partial, 3, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("SuggestTable: err %v, want context.Canceled", err)
	}
	if _, err := Active(ctx, gavelBlock(t), h.Partial, Pairwise{}, 10, 2, AimBalanced); !errors.Is(err, context.Canceled) {
		t.Errorf("Active: err %v, want context.Canceled", err)
	}
}

func TestEvaluateAndSuggestRejectBadInput(t *testing.T) {
	truth := gavelBlock(t)
	n := len(truth.Jobs)
	for _, tt := range []struct {
		r    int
		p    float64
		want string
	}{
		{0, 0.2, "references 0"}, {n, 0.2, fmt.Sprintf("references %d", n)}, {n + 1, 0.2, fmt.Sprintf("references %d", n+1)},
		{16, 0, "fraction 0"}, {16, -0.1, "fraction -0.1"}, {16, 1.5, "fraction 1.5"},
	} {
		_, err := Evaluate(context.Background(), truth, EvalOptions{References: tt.r, Fraction: tt.p, Seeds: []uint64{0},
			Methods: []Method{PartnerMean{}}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("R=%d, P=%v: err %v, want one naming %q", tt.r, tt.p, err, tt.want)
		}
	}
	if _, err := Evaluate(context.Background(), truth, EvalOptions{References: 16, Fraction: 0.2, Seeds: []uint64{3, 1, 3},
		Methods: []Method{PartnerMean{}}}); err == nil || !strings.Contains(err.Error(), "seed 3 given twice") {
		t.Errorf("seeds 3, 1, 3: err %v, want one naming seed 3", err)
	}
	// A nil method panicked; two of one name were merged into one report.
	for _, ms := range [][]Method{{PartnerMean{}, nil}, {PartnerMean{}, PartnerMean{}}} {
		if _, err := Evaluate(context.Background(), truth, EvalOptions{References: 16, Fraction: 0.2, Seeds: []uint64{0},
			Methods: ms}); err == nil || !strings.Contains(err.Error(), "method 1") {
			t.Errorf("methods %v: err %v, want one naming method 1", ms, err)
		}
	}
	if _, _, err := SuggestTable(context.Background(), table.Default(), -1, Options{}); err == nil || !strings.Contains(err.Error(), "budget -1") {
		t.Errorf("budget -1: err %v, want one naming the budget", err)
	}
}

// TestPriorNeighbors checks the prior's matching against distances computed through the
// fingerprint package: a job with measurements by fingerprint distance plus isoWeight times the
// isolated-rate profile distance (fingerprint.ColdStart's), a job without any by the profile
// alone; references get no mix.
func TestPriorNeighbors(t *testing.T) {
	truth := gavelBlock(t)
	h, _ := Protocol(truth, 16, 0.2, 4)
	d := h.Partial
	refs := d.References()
	isRef := map[int]bool{}
	for _, r := range refs {
		isRef[r] = true
	}
	cold := -1 // a non-reference job made unmeasured
	for i := range d.Jobs {
		if !isRef[i] {
			cold = i
			break
		}
	}
	for w := range d.Workers {
		for k := range d.Jobs {
			d.State[w][cold][k], d.State[w][k][cold] = table.Missing, table.Missing
		}
	}
	W := len(d.Workers)
	iso := func(i int) []float64 {
		out := make([]float64, W)
		for w := range out {
			out[w] = d.Iso[w][i]
		}
		return out
	}
	refIso := make([][]float64, len(refs))
	refRows := make([][]float64, len(refs))
	for a, r := range refs {
		refIso[a], refRows[a] = iso(r), fingerprintRow(d, refs, r)
	}
	got := priorNeighbors(d, refs, 2, -1)
	for i := range d.Jobs {
		if isRef[i] {
			if got[i] != nil {
				t.Errorf("reference %d has a mix %v", i, got[i])
			}
			continue
		}
		prof, err := fingerprint.ColdStart(iso(i), refIso, fingerprint.Settings{K: len(refs)})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float64, len(refs))
		for _, nb := range prof.Neighbors {
			want[nb.Index] = nb.Distance
		}
		row := fingerprintRow(d, refs, i)
		anyShared := false
		for a := range refs {
			if fd, cnt := fingerprint.MeanAbsLog.Between(row, refRows[a]); cnt > 0 {
				want[a] = fd + isoWeight*want[a]
				anyShared = true
			} else if i != cold {
				want[a] = math.Inf(1)
			}
		}
		if i == cold && anyShared {
			t.Fatalf("job %d still shares entries", cold)
		}
		if len(got[i]) != 2 {
			t.Fatalf("job %d: %d neighbours, want 2", i, len(got[i]))
		}
		sum := 0.0
		for _, nb := range got[i] {
			sum += nb.Weight
			if math.Abs(nb.Distance-want[nb.Index]) > 1e-12 {
				t.Errorf("job %d: reference %d at %.6f, want %.6f", i, nb.Index, nb.Distance, want[nb.Index])
			}
			for a, dist := range want {
				if dist < nb.Distance-1e-12 && a != got[i][0].Index && a != got[i][1].Index {
					t.Errorf("job %d: reference %d (%.4f) is nearer than chosen %d (%.4f)", i, a, dist, nb.Index, nb.Distance)
				}
			}
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("job %d: weights sum to %v", i, sum)
		}
	}
}

// TestPriorNeighborsOnWorkerType checks the per-worker-type matching of the prior: distances
// from the entries on that worker type alone (fingerprintRow's slice for it, compared through
// the fingerprint package) plus isoWeight times the profile distance; the two nearest chosen;
// nil for a job sharing no entry with a reference on that type (made so, or infeasible there
// next to every reference), and for references.
func TestPriorNeighborsOnWorkerType(t *testing.T) {
	truth := gavelBlock(t)
	h, _ := Protocol(truth, 16, 0.2, 4)
	d := h.Partial
	refs := d.References()
	R := len(refs)
	isRef := map[int]bool{}
	for _, r := range refs {
		isRef[r] = true
	}
	emptied := -1 // a non-reference job left without entries on worker type 0
	for i := range d.Jobs {
		if !isRef[i] {
			emptied = i
			break
		}
	}
	for k := range d.Jobs {
		d.State[0][emptied][k], d.State[0][k][emptied] = table.Missing, table.Missing
	}
	for w := range d.Workers {
		got := priorNeighbors(d, refs, 2, w)
		for i := range d.Jobs {
			if isRef[i] || (w == 0 && i == emptied) {
				if got[i] != nil {
					t.Errorf("worker type %d: job %d (reference or without entries there) has a mix %v", w, i, got[i])
				}
				continue
			}
			row := fingerprintRow(d, refs, i)[2*R*w : 2*R*(w+1)]
			want := make([]float64, R)
			for a, r := range refs {
				want[a] = math.Inf(1)
				if fd, cnt := fingerprint.MeanAbsLog.Between(row, fingerprintRow(d, refs, r)[2*R*w:2*R*(w+1)]); cnt > 0 {
					want[a] = fd + isoWeight*profileDistance(d, i, r)
				}
			}
			shared := 0
			for _, dist := range want {
				if !math.IsInf(dist, 1) {
					shared++
				}
			}
			if len(got[i]) != min(2, shared) {
				t.Fatalf("worker type %d: job %d: %d neighbours, want %d", w, i, len(got[i]), min(2, shared))
			}
			chosen := map[int]bool{}
			for _, nb := range got[i] {
				chosen[nb.Index] = true
			}
			for _, nb := range got[i] {
				if math.Abs(nb.Distance-want[nb.Index]) > 1e-12 {
					t.Errorf("worker type %d: job %d: reference %d at %.6f, want %.6f", w, i, nb.Index, nb.Distance, want[nb.Index])
				}
				for a, dist := range want {
					if dist < nb.Distance-1e-12 && !chosen[a] {
						t.Errorf("worker type %d: job %d: reference %d (%.4f) is nearer than chosen %d (%.4f)", w, i, a, dist, nb.Index, nb.Distance)
					}
				}
			}
		}
	}
}

// TestPairwiseCautionLowersBySpread: with Caution c, every estimated entry not at a clamp is the
// uncautious estimate lowered by c ensemble standard deviations (Spread, without bootstrap
// members) in log space; measured entries stay as measured.
func TestPairwiseCautionLowersBySpread(t *testing.T) {
	truth := gavelBlock(t)
	h, _ := Protocol(truth, 16, 0.2, 6)
	d := h.Partial
	plain, err := Pairwise{Seed: 6, Neighbors: -1, Caution: -1}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	const c = 2
	cautious, err := Pairwise{Seed: 6, Neighbors: -1, Caution: c}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	checked, lowered := 0, 0
	for w := range d.Workers {
		for i := range d.Jobs {
			for k := range d.Jobs {
				p, q := plain.Norm[w][i][k], cautious.Norm[w][i][k]
				if d.State[w][i][k] == table.Measured {
					if p != d.Norm[w][i][k] || q != d.Norm[w][i][k] {
						t.Fatalf("measured entry (%d, %d, %d) changed: %v, %v, measured %v", w, i, k, p, q, d.Norm[w][i][k])
					}
					continue
				}
				if d.State[w][i][k] != table.Missing || p >= 1 || p <= floorNorm || q <= floorNorm {
					continue
				}
				want := math.Log(p) - c*plain.Spread[w][i][k]
				if math.Abs(math.Log(q)-want) > 1e-9 {
					t.Fatalf("entry (%d, %d, %d): log %.6f, want %.6f (plain %.6f, spread %.6f)", w, i, k, math.Log(q), want, math.Log(p), plain.Spread[w][i][k])
				}
				checked++
				if q < p {
					lowered++
				}
			}
		}
	}
	if checked == 0 || lowered == 0 {
		t.Errorf("%d entries checked, %d lowered; want some of each", checked, lowered)
	}
}

// The Neighbors estimate is mixed in log space with its weight: log(mixed) = (1 − α)·log(plain)
// + α·log(neighbors) on every estimated entry the clamps to [0.02, 1] leave alone.
func TestPairwiseMixesNeighbors(t *testing.T) {
	truth := gavelBlock(t)
	h, _ := Protocol(truth, 16, 0.2, 6)
	d := h.Partial
	const alpha = 0.5
	plain, err := Pairwise{Seed: 6, Neighbors: -1, Caution: -1}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	mixed, err := Pairwise{Seed: 6, Neighbors: alpha, Caution: -1}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := Neighbors{K: 3, Distance: fingerprint.MeanAbsLog}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for w := range d.Workers {
		for i := range d.Jobs {
			for k := range d.Jobs {
				p, q, n := plain.Norm[w][i][k], mixed.Norm[w][i][k], nb.Norm[w][i][k]
				if d.State[w][i][k] != table.Missing || nb.Infeasible[w][i][k] || p >= 1 || p <= floorNorm || q >= 1 || q <= floorNorm {
					continue
				}
				if want := (1-alpha)*math.Log(p) + alpha*math.Log(n); math.Abs(math.Log(q)-want) > 1e-9 {
					t.Fatalf("entry (%d, %d, %d): log %.6f, want %.6f (plain %.6f, neighbors %.6f)", w, i, k, math.Log(q), want, p, n)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Error("no entry checked")
	}
}

// errAfter is a context whose Err reports cancellation from its n-th call on, so a test can
// cancel between the fits of one estimate or within one. The ensemble's fits run concurrently
// and each checks its context, so the count is atomic.
type errAfter struct {
	context.Context
	n     int64
	calls atomic.Int64
}

func (c *errAfter) Err() error {
	if c.calls.Add(1) >= c.n {
		return context.Canceled
	}
	return nil
}

// Cancelled at any of its checks, ours returns no estimate at all. Every fit checks its context
// once per iteration, so an estimate makes well over a thousand checks: the test cancels at the
// first few (before and between the fits), at evenly spaced ones (within the ensemble's and the
// calibration's fits) and at the last.
func TestPairwiseStopsWhenCancelled(t *testing.T) {
	h, err := Protocol(gavelBlock(t), 16, 0.2, 0)
	if err != nil {
		t.Fatal(err)
	}
	m := Pairwise{Seed: 1, Calibrate: 2}
	full := &errAfter{Context: context.Background(), n: 1 << 30}
	if _, err := m.Estimate(full, h.Partial); err != nil {
		t.Fatal(err)
	}
	calls := full.calls.Load()
	var at []int64
	for n := int64(1); n <= min(8, calls); n++ {
		at = append(at, n)
	}
	for x := int64(1); x <= 16; x++ {
		at = append(at, max(9, x*calls/17))
	}
	at = append(at, calls)
	for _, n := range at {
		r, err := m.Estimate(&errAfter{Context: context.Background(), n: n}, h.Partial)
		if !errors.Is(err, context.Canceled) || r != nil {
			t.Errorf("canceled at check %d of %d: result %v, err %v; want nil, context.Canceled", n, calls, r != nil, err)
		}
	}
}

// The calibration folds run concurrently; the errors must not depend on how many run at once
// (they are added up in fold order).
func TestPairwiseCVErrorsIndependentOfParallelism(t *testing.T) {
	truth := gavelBlock(t)
	h, err := Protocol(truth, 16, 0.2, 4)
	if err != nil {
		t.Fatal(err)
	}
	p := Pairwise{Seed: 4, Calibrate: 5}
	prev := runtime.GOMAXPROCS(1)
	serial, serialEntry, err := p.cvErrors(context.Background(), h.Partial)
	runtime.GOMAXPROCS(4)
	parallel, parallelEntry, err2 := p.cvErrors(context.Background(), h.Partial)
	runtime.GOMAXPROCS(prev)
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	if !slices.Equal(serial, parallel) || !slices.Equal(serialEntry, parallelEntry) {
		t.Errorf("sum error with 1 CPU %v, with 4 %v; entry error %v, %v", serial, parallel, serialEntry, parallelEntry)
	}
}

// A downstream ratio of 0 (an allocation that leaves a job with nothing, the case the ratio is
// there to catch) is written per seed and in the mean; without a downstream score the field is
// null everywhere (the contract names it: a reader of methods.ours.downstream_ratio finds it),
// and in the estimated-only metrics it is always null.
func TestEvaluateWritesZeroDownstream(t *testing.T) {
	truth := gavelBlock(t)
	for _, tc := range []struct {
		name       string
		downstream func(context.Context, *Data, *Result) (float64, error)
		want       int // zero "downstream_ratio"s in the JSON: mean, std, two seeds
	}{
		{"zero", func(context.Context, *Data, *Result) (float64, error) { return 0, nil }, 4},
		{"none", nil, 0},
	} {
		ev, err := Evaluate(context.Background(), truth, EvalOptions{References: 16, Fraction: 0.2, Seeds: []uint64{0, 1},
			Methods: []Method{PartnerMean{}}, Downstream: tc.downstream})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(b), `"downstream_ratio":0`); got != tc.want || strings.Count(string(b), `"downstream_ratio":null`) != 5-tc.want {
			t.Errorf("%s: %d zero downstream ratios in %s, want %d", tc.name, got, b, tc.want)
		}
	}
}

// A rate Read would refuse is named up front: a NaN failed deep in the fit ("observation 63
// (1, 4, 0) is NaN"), and a negative rate was estimated from and written back.
func TestTableRefusesBadValues(t *testing.T) {
	a, b := table.JobType{Model: "ResNet-18 (batch size 16)", ScaleFactor: 1}, table.JobType{Model: "A3C", ScaleFactor: 1}
	for _, tc := range []struct {
		rate float64
		want error
	}{{math.NaN(), table.ErrNotFinite}, {-1, table.ErrNegativeRate}} {
		tb := table.Default()
		tb.SetPair("k80", a, b, tc.rate, 1)
		_, _, err := Table(context.Background(), tb, Options{})
		if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), `worker type "k80"`) {
			t.Errorf("rate %v: %v, want %v naming the entry", tc.rate, err, tc.want)
		}
		if _, _, err := SuggestTable(context.Background(), tb, 3, Options{}); !errors.Is(err, tc.want) {
			t.Errorf("SuggestTable, rate %v: %v, want %v", tc.rate, err, tc.want)
		}
	}
}

// An empty block or worker selection is an error: ALS panicked inside gonum, and a non-nil
// empty Options.Workers estimated nothing with a garbled note.
func TestEmptyInputsAreErrors(t *testing.T) {
	if _, err := (ALS{}).Estimate(context.Background(), NewData(nil, nil)); err == nil || !strings.Contains(err.Error(), "nothing to complete") {
		t.Errorf("ALS on an empty block: %v", err)
	}
	if _, _, err := Table(context.Background(), table.Default(), Options{Workers: []string{}}); err == nil || !strings.Contains(err.Error(), "no worker types selected") {
		t.Errorf("Table with Workers []: %v", err)
	}
}

// Suggest with an estimate of another block named pairs from it, without an error.
func TestSuggestRefusesEstimateOfAnotherBlock(t *testing.T) {
	truth := gavelBlock(t)
	partial, r := partnerMeanHoldout(t, truth)
	if _, err := Suggest(partial, r, 3, AimBalanced); err != nil {
		t.Fatalf("same block: %v", err)
	}
	other := NewData(truth.Workers[:1], truth.Jobs)
	if _, err := Suggest(other, r, 3, AimBalanced); err == nil || !strings.Contains(err.Error(), "not of this block") {
		t.Errorf("another block: %v, want an error", err)
	}
}

// partnerMeanHoldout returns the partial table of Gavel's protocol on truth (R = 16, P = 0.2,
// seed 0) and the partner-mean estimate of it.
func partnerMeanHoldout(t *testing.T, truth *Data) (*Data, *Result) {
	t.Helper()
	h, err := Protocol(truth, 16, 0.2, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := PartnerMean{}.Estimate(context.Background(), h.Partial)
	if err != nil {
		t.Fatal(err)
	}
	return h.Partial, r
}

// A rate undefined on a seed (its denominator 0: every pair of the seed measured, nothing
// predicted infeasible) is left out of the mean, not averaged in as Score's 0 or 1.
func TestMeanStdSkipsUndefinedRates(t *testing.T) {
	defined := Metrics{MAE: 0.1, MAPE: 0.2, RawMAPE: 0.2, PackingAgreement: 1, InfeasiblePrecision: 0.5, InfeasibleRecall: 1,
		ScoredEntries: 6, apeEntries: 6, ScoredPairs: 3, PredictedInfeasible: 2, TrueInfeasible: 1}
	undefined := Metrics{InfeasiblePrecision: 1, InfeasibleRecall: 1} // Score's values with nothing to score
	mean, std := meanStd([]Metrics{defined, undefined})
	if mean.MAE != 0.1 || mean.MAPE != 0.2 || mean.RawMAPE != 0.2 || mean.PackingAgreement != 1 ||
		mean.InfeasiblePrecision != 0.5 || mean.InfeasibleRecall != 1 || std.PackingAgreement != 0 {
		t.Errorf("mean %+v, std %+v: want the defined seed's rates, no spread", mean, std)
	}
	// The counts are means over the seeds that have some: a rate with a mean has a count.
	if mean.ScoredPairs != 3 || mean.PredictedInfeasible != 2 || mean.TrueInfeasible != 1 {
		t.Errorf("counts %d, %d, %d, want those of the defined seed: 3, 2, 1", mean.ScoredPairs, mean.PredictedInfeasible, mean.TrueInfeasible)
	}
	// Undefined everywhere: Score's convention stays.
	if mean, _ = meanStd([]Metrics{undefined, undefined}); mean.PackingAgreement != 0 || mean.InfeasiblePrecision != 1 {
		t.Errorf("nothing defined: %+v, want agreement 0 and precision 1", mean)
	}
}
