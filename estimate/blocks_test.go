package estimate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// gavel3 is Gavel's table on its three consolidated worker types.
func gavel3() *table.Table { return table.Default().Select(nil, []string{"k80", "p100", "v100"}) }

func jobNamed(t *testing.T, tb *table.Table, model string, sf int) table.JobType {
	t.Helper()
	j := table.JobType{Model: model, ScaleFactor: sf}
	if !tb.HasJobType(j) {
		t.Fatalf("no job type %v", j)
	}
	return j
}

// missingOn counts the ordered entries of scale factor sf on w that tb lacks, and those among
// them that do not involve skip.
func missingOn(tb *table.Table, w string, sf int, skip table.JobType) (all, others int) {
	jobs := tb.JobTypesWithScaleFactor(sf)
	for _, a := range jobs {
		for _, b := range jobs {
			if _, _, s := tb.Pair(w, a, b); s == table.Missing {
				all++
				if a != skip && b != skip {
					others++
				}
			}
		}
	}
	return all, others
}

func hasNote(notes []string, parts ...string) bool {
	for _, n := range notes {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(n, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// A worker type without the isolated rate of one job type used to be dropped from its block
// altogether, leaving every missing entry of the other jobs there missing (with exit 0). Now it
// is a block of its own without that job; only the job's own entries stay missing, with a note.
func TestTableWorkerTypeWithoutOneIsolatedRate(t *testing.T) {
	tb := gavel3()
	jobs := tb.JobTypesWithScaleFactor(1)
	a3c := jobNamed(t, tb, "A3C", 1)
	// Jobs 16+ lose their k80 pairs with each other, so k80 has entries to estimate.
	for i := 16; i < len(jobs); i++ {
		for k := 16; k < len(jobs); k++ {
			tb.DeletePair("k80", jobs[i], jobs[k])
		}
	}
	tb.DeleteIsolated("k80", a3c)
	for _, k := range jobs {
		tb.DeletePair("k80", a3c, k)
	}
	_, before := missingOn(tb, "k80", 1, a3c)
	if before == 0 {
		t.Fatal("fixture: nothing to estimate on k80")
	}
	full, rep, err := Table(context.Background(), tb, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	all, others := missingOn(full, "k80", 1, a3c)
	if others != 0 {
		t.Errorf("k80: %d entries without A3C still missing (of %d)", others, before)
	}
	if want := 2*len(jobs) - 1; all != want || rep.LeftMissing != want {
		t.Errorf("k80: %d entries missing, report says %d; want A3C's %d", all, rep.LeftMissing, want)
	}
	if !hasNote(rep.Notes, "k80", "A3C", "no isolated rate") || hasNote(rep.Notes, "the table has no missing entries") {
		t.Errorf("notes %q", rep.Notes)
	}
	estimatedK80 := 0
	for _, e := range rep.Entries {
		if e.WorkerType == "k80" {
			estimatedK80++
			if e.Job == "A3C" || e.Partner == "A3C" {
				t.Errorf("entry %+v estimated without A3C's isolated rate", e)
			}
		}
	}
	if estimatedK80 != before {
		t.Errorf("k80: %d entries estimated, want %d", estimatedK80, before)
	}
}

// On Gavel's k80 at scale factor 2, ResNet-50 (batch size 128) cannot run alone (rate 0). That
// used to drop k80 from the block: a missing k80 pair stayed missing under a note that the table
// had none. k80 is now its own block without that job, and with every known pair infeasible
// (multi-GPU jobs never share in Gavel's table) the pair is predicted infeasible.
func TestTableZeroIsolatedRateKeepsWorkerType(t *testing.T) {
	tb := gavel3()
	lm10, lm20 := jobNamed(t, tb, "LM (batch size 10)", 2), jobNamed(t, tb, "LM (batch size 20)", 2)
	big := jobNamed(t, tb, "ResNet-50 (batch size 128)", 2)
	tb.DeletePair("k80", lm10, lm20)
	tb.DeletePair("k80", big, lm10) // a fact: big cannot run alone on k80
	full, rep, err := Table(context.Background(), tb, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Estimated != 2 || rep.InfeasiblePredicted != 2 {
		t.Errorf("estimated %d (%d infeasible), want 2 (2)", rep.Estimated, rep.InfeasiblePredicted)
	}
	if rep.KnownInfeasible != 2 || rep.LeftMissing != 0 {
		t.Errorf("known infeasible %d, left missing %d; want 2, 0", rep.KnownInfeasible, rep.LeftMissing)
	}
	for _, p := range [][2]table.JobType{{lm10, lm20}, {big, lm10}} {
		if _, _, s := full.Pair("k80", p[0], p[1]); s != table.Infeasible {
			t.Errorf("k80 %v with %v: %v, want infeasible", p[0], p[1], s)
		}
	}
	if !hasNote(rep.Notes, "k80", "ResNet-50 (batch size 128)", "cannot run alone", "filled as infeasible") {
		t.Errorf("notes %q lack the infeasible fill", rep.Notes)
	}
	if hasNote(rep.Notes, "no missing entries; returned unchanged") || hasNote(rep.Notes, "scale factor 2: no missing entries") {
		t.Errorf("notes %q claim nothing was missing", rep.Notes)
	}
}

// A block with no feasible measured pair (the V100 at scale factor 2) used to fail with "no
// observed entries"; every known pair there is infeasible, so the missing one is too.
func TestPairwiseNoFeasibleObservation(t *testing.T) {
	tb := gavel3()
	lm10, lm20 := jobNamed(t, tb, "LM (batch size 10)", 2), jobNamed(t, tb, "LM (batch size 20)", 2)
	tb.DeletePair("v100", lm10, lm20)
	full, rep, err := Table(context.Background(), tb, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Estimated != 2 || rep.InfeasiblePredicted != 2 {
		t.Errorf("estimated %d (%d infeasible), want 2 (2)", rep.Estimated, rep.InfeasiblePredicted)
	}
	if _, _, s := full.Pair("v100", lm10, lm20); s != table.Infeasible {
		t.Errorf("v100 pair: %v, want infeasible", s)
	}

	// Nothing known beyond isolated rates and references that are all infeasible, for every
	// method and for the calibrated estimate suggest uses.
	bs, _, err := Blocks(tb, []string{"v100"}, false)
	if err != nil {
		t.Fatal(err)
	}
	d := bs[1]
	for _, m := range append(DefaultMethods(0), Pairwise{Seed: 0, Bootstrap: 2, Calibrate: 3}) {
		r, err := m.Estimate(context.Background(), d)
		if err != nil {
			t.Fatalf("%s: %v", m.Name(), err)
		}
		if !r.Infeasible[0][0][1] {
			t.Errorf("%s: a pair of an all-infeasible block predicted feasible", m.Name())
		}
	}

	// With nothing known at all, the rates are the even split, feasible.
	empty := NewData(d.Workers, d.Jobs)
	copy(empty.Iso[0], d.Iso[0])
	r, err := Pairwise{}.Estimate(context.Background(), empty)
	if err != nil {
		t.Fatal(err)
	}
	if r.Infeasible[0][0][1] || r.Norm[0][0][1] != fallbackNorm {
		t.Errorf("nothing known: infeasible %v, norm %v; want feasible, %v", r.Infeasible[0][0][1], r.Norm[0][0][1], fallbackNorm)
	}
}

func TestTableUnknownWorkerType(t *testing.T) {
	_, _, err := Table(context.Background(), gavel3(), Options{Workers: []string{"v10", "p100"}})
	if !errors.Is(err, ErrUnknownWorkerType) || !strings.HasPrefix(err.Error(), "worker type v10: ") {
		t.Errorf("err %v, want ErrUnknownWorkerType naming v10", err)
	}
	if _, _, err := SuggestTable(context.Background(), gavel3(), 3, Options{Workers: []string{"v10"}}); !errors.Is(err, ErrUnknownWorkerType) {
		t.Errorf("suggest: err %v, want ErrUnknownWorkerType", err)
	}
}

// A worker type named twice is an error, not a block fitted and filled twice (table.FillPairs
// panicked on it inside a goroutine, where no caller could recover).
func TestTableRepeatedWorkerType(t *testing.T) {
	for _, workers := range [][]string{{"v100", "v100"}, {"k80", "v100", "k80"}} {
		_, _, err := Table(context.Background(), gavel3(), Options{Workers: workers})
		if err == nil || !strings.Contains(err.Error(), "worker type "+workers[0]+" given twice") {
			t.Errorf("Table %v: err %v, want one naming %s given twice", workers, err, workers[0])
		}
		if _, _, err := SuggestTable(context.Background(), gavel3(), 3, Options{Workers: workers}); err == nil {
			t.Errorf("SuggestTable %v: no error", workers)
		}
	}
	tb := gavel3()
	if _, err := FromTable(tb, tb.JobTypesWithScaleFactor(1), []string{"p100", "p100"}); err == nil {
		t.Error("FromTable with p100 twice: no error")
	}
}

// A block with missing entries but no reference is skipped with a note, as suggest does; the
// run fails only when no block with missing entries can be estimated.
func TestTableSkipsBlockWithoutReference(t *testing.T) {
	tb := gavel3()
	jobs1 := tb.JobTypesWithScaleFactor(1)
	tb.DeletePair("v100", jobs1[len(jobs1)-1], jobs1[len(jobs1)-2])
	onlyNoRef := gavel3()
	for _, x := range []*table.Table{tb, onlyNoRef} {
		for _, j := range x.JobTypesWithScaleFactor(2) {
			x.DeletePair("p100", j, j) // no job of scale factor 2 is measured with itself on p100
		}
	}
	_, rep, err := Table(context.Background(), tb, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	n2 := len(tb.JobTypesWithScaleFactor(2))
	if rep.Estimated != 2 || rep.LeftMissing != n2 {
		t.Errorf("estimated %d, left missing %d; want 2, %d", rep.Estimated, rep.LeftMissing, n2)
	}
	if !hasNote(rep.Notes, "scale factor 2", "reference", "not estimated") {
		t.Errorf("notes %q lack the skipped block", rep.Notes)
	}
	if _, _, err := Table(context.Background(), onlyNoRef, Options{Seed: 1}); !errors.Is(err, ErrNoReference) {
		t.Errorf("only a block without references: err %v, want ErrNoReference", err)
	}
}

// With --worker-types k80 on a table whose only missing pair is on p100, the note used to say
// that the table has no missing entries. It must say that the selected worker types have none,
// naming them, and that the others still lack the pair's 2 ordered entries, naming p100.
func TestTableCompleteSelectionNotesOthers(t *testing.T) {
	tb := gavel3()
	jobs := tb.JobTypesWithScaleFactor(1)
	tb.DeletePair("p100", jobs[0], jobs[1])
	out, rep, err := Table(context.Background(), tb, Options{Workers: []string{"k80"}})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Equal(tb) || rep.Estimated != 0 {
		t.Errorf("estimated %d, table changed %v; want nothing done", rep.Estimated, !out.Equal(tb))
	}
	if hasNote(rep.Notes, "the table has no missing entries") {
		t.Errorf("notes %q claim the table is complete", rep.Notes)
	}
	if !hasNote(rep.Notes, "no missing entries on the selected worker type k80", "p100", "2 missing entries") {
		t.Errorf("notes %q: want one naming the selection (k80) and p100's 2 missing entries", rep.Notes)
	}

	// With something estimated on the selection, the others' missing entries are still named.
	tb.DeletePair("k80", jobs[2], jobs[3])
	if _, rep, err = Table(context.Background(), tb, Options{Workers: []string{"k80"}}); err != nil {
		t.Fatal(err)
	}
	if rep.Estimated != 2 || !hasNote(rep.Notes, "not selected: worker type p100, with 2 missing entries, left as they are") {
		t.Errorf("estimated %d, notes %q: want 2 and a note naming p100's 2 missing entries", rep.Estimated, rep.Notes)
	}
	if _, rep, err = Table(context.Background(), tb, Options{}); err != nil || hasNote(rep.Notes, "not selected") {
		t.Errorf("no selection: notes %q (err %v), want none about unselected worker types", rep.Notes, err)
	}
}

// A job type without an isolated rate on one worker type sets that type apart: the two
// groups are estimated without learning from each other, which a reviewer's table (one job that
// could not run alone on its smallest GPU, before such a job stayed in the group) paid for on
// every other worker type. A note now says
// so, naming the groups and what each lacks; and the split-off type, with nothing of its own
// left to estimate, no longer says "no missing entries" beside the note on the entries it lacks.
func TestTableNotesWorkerTypesEstimatedApart(t *testing.T) {
	tb := gavel3()
	jobs := tb.JobTypesWithScaleFactor(1)
	a3c := jobNamed(t, tb, "A3C", 1)
	tb.DeleteIsolated("k80", a3c)
	for _, k := range jobs {
		tb.DeletePair("k80", a3c, k)
	}
	for i := 16; i < len(jobs); i++ {
		tb.DeletePair("p100", jobs[i], jobs[len(jobs)-1-i+16])
	}
	_, rep, err := Table(context.Background(), tb, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !hasNote(rep.Notes, "scale factor 1: worker types estimated in 2 groups", "p100,v100", "k80 (without A3C)") {
		t.Errorf("notes %q do not say k80 is estimated apart", rep.Notes)
	}
	if hasNote(rep.Notes, "on k80: no missing entries; unchanged") || !hasNote(rep.Notes, "on k80: nothing to estimate; its missing entries are those the notes") {
		t.Errorf("notes %q: k80's block note contradicts the A3C entries left missing", rep.Notes)
	}
	if !hasNote(rep.Notes, "k80", "A3C", "no isolated rate") {
		t.Errorf("notes %q lack A3C's", rep.Notes)
	}
	// One group: no such note.
	_, rep, err = Table(context.Background(), gavel3partial(t), Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if hasNote(rep.Notes, "groups that do not learn") {
		t.Errorf("notes %q: a split note on a table with one group", rep.Notes)
	}
}

// gavel3partial is gavel3 with a few pairs deleted on every worker type.
func gavel3partial(t *testing.T) *table.Table {
	t.Helper()
	tb := gavel3()
	jobs := tb.JobTypesWithScaleFactor(1)
	for _, w := range []string{"k80", "p100", "v100"} {
		for i := 16; i < len(jobs); i++ {
			tb.DeletePair(w, jobs[i], jobs[len(jobs)-1-i+16])
		}
	}
	return tb
}

// A job type that cannot run alone on one worker type (isolated rate 0, as run records a job
// out of memory) keeps that type in its group: its pairs there are infeasible facts in the
// block, filled as such (known_infeasible), and the other types go on learning from the type's
// other pairs. It used to set the type apart, which cost a reviewer's other types 3.5 points
// of MAPE.
func TestBlocksJobThatCannotRunAloneStaysInGroup(t *testing.T) {
	tb := gavel3partial(t)
	a3c := jobNamed(t, tb, "A3C", 1)
	jobs := tb.JobTypesWithScaleFactor(1)
	for _, k := range jobs {
		tb.DeletePair("k80", a3c, k)
	}
	tb.SetIsolated("k80", a3c, 0)
	blocks, _, err := Blocks(tb, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var sf1 []*Data
	for _, d := range blocks {
		if d.Jobs[0].ScaleFactor == 1 {
			sf1 = append(sf1, d)
		}
	}
	if len(sf1) != 1 || len(sf1[0].Workers) != 3 {
		t.Fatalf("scale factor 1 in %d blocks (first on %v), want one on k80, p100, v100", len(sf1), sf1[0].Workers)
	}
	d := sf1[0]
	w, i := 0, slices.Index(d.Jobs, a3c)
	for k := range d.Jobs {
		if d.State[w][i][k] != table.Infeasible || d.State[w][k][i] != table.Infeasible {
			t.Fatalf("k80: A3C next to %s: state %v / %v, want infeasible facts", d.Jobs[k].Model, d.State[w][i][k], d.State[w][k][i])
		}
	}
	full, rep, err := Table(context.Background(), tb, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2*len(jobs) - 1; rep.KnownInfeasible != want {
		t.Errorf("known infeasible %d, want A3C's %d k80 entries", rep.KnownInfeasible, want)
	}
	if hasNote(rep.Notes, "groups that do not learn") || !hasNote(rep.Notes, "k80", "A3C cannot run alone there") {
		t.Errorf("notes %q: want A3C's note and no split", rep.Notes)
	}
	for _, e := range rep.Entries {
		if e.WorkerType == "k80" && (e.Job == "A3C" || e.Partner == "A3C") {
			t.Errorf("A3C's k80 entry next to %s reported as an estimate", e.Partner)
		}
	}
	for _, k := range jobs {
		if _, _, s := full.Pair("k80", a3c, k); s != table.Infeasible {
			t.Errorf("k80: A3C next to %s written %v, want infeasible", k.Model, s)
		}
	}
}

// In the hold-out protocol isolated rates are always measured, so a job's rate of 0 tells its
// pairs there are infeasible: they are known from the start, not estimated and scored.
func TestProtocolKnowsPairsOfJobThatCannotRunAlone(t *testing.T) {
	tb := gavel3()
	a3c := jobNamed(t, tb, "A3C", 1)
	for _, k := range tb.JobTypesWithScaleFactor(1) {
		tb.SetInfeasible("k80", a3c, k)
	}
	tb.SetIsolated("k80", a3c, 0)
	blocks, _, err := Blocks(tb, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	truth := blocks[0]
	i := slices.Index(truth.Jobs, a3c)
	for seed := range uint64(4) {
		h, err := Protocol(truth, 4, 0.2, seed)
		if err != nil {
			t.Fatal(err)
		}
		for k := range truth.Jobs {
			if h.Partial.State[0][i][k] != table.Infeasible || h.Partial.State[0][k][i] != table.Infeasible {
				t.Fatalf("seed %d: k80: A3C next to %s %v / %v in the partial table, want infeasible (known from its isolated rate)",
					seed, truth.Jobs[k].Model, h.Partial.State[0][i][k], h.Partial.State[0][k][i])
			}
		}
	}
}
