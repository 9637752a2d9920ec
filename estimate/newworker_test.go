package estimate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// withBareA100 returns the scale-factor-1 part of Gavel's table on k80, p100, v100 with jobs 12
// and up measured only next to job 0 (so the references are jobs 0-11), plus an a100 that has an
// isolated rate for every job and no pair at all: a GPU type just profiled alone.
func withBareA100(t *testing.T) (*table.Table, []table.JobType) {
	t.Helper()
	full := gavel3()
	jobs := full.JobTypesWithScaleFactor(1)
	tb := full.Select(jobs, nil)
	for _, w := range tb.WorkerTypes() {
		for i := 12; i < len(jobs); i++ {
			for k := 1; k < len(jobs); k++ {
				tb.DeletePair(w, jobs[i], jobs[k])
			}
		}
	}
	for _, j := range jobs {
		r, _ := tb.Isolated("v100", j)
		tb.SetIsolated("a100", j, 1.5*r)
	}
	return tb, jobs
}

// An a100 with isolated rates only used to join the k80/p100/v100 block and leave it without a
// reference, failing the whole run with an error that did not name a100. The other worker types
// are estimated; a100's pairs, all n² of them, stay missing with a note naming it.
func TestTableBareWorkerTypeOwnBlock(t *testing.T) {
	tb, jobs := withBareA100(t)
	n := len(jobs)
	_, rep, err := Table(context.Background(), tb, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Per worker type the m = n-12 jobs from 12 on lack their m² ordered entries with each other
	// and 2·11·m with jobs 1-11.
	m := n - 12
	want := 3 * (m*m + 22*m)
	if rep.Estimated != want || rep.LeftMissing != n*n {
		t.Errorf("estimated %d, left missing %d; want %d, %d", rep.Estimated, rep.LeftMissing, want, n*n)
	}
	for _, e := range rep.Entries {
		if e.WorkerType == "a100" {
			t.Fatalf("estimated %+v on a100, which has no reference", e)
		}
	}
	if !hasNote(rep.Notes, "a100", "reference", "not estimated") {
		t.Errorf("notes %q: want one naming a100 as without references", rep.Notes)
	}
}

// suggest proposes a100's reference pairs, growing a reference set one job at a time: job 0
// with itself, then job 1 with job 0 and with itself, and so on, all on a100.
func TestSuggestBareWorkerTypeReferencePairs(t *testing.T) {
	tb, jobs := withBareA100(t)
	ms, _, err := SuggestTable(context.Background(), tb, 5, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{0, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}}
	if len(ms) != len(want) {
		t.Fatalf("%d suggestions %+v, want %d", len(ms), ms, len(want))
	}
	for x, m := range ms {
		a, b := jobs[want[x][0]].Model, jobs[want[x][1]].Model
		if m.WorkerType != "a100" || m.Job != a || m.Partner != b || m.Reason != ReasonReference {
			t.Errorf("suggestion %d: %+v; want a100 %s with %s, reason %q", x, m, a, b, ReasonReference)
		}
	}
}

// With no reference anywhere the error names the worker types as well as the scale factor.
func TestTableNoReferenceNamesWorkerTypes(t *testing.T) {
	tb := table.Default().Select(nil, []string{"p100", "v100"})
	for _, w := range tb.WorkerTypes() {
		for _, j := range tb.JobTypes() {
			tb.DeletePair(w, j, j)
		}
	}
	_, _, err := Table(context.Background(), tb, Options{})
	if !errors.Is(err, ErrNoReference) || !strings.Contains(err.Error(), "p100") || !strings.Contains(err.Error(), "v100") {
		t.Errorf("err %v: want ErrNoReference naming p100 and v100", err)
	}
	_, _, err = SuggestTable(context.Background(), tb, 3, Options{})
	if !errors.Is(err, ErrNoReference) || !strings.Contains(err.Error(), "p100") || !strings.Contains(err.Error(), "v100") {
		t.Errorf("suggest: err %v: want ErrNoReference naming p100 and v100", err)
	}
}

// A worker type measured against fewer references than the others is an ordinary partial
// table, not one to split: Gavel's scale-factor-1 table with v100 keeping only the pairs that
// involve one of the first nref jobs is one block on k80, p100 and v100, whose references are
// exactly those nref jobs (the only ones measured with every job on v100). Splitting off v100
// whenever it had fewer than half the others' references changed its estimates.
func TestBlocksFewerReferencesOnOneWorkerTypeNotSplit(t *testing.T) {
	for _, nref := range []int{1, 3, 5, 12} {
		full := gavel3()
		jobs := full.JobTypesWithScaleFactor(1)
		tb := full.Select(jobs, nil)
		for i := nref; i < len(jobs); i++ {
			for k := nref; k < len(jobs); k++ {
				tb.DeletePair("v100", jobs[i], jobs[k])
			}
		}
		bs, _, err := Blocks(tb, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(bs) != 1 || strings.Join(bs[0].Workers, " ") != "k80 p100 v100" {
			t.Fatalf("nref %d: blocks on %v; want one on k80 p100 v100", nref, blockWorkers(bs))
		}
		var refs []table.JobType
		for _, i := range bs[0].References() {
			refs = append(refs, bs[0].Jobs[i])
		}
		if !sameJobSet(refs, jobs[:nref]) {
			t.Errorf("nref %d: references %v, want %v", nref, refs, jobs[:nref])
		}
	}
}

// Once a worker type shares one reference with the others (the first pair suggest proposes for
// a bare a100: job 0 with itself) it is in their block again, as it was before bare worker
// types were split off.
func TestBlocksWorkerTypeWithOneSharedReferenceJoins(t *testing.T) {
	tb, jobs := withBareA100(t)
	tb.SetPair("a100", jobs[0], jobs[0], 1, 1)
	bs, _, err := Blocks(tb, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || strings.Join(bs[0].Workers, " ") != "a100 k80 p100 v100" {
		t.Fatalf("blocks on %v; want one on a100 k80 p100 v100", blockWorkers(bs))
	}
}

// sameJobSet reports whether a and b hold the same job types, in any order.
func sameJobSet(a, b []table.JobType) bool {
	in := map[table.JobType]bool{}
	for _, j := range a {
		in[j] = true
	}
	if len(in) != len(b) || len(a) != len(b) {
		return false
	}
	for _, j := range b {
		if !in[j] {
			return false
		}
	}
	return true
}

// blockWorkers lists the worker types of each block, for messages.
func blockWorkers(bs []*Data) [][]string {
	out := make([][]string, len(bs))
	for x, d := range bs {
		out[x] = d.Workers
	}
	return out
}
