package estimate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/gavelkit/gavel/table"
)

// Data is one block of a throughput table laid out for estimation: job types that may share a
// GPU (one scale factor) on a set of worker types, as dense arrays indexed [w][i][k].
type Data struct {
	Workers []string
	Jobs    []table.JobType
	Iso     [][]float64       // [w][i] isolated rate; NaN when missing
	Norm    [][][]float64     // [w][i][k] i's rate next to k divided by i's isolated rate
	State   [][][]table.State // [w][i][k]
}

// NewData returns an empty block (every pair missing, every isolated rate NaN).
func NewData(workers []string, jobs []table.JobType) *Data {
	d := &Data{Workers: workers, Jobs: jobs}
	W, n := len(workers), len(jobs)
	d.Iso = make([][]float64, W)
	d.Norm = make([][][]float64, W)
	d.State = make([][][]table.State, W)
	for w := 0; w < W; w++ {
		d.Iso[w] = make([]float64, n)
		for i := range d.Iso[w] {
			d.Iso[w][i] = math.NaN()
		}
		d.Norm[w] = make([][]float64, n)
		d.State[w] = make([][]table.State, n)
		for i := 0; i < n; i++ {
			d.Norm[w][i] = make([]float64, n)
			d.State[w][i] = make([]table.State, n)
		}
	}
	return d
}

// FromTable lays out jobs × workers of t. Isolated rates must be present for every job on every
// worker type: without them normalized rates mean nothing. A job whose isolated rate is 0 there
// (it cannot run alone) has every pair there infeasible, as a fact: it does not fit next to
// anyone either.
func FromTable(t *table.Table, jobs []table.JobType, workers []string) (*Data, error) {
	if err := checkDistinct(workers); err != nil {
		return nil, err
	}
	d := NewData(workers, jobs)
	for w, wt := range workers {
		for i, j := range jobs {
			r, ok := t.Isolated(wt, j)
			if !ok || r < 0 || math.IsNaN(r) {
				return nil, fmt.Errorf("worker type %s: job %s: isolated rate missing or negative", wt, j)
			}
			d.Iso[w][i] = r
		}
	}
	// A table is safe for concurrent reads, and a worker type of a 1,000-job table has a
	// million pairs to look up: worker types are read concurrently.
	var wg sync.WaitGroup
	for w, wt := range workers {
		wg.Go(func() {
			for i, a := range jobs {
				for k, b := range jobs {
					ra, _, s := t.Pair(wt, a, b)
					if d.Iso[w][i] == 0 || d.Iso[w][k] == 0 {
						s = table.Infeasible
					}
					d.State[w][i][k] = s
					if s == table.Measured {
						d.Norm[w][i][k] = ra / d.Iso[w][i]
					}
				}
			}
		})
	}
	wg.Wait()
	return d, nil
}

// Clone returns a deep copy.
func (d *Data) Clone() *Data {
	c := NewData(d.Workers, d.Jobs)
	for w := range d.Iso {
		copy(c.Iso[w], d.Iso[w])
		for i := range d.Norm[w] {
			copy(c.Norm[w][i], d.Norm[w][i])
			copy(c.State[w][i], d.State[w][i])
		}
	}
	return c
}

// Reveal copies pair (i, k) on w, both directions, from truth into d.
func (d *Data) Reveal(truth *Data, w, i, k int) {
	d.State[w][i][k], d.State[w][k][i] = truth.State[w][i][k], truth.State[w][k][i]
	d.Norm[w][i][k], d.Norm[w][k][i] = truth.Norm[w][i][k], truth.Norm[w][k][i]
}

// Missing counts missing ordered entries.
func (d *Data) Missing() int {
	n := 0
	for w := range d.State {
		for i := range d.State[w] {
			for k := range d.State[w][i] {
				if d.State[w][i][k] == table.Missing {
					n++
				}
			}
		}
	}
	return n
}

// References returns the reference job types: a largest-first greedy set of jobs whose pairs
// with each other (themselves included) are all known on every worker type. Jobs are tried in
// order of how many known entries they have, then by index.
func (d *Data) References() []int {
	return d.referencesOn(d.allWorkers())
}

