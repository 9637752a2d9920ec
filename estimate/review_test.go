package estimate

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/completion"
	"github.com/gavelkit/gavel/table"
)

// withInfeasibleBlock is the seed-3 partial table of partialOf plus the scale-factor-2 job types
// of Gavel's table, whose every pair is infeasible, with their references' pairs (the first
// three) measured and every other pair among them missing, but for the last job's, which knows
// none on v100.
func withInfeasibleBlock(t *testing.T) *table.Table {
	t.Helper()
	full := gavel3()
	out := partialOf(t, full, 3)
	jobs := full.JobTypesWithScaleFactor(2)
	for _, w := range full.WorkerTypes() {
		for x, a := range jobs {
			if r, ok := full.Isolated(w, a); ok {
				out.SetIsolated(w, a, r)
			}
			for y, b := range jobs[x:] {
				if _, _, s := full.Pair(w, a, b); s != table.Infeasible {
					t.Fatalf("%s: %v next to %v is not infeasible in Gavel's table", w, a, b)
				}
				last := x+y == len(jobs)-1 && w == "v100" // knows no pair on v100: a cold start
				if x < 3 && x+y < 3 || x == 0 && !last {
					out.SetInfeasible(w, a, b)
				}
			}
		}
	}
	return out
}

// A block whose every known pair is infeasible (multi-GPU jobs that never share) gets no pick
// before the pairs of a block with rates: its pairs are predicted infeasible for certain, so
// their packing decision cannot flip, and its jobs' first pairs place them nowhere (the
// cold-start bonus had given it 19 of 20 picks, and 37 more "could flip" at score 0.5).
func TestSuggestSkipsBlockWithoutRates(t *testing.T) {
	tb := withInfeasibleBlock(t)
	for _, budget := range []int{20, 60} {
		ss, _, err := SuggestTable(context.Background(), tb, budget, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(ss) != budget {
			t.Fatalf("budget %d: %d suggestions", budget, len(ss))
		}
		for _, s := range ss {
			if s.ScaleFactor != 1 {
				t.Errorf("budget %d: suggestion %+v in the block without rates", budget, s)
			}
		}
	}
}

// A pair predicted infeasible counts its flip probability only as far as it may share after all.
func TestCalibratedFlipWeighedByFeasibility(t *testing.T) {
	h, r := onTheLine(t)
	r.SumError = []float64{0.1, 0.1, 0.1}
	i, k := 20, 21
	r.Infeasible[0][i][k], r.Infeasible[0][k][i] = true, true
	r.InfeasibleScore[0][i][k], r.InfeasibleScore[0][k][i] = 0.8, 0.6
	st := newPicker(h.Partial, r)
	if got := st.calibratedValue(0, i, k).flip; math.Abs(got-0.5*0.2) > 1e-12 {
		t.Errorf("flip of a pair predicted infeasible with score 0.8: %v, want 0.1", got)
	}
	if got := st.calibratedValue(1, i, k).flip; math.Abs(got-0.5) > 1e-12 {
		t.Errorf("flip of a pair predicted feasible: %v, want 0.5", got)
	}
}

// The uncalibrated ranking weighs a pair predicted infeasible's flip as the calibrated one does:
// one infeasible for certain has no packing decision to flip.
func TestUncalibratedFlipWeighedByFeasibility(t *testing.T) {
	h, r := onTheLine(t)
	d := h.Partial
	i, k := 20, 21
	r.Infeasible[0][i][k], r.Infeasible[0][k][i] = true, true
	r.InfeasibleScore[0][i][k], r.InfeasibleScore[0][k][i] = 1, 1
	count, _ := knownCounts(d)
	sure := value(r, count, 0, i, k, false)
	r.Infeasible[0][i][k], r.Infeasible[0][k][i] = false, false
	free := value(r, count, 0, i, k, false)
	if sure.Reason == ReasonPacking || free.Reason != ReasonPacking || math.Abs(free.Score-sure.Score-1) > 1e-9 {
		t.Errorf("certainly infeasible: %+v; the same pair feasible: %+v; want the first without its flip (1 on the line)", sure, free)
	}
}

// Settings no fit can use are errors, not estimates of NaN.
func TestPairwiseRefusesBadWeights(t *testing.T) {
	h, err := Protocol(gavelBlock(t), 16, 0.2, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Pairwise{{Caution: math.NaN()}, {Neighbors: math.NaN()}, {Prior: math.NaN()}, {Prior: math.Inf(1)}, {Caution: math.Inf(-1)}} {
		r, err := p.Estimate(context.Background(), h.Partial)
		if !errors.Is(err, completion.ErrBadSettings) || r != nil {
			t.Errorf("%+v: result %v, err %v; want completion.ErrBadSettings", p, r != nil, err)
		}
	}
}

// Methods that read measured rates directly refuse ones a table's reader would: a NaN or
// infinite rate gave NaN estimates without an error; and Gavel's method on a block with no
// worker type is an error, not a panic.
func TestMethodsRefuseBadData(t *testing.T) {
	for _, v := range []float64{math.NaN(), math.Inf(1), -0.5} {
		h, err := Protocol(gavelBlock(t), 16, 0.2, 0)
		if err != nil {
			t.Fatal(err)
		}
		refs := h.Partial.References()
		h.Partial.Norm[1][refs[0]][refs[1]] = v
		for _, m := range []Method{PartnerMean{}, Neighbors{}} {
			if r, err := m.Estimate(context.Background(), h.Partial); !errors.Is(err, ErrBadData) || r != nil {
				t.Errorf("%s, a measured rate %v: result %v, err %v; want ErrBadData", m.Name(), v, r != nil, err)
			}
		}
	}
	empty := NewData(nil, []table.JobType{{Model: "a", ScaleFactor: 1}})
	if _, err := (Gavel{}).Estimate(context.Background(), empty); err == nil {
		t.Error("Gavel on no worker type: no error")
	}
	if _, err := Evaluate(context.Background(), gavelBlock(t), EvalOptions{References: 16, Fraction: 0.2, Seeds: []uint64{0},
		Methods: []Method{}}); err == nil || !strings.Contains(err.Error(), "no methods") {
		t.Errorf("no methods: err %v", err)
	}
}

// PartnerMean's estimates lie in [0.02, 1] as every method's.
func TestPartnerMeanClamps(t *testing.T) {
	h, err := Protocol(gavelBlock(t), 16, 0.2, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := h.Partial
	for w := range d.State {
		for i := range d.State[w] {
			for k, s := range d.State[w][i] {
				if s == table.Measured {
					d.Norm[w][i][k] *= 1e9
				}
			}
		}
	}
	r, err := PartnerMean{}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	for w := range d.State {
		for i := range d.State[w] {
			for k, s := range d.State[w][i] {
				if v := r.Norm[w][i][k]; s == table.Missing && (v > 1 || v < floorNorm) {
					t.Fatalf("estimate %v", v)
				}
			}
		}
	}
}

// ignoresCtx is a method that never looks at its context: Table must not return what it
// filled in as if it were done when ctx was canceled meanwhile.
type ignoresCtx struct{ calls *int }

func (ignoresCtx) Name() string { return "ignores_ctx" }

func (m ignoresCtx) Estimate(_ context.Context, d *Data) (*Result, error) {
	*m.calls++
	return PartnerMean{}.Estimate(context.Background(), d)
}

func TestTableAndSuggestCanceledOrNothingToDo(t *testing.T) {
	partial := partialOf(t, gavel3(), 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	if out, rep, err := Table(ctx, partial, Options{Method: ignoresCtx{&calls}}); !errors.Is(err, context.Canceled) || out != nil || rep != nil {
		t.Errorf("Table after cancel with a method that ignores it: err %v", err)
	}
	if calls == 0 {
		t.Fatal("the method was not called: the test proves nothing")
	}
	calls = 0
	ss, _, err := SuggestTable(context.Background(), partial, 0, Options{Method: ignoresCtx{&calls}})
	if err != nil || len(ss) != 0 || ss == nil || calls != 0 {
		t.Errorf("budget 0: %v suggestions (nil %v), err %v, %d estimates made; want none, [], no estimate", len(ss), ss == nil, err, calls)
	}
	if _, _, err := SuggestTable(ctx, partial, 3, Options{Method: ignoresCtx{&calls}}); !errors.Is(err, context.Canceled) {
		t.Errorf("SuggestTable after cancel with a method that ignores it: err %v", err)
	}
}

// An empty table ("{}") is an error for Table and SuggestTable, not a table returned unchanged.
func TestEmptyTable(t *testing.T) {
	if _, _, err := Table(context.Background(), table.New(), Options{}); !errors.Is(err, ErrEmptyTable) {
		t.Errorf("Table: err %v, want ErrEmptyTable", err)
	}
	if _, _, err := SuggestTable(context.Background(), table.New(), 3, Options{}); !errors.Is(err, ErrEmptyTable) {
		t.Errorf("SuggestTable: err %v, want ErrEmptyTable", err)
	}
}

// A new worker type profiled alone but for one reference pair: its infeasible calls are noted
// as resting on the base rate.
func TestTableNotesFewFeasibleOnWorkerType(t *testing.T) {
	full, partial, jobs, d := partialBlock(t)
	ref := jobs[d.References()[0]]
	for _, j := range jobs {
		if r, ok := full.Isolated("k80", j); ok {
			partial.SetIsolated("new", j, 0.7*r)
		}
	}
	a, b, _ := full.Pair("k80", ref, ref)
	partial.SetPair("new", ref, ref, 0.7*a, 0.7*b)
	_, rep, err := Table(context.Background(), partial, Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, "worker type new: only 1 pair measured feasible there (0 infeasible)") {
		t.Errorf("no note on worker type new's infeasible calls:\n%s", notes)
	}
	if strings.Contains(notes, "worker type k80: only") {
		t.Errorf("a note on k80, measured well:\n%s", notes)
	}
}

// Table notes jobs with no known pair on a worker type, and measured pairs above 1.
func TestTableNotesWhatRestsOnLittle(t *testing.T) {
	_, partial, jobs, d := partialBlock(t)
	refs := d.References()
	lonely := -1
	for i := range jobs {
		if !slices.Contains(refs, i) {
			lonely = i
			break
		}
	}
	for _, w := range partial.WorkerTypes() {
		for _, b := range jobs {
			partial.DeletePair(w, jobs[lonely], b)
		}
	}
	a, b := jobs[refs[0]], jobs[refs[1]]
	_, rb, _ := partial.Pair("k80", a, b)
	isoA, _ := partial.Isolated("k80", a)
	partial.SetPair("k80", a, b, 1.2*isoA, rb)
	_, rep, err := Table(context.Background(), partial, Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, jobs[lonely].Model+`" (every worker type)`) {
		t.Errorf("no note names %q as measured next to nobody:\n%s", jobs[lonely].Model, notes)
	}
	if !strings.Contains(notes, "1 entry measured with a normalized rate above 1") {
		t.Errorf("no note on the measured rate above 1:\n%s", notes)
	}
}

// partialBlock is Gavel's table (k80, p100, v100), partialOf it on seed 3, its scale-factor-1
// job types and the partial's block of them.
func partialBlock(t *testing.T) (full, partial *table.Table, jobs []table.JobType, d *Data) {
	t.Helper()
	full = gavel3()
	partial = partialOf(t, full, 3)
	jobs = full.JobTypesWithScaleFactor(1)
	d, err := FromTable(partial, jobs, partial.WorkerTypes())
	if err != nil {
		t.Fatal(err)
	}
	return full, partial, jobs, d
}

// onTheLine is the seed-2 hold-out of Gavel's table and a hand-made estimate of it: every
// normalized rate 0.5 (every sum on the packing line), feasible, infeasibility scores 0.
func onTheLine(t *testing.T) (*Holdout, *Result) {
	t.Helper()
	h, err := Protocol(gavelBlock(t), 16, 0.2, 2)
	if err != nil {
		t.Fatal(err)
	}
	d := h.Partial
	r := newResult(d)
	r.InfeasibleScore = grid3(len(d.Workers), len(d.Jobs))
	for w := range d.Workers {
		for a := range d.Jobs {
			for b := range d.Jobs {
				r.Norm[w][a][b] = 0.5
			}
		}
	}
	return h, r
}
