package table

import (
	"maps"
	"slices"
	"strings"
	"sync"
)

// A State says what a table knows about an entry.
type State uint8

const (
	Missing    State = iota // not measured
	Measured                // a usable rate
	Infeasible              // measured, and the pair could not share a GPU
)

func (s State) String() string {
	switch s {
	case Missing:
		return "missing"
	case Measured:
		return "measured"
	case Infeasible:
		return "infeasible"
	}
	return "unknown"
}

// A Table holds isolated and co-located rates per worker type. The zero
// value is not usable; call New. A Table is safe for concurrent reads but
// not for a write concurrent with anything else.
type Table struct {
	workers map[string]*workerTable
}

type workerTable struct {
	isolated map[JobType]float64
	// pairs[a][b] = [rate of a, rate of b]; always stored in both directions.
	pairs map[JobType]map[JobType][2]float64
}

// New returns an empty table.
func New() *Table { return &Table{workers: map[string]*workerTable{}} }

func (t *Table) worker(w string, create bool) *workerTable {
	wt := t.workers[w]
	if wt == nil && create {
		wt = &workerTable{isolated: map[JobType]float64{}, pairs: map[JobType]map[JobType][2]float64{}}
		t.workers[w] = wt
	}
	return wt
}

// WorkerTypes returns the worker types in the table, sorted by name: every one an entry was
// set on or a file named, even when its entries were deleted since (JSON keeps such a type as
// {}; CSV, which has rows only, drops it).
func (t *Table) WorkerTypes() []string { return slices.Sorted(maps.Keys(t.workers)) }

// JobTypes returns every job type that has an entry on any worker type
// (as a job or as a partner), sorted by JobType.Less.
func (t *Table) JobTypes() []JobType {
	seen := map[JobType]bool{}
	for _, wt := range t.workers {
		for j := range wt.isolated {
			seen[j] = true
		}
		// Pairs are stored in both directions, so every partner has a row of its own: looking
		// at the rows alone spares reading every pair (millions in a large table, whose Write
		// asks for the job types).
		for j := range wt.pairs {
			seen[j] = true
		}
	}
	return slices.SortedFunc(maps.Keys(seen), compareJobTypes)
}

// JobTypesWithScaleFactor returns the job types using sf GPUs, sorted.
func (t *Table) JobTypesWithScaleFactor(sf int) []JobType {
	var out []JobType
	for _, j := range t.JobTypes() {
		if j.ScaleFactor == sf {
			out = append(out, j)
		}
	}
	return out
}

// HasJobType reports whether j has any entry on any worker type.
func (t *Table) HasJobType(j JobType) bool {
	for _, wt := range t.workers {
		if _, ok := wt.isolated[j]; ok {
			return true
		}
		if _, ok := wt.pairs[j]; ok {
			return true
		}
	}
	return false
}

// Isolated returns the rate of j running alone on worker type w. ok is false
// when it was never measured; a rate of 0 means j cannot run on w.
func (t *Table) Isolated(w string, j JobType) (rate float64, ok bool) {
	wt := t.worker(w, false)
	if wt == nil {
		return 0, false
	}
	rate, ok = wt.isolated[j]
	return rate, ok
}

// SetIsolated records the rate of j running alone on w.
func (t *Table) SetIsolated(w string, j JobType, rate float64) {
	t.worker(w, true).isolated[j] = rate
}

// DeleteIsolated makes the isolated rate of j on w missing.
func (t *Table) DeleteIsolated(w string, j JobType) {
	if wt := t.worker(w, false); wt != nil {
		delete(wt.isolated, j)
	}
}

// Pair returns the rates of a and b sharing a GPU of type w, and the
// entry's state. The rates are 0 unless the state is Measured.
func (t *Table) Pair(w string, a, b JobType) (rateA, rateB float64, s State) {
	wt := t.worker(w, false)
	if wt == nil {
		return 0, 0, Missing
	}
	r, ok := wt.pairs[a][b]
	if !ok {
		return 0, 0, Missing
	}
	if r[0] == 0 && r[1] == 0 {
		return 0, 0, Infeasible
	}
	return r[0], r[1], Measured
}

// SetPair records that a runs at rateA and b at rateB when they share a GPU
// of type w; both directions are written. Rates of 0 and 0 mean infeasible.
func (t *Table) SetPair(w string, a, b JobType, rateA, rateB float64) {
	wt := t.worker(w, true)
	wt.setOneWay(a, b, [2]float64{rateA, rateB})
	if a != b {
		wt.setOneWay(b, a, [2]float64{rateB, rateA})
	}
}