// referencesOn is References over the worker types ws only (indices into d.Workers).
func (d *Data) referencesOn(ws []int) []int {
	n := len(d.Jobs)
	known := make([]int, n)
	for _, w := range ws {
		for i := range d.State[w] {
			for _, s := range d.State[w][i] {
				if s != table.Missing {
					known[i]++
				}
			}
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return known[b] - known[a] })
	var refs []int
	for _, i := range order {
		if d.measuredWith(ws, refs, i) {
			refs = append(refs, i)
		}
	}
	slices.Sort(refs)
	return refs
}

// allWorkers returns the indices of every worker type of d.
func (d *Data) allWorkers() []int {
	ws := make([]int, len(d.Workers))
	for w := range ws {
		ws[w] = w
	}
	return ws
}

// measuredWith reports whether job i is measured with itself and, both ways, with every job of
// set on every worker type of ws.
func (d *Data) measuredWith(ws, set []int, i int) bool {
	for _, w := range ws {
		if d.State[w][i][i] == table.Missing {
			return false
		}
		for _, k := range set {
			if d.State[w][i][k] == table.Missing || d.State[w][k][i] == table.Missing {
				return false
			}
		}
	}
	return true
}

// splitByReferences returns d as one block or, when some of its worker types share no
// reference job type with the others, as two: the others, and those worker types on their own.
// Worker types join in order of known entries (most first) unless the block would then have no
// reference at all, i.e. no job type measured with itself on every worker type of the block.
// Without this a worker type with isolated rates and no pairs (a GPU type just profiled alone)
// would leave the whole block without references and nothing on the others could be estimated.
// A worker type that shares even one reference joins: estimates on such tables (a worker type
// measured against fewer references than the others, say) are what they were before the split
// existed, and the block's references are those the worker types share. The block of those left
// out has no reference shared with the others: [Table] estimates it from its own or leaves it
// with a note, and [SuggestTable] proposes the others' reference pairs there. With nothing left
// out d itself is returned.
func (d *Data) splitByReferences() []*Data {
	ws := d.workersByKnown()
	in := ws[:1]
	if len(d.referencesOn(in)) == 0 {
		return []*Data{d}
	}
	var out []int
	for _, w := range ws[1:] {
		with := append(slices.Clone(in), w)
		if len(d.referencesOn(with)) > 0 {
			in = with
		} else {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return []*Data{d}
	}
	slices.Sort(in)
	slices.Sort(out)
	return []*Data{d.selectWorkers(in), d.selectWorkers(out)}
}

// workersByKnown returns d's worker type indices by their number of known entries, most first,
// then by index.
func (d *Data) workersByKnown() []int {
	known := make([]int, len(d.Workers))
	ws := make([]int, len(d.Workers))
	for w := range d.State {
		ws[w] = w
		for i := range d.State[w] {
			for _, s := range d.State[w][i] {
				if s != table.Missing {
					known[w]++
				}
			}
		}
	}
	slices.SortStableFunc(ws, func(a, b int) int { return known[b] - known[a] })
	return ws
}

// checkMeasured returns an error naming the first measured entry whose normalized rate is not a
// finite number of at least 0 (what a table's reader refuses; a hand-built Data may hold it).
func (d *Data) checkMeasured() error {
	for w := range d.State {
		for i := range d.State[w] {
			for k, s := range d.State[w][i] {
				if v := d.Norm[w][i][k]; s == table.Measured && !(v >= 0 && !math.IsInf(v, 1)) {
					return fmt.Errorf("worker type %s: %s next to %s: normalized rate %v: %w", d.Workers[w], d.Jobs[i].Model, d.Jobs[k].Model, v, ErrBadData)
				}
			}
		}
	}
	return nil
}

// WriteTo writes the block's pairs into t (isolated rates are left alone). Entries that are
// infeasible are written as infeasible.
func (d *Data) WriteTo(t *table.Table) {
	for w, wt := range d.Workers {
		for i := range d.Jobs {
			for k := i; k < len(d.Jobs); k++ {
				switch {
				case d.State[w][i][k] == table.Infeasible || d.State[w][k][i] == table.Infeasible:
					t.SetInfeasible(wt, d.Jobs[i], d.Jobs[k])
				case d.State[w][i][k] == table.Measured:
					t.SetPair(wt, d.Jobs[i], d.Jobs[k], d.Norm[w][i][k]*d.Iso[w][i], d.Norm[w][k][i]*d.Iso[w][k])
				}
			}
		}
	}
}

// ErrUnknownWorkerType is returned when a requested worker type is not in the table.
var ErrUnknownWorkerType = errors.New("not in the table")

// Blocks splits a table into estimation blocks: per scale factor, one block per group of worker
// types that have an isolated rate for the same job types of that scale factor, on those job
// types. A rate of 0 counts (the job cannot run alone there: its pairs there are infeasible
// facts in the block, see [FromTable]), so that a model too large for one type's GPUs does not
// set that type apart. No worker type is left out: one that lacks some job types (Gavel's
// k80_unconsolidated at scale factors above 1 has no ResNet-50 (batch size 64) or (batch size
// 128)) is modelled, in a block of its own, with the job types it has. Pairs with a job type
// left out of a block are not in any block and are left, with a note, missing (a pair rate
// cannot be normalized without an isolated rate); the notes Blocks returns name them. [Table]
// fills the pairs of a job that cannot run alone as infeasible (a fact, not an estimate). A worker type that
// shares no reference job type with the rest of its group is split off into a block of its own
// (see splitByReferences). Blocks of a scale factor come in the order of their first worker type, a
// split-off block right after the one it left.
//
// workers, when not nil, restricts the worker types; a name the table does not have is an error
// wrapping [ErrUnknownWorkerType]. A worker type that repeats an earlier one of its block
// exactly (same isolated and pair entries, as Gavel's "_unconsolidated" types do at scale factor
// 1) is dropped when dedupe is set: it carries no information and would count every error twice.
func Blocks(t *table.Table, workers []string, dedupe bool) ([]*Data, []string, error) {
	l, err := layout(t, workers)
	if err != nil {
		return nil, nil, err
	}
	var out []*Data
	var notes []string
	for _, g := range l.groups {
		if g.missing != nil {
			if len(g.missing.none) > 0 {
				notes = append(notes, g.missing.note())
			}
			continue
		}
		d, err := FromTable(t, g.jobs, g.workers)
		if err != nil {
			return nil, nil, err
		}
		if dedupe {
			d = d.dedupeWorkers()
		}
		out = append(out, d.splitByReferences()...)
	}
	return out, notes, nil
}

// group is one block of a table's layout (workers and jobs), or, with missing set, one worker
// type's job types of a scale factor that no block holds.
type group struct {
	sf      int
	workers []string
	jobs    []table.JobType
	missing *outside
}

// outside lists, for one scale factor and worker type, the job types no block holds there: those
// that cannot run alone (isolated rate 0) and those with no isolated rate.
type outside struct {
	sf         int
	worker     string
	all        []table.JobType // the scale factor's job types
	zero, none []table.JobType
}

func (o *outside) note() string {
	names := make([]string, len(o.none))
	for x, j := range o.none {
		names[x] = j.Model
	}
	return fmt.Sprintf("scale factor %d: worker type %s: no isolated rate for %s; pairs with them there cannot be normalized and are not estimated",
		o.sf, o.worker, strings.Join(names, ", "))
}

// tableLayout is how Blocks splits a table: blocks (groups without missing) and the job types
// outside them (groups with missing set), by scale factor.
type tableLayout struct {
	groups []group
	sfs    []int
}

// layout groups, per scale factor, the worker types by the job types with an isolated rate
// there (0 included).
func layout(t *table.Table, workers []string) (*tableLayout, error) {
	// A NaN rate failed deep in the fit, naming internal indices; a negative one was estimated
	// from and written back.
	if err := t.CheckValues(); err != nil {
		return nil, err
	}
	have := t.WorkerTypes()
	if len(have) == 0 || len(t.JobTypes()) == 0 {
		// An empty file read as a table ("{}") is more likely a mistake than a table to complete.
		return nil, ErrEmptyTable
	}
	if workers == nil {
		workers = have
	} else if len(workers) == 0 {
		return nil, errors.New("no worker types selected (nil selects them all)")
	}
	var unknown []string
	for _, w := range workers {
		if _, found := slices.BinarySearch(have, w); !found {
			unknown = append(unknown, w)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("worker type %s: %w (it has %s)", strings.Join(unknown, ", "), ErrUnknownWorkerType, strings.Join(have, ", "))
	}
	if err := checkDistinct(workers); err != nil {
		return nil, err
	}
	bySF := map[int][]table.JobType{}
	for _, j := range t.JobTypes() {
		bySF[j.ScaleFactor] = append(bySF[j.ScaleFactor], j)
	}
	l := &tableLayout{sfs: mapsKeys(bySF)}
	slices.Sort(l.sfs)
	for _, sf := range l.sfs {
		jobs := bySF[sf]
		var blocks []group
		var outs []group
		for _, w := range workers {
			o := &outside{sf: sf, worker: w, all: jobs}
			var runs []table.JobType
			for _, j := range jobs {
				r, ok := t.Isolated(w, j)
				switch {
				case !ok || math.IsNaN(r):
					o.none = append(o.none, j)
				case r <= 0:
					// In the block all the same (its pairs there are infeasible facts, see
					// FromTable), so that the worker type is not estimated apart from the
					// others for it: a model too large for one type's GPUs split that type off,
					// and every type's estimates lost what the others' measurements teach.
					o.zero = append(o.zero, j)
					runs = append(runs, j)
				default:
					runs = append(runs, j)
				}
			}
			if len(o.zero)+len(o.none) > 0 {
				outs = append(outs, group{sf: sf, workers: []string{w}, missing: o})
			}
			if len(runs) == 0 {
				continue
			}
			x := slices.IndexFunc(blocks, func(g group) bool { return slices.Equal(g.jobs, runs) })
			if x < 0 {
				blocks = append(blocks, group{sf: sf, jobs: runs})
				x = len(blocks) - 1
			}
			blocks[x].workers = append(blocks[x].workers, w)
		}
		l.groups = append(l.groups, blocks...)
		l.groups = append(l.groups, outs...)
	}
	return l, nil
}

func mapsKeys[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (d *Data) dedupeWorkers() *Data {
	var keep []int
	for w := range d.Workers {
		dup := false
		for _, v := range keep {
			if d.sameWorker(v, w) {
				dup = true
				break
			}
		}
		if !dup {
			keep = append(keep, w)
		}
	}
	if len(keep) == len(d.Workers) {
		return d
	}
	return d.selectWorkers(keep)
}

// selectWorkers returns a copy of d on the worker types keep (indices into d.Workers, in order).
func (d *Data) selectWorkers(keep []int) *Data {
	names := make([]string, len(keep))
	for x, w := range keep {
		names[x] = d.Workers[w]
	}
	c := NewData(names, d.Jobs)
	for x, w := range keep {
		copy(c.Iso[x], d.Iso[w])
		for i := range d.Jobs {
			copy(c.Norm[x][i], d.Norm[w][i])
			copy(c.State[x][i], d.State[w][i])
		}
	}
	return c
}

func (d *Data) sameWorker(v, w int) bool {
	for i := range d.Jobs {
		if d.Iso[v][i] != d.Iso[w][i] {
			return false
		}
		for k := range d.Jobs {
			if d.State[v][i][k] != d.State[w][i][k] || d.Norm[v][i][k] != d.Norm[w][i][k] {
				return false
			}
		}
	}
	return true
}

// checkDistinct reports a worker type named twice: its block would be laid out, fitted and
// filled twice (and table.FillPairs, which fills worker types concurrently, refuses that).
func checkDistinct(workers []string) error {
	for i, w := range workers {
		if slices.Contains(workers[:i], w) {
			return fmt.Errorf("worker type %s given twice", w)
		}
	}
	return nil
}