// setOneWay stores pairs[a][b] = r alone, leaving the table asymmetric until pairs[b][a] is
// stored too: readers store pairs as a file gives them, then settle them (settlePairs).
func (wt *workerTable) setOneWay(a, b JobType, r [2]float64) {
	row := wt.pairs[a]
	if row == nil {
		row = map[JobType][2]float64{}
		wt.pairs[a] = row
	}
	row[b] = r
}

// FillPairs sets pairs in bulk: for every worker type workers[w] and every pair of job types
// (jobs[i], jobs[k]) with i ≤ k for which rates(w, i, k) returns ok, it does what
// SetPair(workers[w], jobs[i], jobs[k], rateA, rateB) does. Setting a million pairs one after
// the other took over a second, most of it growing the rows: FillPairs asks rates twice for
// every pair, first to count each row's new pairs and make room for them at once, and fills
// worker types concurrently. So rates must give the same answer for a pair each time, is called
// concurrently for different w, and must not touch t. FillPairs panics if workers repeats a
// worker type.
func (t *Table) FillPairs(workers []string, jobs []JobType, rates func(w, i, k int) (rateA, rateB float64, ok bool)) {
	wts := make([]*workerTable, len(workers))
	created := make([]bool, len(workers))
	for w, name := range workers {
		if slices.Contains(workers[:w], name) {
			panic("table: FillPairs: worker type " + name + " given twice")
		}
		created[w] = t.workers[name] == nil
		wts[w] = t.worker(name, true) // before the goroutines: they only read t.workers
	}
	var wg sync.WaitGroup
	for w, wt := range wts {
		wg.Go(func() {
			wt.fill(jobs, func(i, k int) (float64, float64, bool) { return rates(w, i, k) })
		})
	}
	wg.Wait()
	for w, name := range workers {
		if created[w] && len(wts[w].pairs) == 0 { // as SetPair, which makes a worker type only for a pair
			delete(t.workers, name)
		}
	}
}

// fill is FillPairs on one worker type.
func (wt *workerTable) fill(jobs []JobType, rates func(i, k int) (float64, float64, bool)) {
	grow := make([]int, len(jobs)) // new pairs per row, at most
	for i := range jobs {
		for k := i; k < len(jobs); k++ {
			if _, _, ok := rates(i, k); ok {
				grow[i]++
				if k != i {
					grow[k]++
				}
			}
		}
	}
	for i, a := range jobs {
		if grow[i] > 0 {
			row := make(map[JobType][2]float64, len(wt.pairs[a])+grow[i])
			maps.Copy(row, wt.pairs[a])
			wt.pairs[a] = row
		}
	}
	for i, a := range jobs {
		for k := i; k < len(jobs); k++ {
			if ra, rb, ok := rates(i, k); ok {
				b := jobs[k]
				wt.setOneWay(a, b, [2]float64{ra, rb})
				if a != b {
					wt.setOneWay(b, a, [2]float64{rb, ra})
				}
			}
		}
	}
	for i, a := range jobs {
		if grow[i] > 0 && len(wt.pairs[a]) == 0 { // rates said ok, then not: no empty row
			delete(wt.pairs, a)
		}
	}
}

// SetInfeasible records that a and b could not share a GPU of type w.
func (t *Table) SetInfeasible(w string, a, b JobType) { t.SetPair(w, a, b, 0, 0) }

// DeletePair makes the pair (a, b) on w missing in both directions.
func (t *Table) DeletePair(w string, a, b JobType) {
	wt := t.worker(w, false)
	if wt == nil {
		return
	}
	for _, d := range [][2]JobType{{a, b}, {b, a}} {
		if row := wt.pairs[d[0]]; row != nil {
			delete(row, d[1])
			if len(row) == 0 {
				delete(wt.pairs, d[0])
			}
		}
	}
}

// Normalized returns the pair's rates divided by each job's isolated rate on
// w: the fraction of its solo speed each job keeps when sharing. The state is
// Missing when the pair, or a needed isolated rate, is missing or zero.
func (t *Table) Normalized(w string, a, b JobType) (na, nb float64, s State) {
	ra, rb, s := t.Pair(w, a, b)
	if s != Measured {
		return 0, 0, s
	}
	ia, okA := t.Isolated(w, a)
	ib, okB := t.Isolated(w, b)
	if !okA || !okB || ia == 0 || ib == 0 {
		return 0, 0, Missing
	}
	return ra / ia, rb / ib, Measured
}

// Partners returns the job types that have a pair entry (measured or
// infeasible) with j on w, sorted.
func (t *Table) Partners(w string, j JobType) []JobType {
	wt := t.worker(w, false)
	if wt == nil {
		return nil
	}
	return slices.SortedFunc(maps.Keys(wt.pairs[j]), compareJobTypes)
}

// Clone returns a deep copy of t.
func (t *Table) Clone() *Table { return t.Select(nil, nil) }

// Select returns a copy of t restricted to the given job types and worker
// types; a nil slice keeps all. A pair is kept only when both jobs are.
func (t *Table) Select(jobs []JobType, workers []string) *Table {
	keepJob := func(JobType) bool { return true }
	if jobs != nil {
		set := map[JobType]bool{}
		for _, j := range jobs {
			set[j] = true
		}
		keepJob = func(j JobType) bool { return set[j] }
	}
	if workers == nil {
		workers = t.WorkerTypes()
	}
	out := New()
	for _, w := range workers {
		wt := t.worker(w, false)
		if wt == nil {
			continue
		}
		dst := out.worker(w, true)
		for j, r := range wt.isolated {
			if keepJob(j) {
				dst.isolated[j] = r
			}
		}
		for a, row := range wt.pairs {
			if !keepJob(a) {
				continue
			}
			for b, r := range row {
				if keepJob(b) {
					if dst.pairs[a] == nil {
						dst.pairs[a] = map[JobType][2]float64{}
					}
					dst.pairs[a][b] = r
				}
			}
		}
	}
	return out
}

// Equal reports whether t and u have the same worker types (see WorkerTypes) and hold exactly
// the same entries.
func (t *Table) Equal(u *Table) bool {
	if len(t.workers) != len(u.workers) {
		return false
	}
	for w, a := range t.workers {
		b := u.workers[w]
		if b == nil || !maps.Equal(a.isolated, b.isolated) || len(a.pairs) != len(b.pairs) {
			return false
		}
		for j, row := range a.pairs {
			if !maps.Equal(row, b.pairs[j]) {
				return false
			}
		}
	}
	return true
}

// A Conflict is an entry that Merge found in both tables with different
// values; the newer value was kept.
type Conflict struct {
	Worker   string
	Job      JobType
	Partner  JobType // zero when Isolated
	Isolated bool
	Old, New [2]float64 // for an isolated rate only element 0 is used
}

// Merge returns a table with every entry of older and newer; where both hold
// an entry, newer's wins and a differing value is reported as a Conflict.
// Conflicts are sorted by worker type, job and partner, a job's isolated rate
// before its pairs.
func Merge(older, newer *Table) (*Table, []Conflict) {
	out := older.Clone()
	var conflicts []Conflict
	for _, w := range newer.WorkerTypes() {
		src := newer.workers[w]
		out.worker(w, true) // kept even with no entries, as WorkerTypes says
		for _, j := range slices.SortedFunc(maps.Keys(src.isolated), compareJobTypes) {
			r := src.isolated[j]
			if old, ok := out.Isolated(w, j); ok && old != r {
				conflicts = append(conflicts, Conflict{Worker: w, Job: j, Isolated: true, Old: [2]float64{old}, New: [2]float64{r}})
			}
			out.SetIsolated(w, j, r)
		}
		for _, a := range slices.SortedFunc(maps.Keys(src.pairs), compareJobTypes) {
			for _, b := range slices.SortedFunc(maps.Keys(src.pairs[a]), compareJobTypes) {
				r := src.pairs[a][b]
				if dst := out.worker(w, false); dst != nil {
					if old, ok := dst.pairs[a][b]; ok && old != r && !b.Less(a) {
						conflicts = append(conflicts, Conflict{Worker: w, Job: a, Partner: b, Old: old, New: r})
					}
				}
				out.worker(w, true)
				if out.workers[w].pairs[a] == nil {
					out.workers[w].pairs[a] = map[JobType][2]float64{}
				}
				out.workers[w].pairs[a][b] = r
			}
		}
	}
	// Per worker type, isolated rates are merged before pairs: order the conflicts as
	// documented, a job's isolated rate before its partners (as Validate orders problems).
	slices.SortStableFunc(conflicts, func(x, y Conflict) int {
		if c := strings.Compare(x.Worker, y.Worker); c != 0 {
			return c
		}
		return compareEntries(x.Job, x.Isolated, x.Partner, y.Job, y.Isolated, y.Partner)
	})
	return out, conflicts
}

// PairStates returns the state of every pair among jobs on worker type w:
// element [i][k] is the state of (jobs[i], jobs[k]). Estimators use it as
// their observation mask.
func (t *Table) PairStates(w string, jobs []JobType) [][]State {
	out := make([][]State, len(jobs))
	for i, a := range jobs {
		out[i] = make([]State, len(jobs))
		for k, b := range jobs {
			_, _, out[i][k] = t.Pair(w, a, b)
		}
	}
	return out
}
