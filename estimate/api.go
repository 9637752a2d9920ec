package estimate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gavelkit/gavel/table"
)

// ErrBadData is wrapped by the error of a method given a measured entry it cannot use.
var ErrBadData = errors.New("not a finite rate of at least 0")

// ErrEmptyTable is returned for a table with no worker type or no job type.
var ErrEmptyTable = errors.New("the table has no job types or no worker types: nothing to estimate from")

// ErrNoReference is returned when a block has no fully measured reference job type.
var ErrNoReference = errors.New("no fully measured reference job type (a job measured with itself and every other reference on every worker type)")

// Options configures [Table] and [SuggestTable].
type Options struct {
	Workers []string // worker types to use, each once; nil means every worker type of the table
	Seed    uint64   // seed of the estimator's random starts; the same seed gives the same result
	// Method nil means Pairwise{Seed: Seed}; SuggestTable then adds bootstrap fits and a
	// cross-validated sum error, as the active protocol does.
	Method Method
	Aim    Aim // what SuggestTable spends its budget on; the zero value is AimBalanced
	// Uncertainty makes Table report each estimated entry's Uncertainty. A [Pairwise] method
	// (the default) is given the bootstrap members and cross-validation folds SuggestTable fits
	// where it sets none (13 single fits more, with the ensemble's 3: three to four times the
	// time; the estimate itself is unchanged); a method that gives no calibrated errors gets a
	// note instead.
	Uncertainty bool
}

// Entry is one estimated entry of a table.
type Entry struct {
	WorkerType  string  `json:"worker_type"`
	Job         string  `json:"job"`
	Partner     string  `json:"partner"`
	ScaleFactor int     `json:"scale_factor"`
	Normalized  float64 `json:"normalized"`
	Rate        float64 `json:"rate"`
	Infeasible  bool    `json:"infeasible"`
	// Uncertainty is set when Options.Uncertainty asks for it, on entries predicted feasible.
	Uncertainty *Uncertainty `json:"uncertainty,omitempty"`
}

// Report says what [Table] did.
type Report struct {
	Estimated           int     `json:"estimated"`
	InfeasiblePredicted int     `json:"infeasible_predicted"`
	Entries             []Entry `json:"entries"`
	// KnownInfeasible counts the missing entries filled as infeasible because a job of the pair
	// cannot run alone on the worker type (isolated rate 0): facts, not estimates, so they are
	// not in Entries.
	KnownInfeasible int `json:"known_infeasible"`
	// LeftMissing counts the entries of the selected worker types (Options.Workers) still missing
	// in the returned table: pairs with a job that has no isolated rate on the worker type, and
	// blocks without a reference job type. The missing entries of worker types not selected are
	// left as they are and counted in a note, not here.
	LeftMissing int      `json:"left_missing"`
	Notes       []string `json:"notes,omitempty"`
}

func (o Options) method() Method {
	if o.Method != nil {
		return o.Method
	}
	return Pairwise{Seed: o.Seed}
}

// calibrated returns m with the bootstrap fits and cross-validation folds that suggest's ranking
// and Uncertainty need, where m is a [Pairwise] that does not set them.
func calibrated(m Method) Method {
	pw, ok := m.(Pairwise)
	if !ok {
		return m
	}
	if pw.Bootstrap == 0 {
		pw.Bootstrap = activeBootstrap
	}
	if pw.Calibrate == 0 {
		pw.Calibrate = activeFolds
	}
	return pw
}

// Table returns a copy of t with every missing pair filled in by the estimator (our pairwise
// model unless o.Method says otherwise), and a report of the entries it estimated (ordered
// entries: (job, partner) and (partner, job) count separately).
//
// A pair whose job cannot run alone on the worker type (isolated rate 0) cannot share a GPU
// either: it is filled as infeasible, a fact rather than an estimate (Report.KnownInfeasible,
// not in Entries). A pair whose job has no isolated rate on the worker type cannot be
// normalized, so the model cannot estimate it: it stays missing (Report.LeftMissing), and a
// note names the job and worker type. So does every pair of a block (see [Blocks]) with no
// reference job type, which is skipped with a note naming its worker types (a worker type with
// isolated rates but none of the others' reference pairs is such a block of its own); only when
// no block with missing entries has one is that an error ([ErrNoReference], naming the worker
// types of such a block; [SuggestTable] proposes the pairs to measure). A table with nothing
// missing is returned unchanged, with a note.
func Table(ctx context.Context, t *table.Table, o Options) (*table.Table, *Report, error) {
	l, err := layout(t, o.Workers)
	if err != nil {
		return nil, nil, err
	}
	out := t.Clone()
	rep := &Report{Entries: []Entry{}}
	method := o.method()
	if o.Uncertainty {
		method = calibrated(method)
	}
	var noRef error // the first block skipped for want of references
	estimated := false
	for _, sf := range l.sfs {
		var blocks []*Data
		var outs []*outside
		missing := 0
		for _, g := range l.groups {
			switch {
			case g.sf != sf:
			case g.missing != nil:
				outs = append(outs, g.missing)
				missing += g.missing.count(t)
			default:
				d, err := FromTable(t, g.jobs, g.workers)
				if err != nil {
					return nil, nil, err
				}
				blocks = append(blocks, d.splitByReferences()...)
				missing += d.Missing()
			}
		}
		if missing == 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("scale factor %d: no missing entries; unchanged", sf))
			continue
		}
		if n := splitNote(l, sf); n != "" {
			rep.Notes = append(rep.Notes, n)
		}
		for _, d := range blocks {
			name := blockName(d, len(blocks))
			switch {
			case d.Missing() == 0:
				if outsideMissing(t, outs, d.Workers) {
					// The scale factor's entries with a job that does not run alone there are
					// missing on these worker types: "no missing entries" contradicted their note.
					rep.Notes = append(rep.Notes, name+": nothing to estimate; its missing entries are those the notes on jobs that cannot run alone or have no isolated rate name")
				} else {
					rep.Notes = append(rep.Notes, name+": no missing entries; unchanged")
				}
				continue
			case len(d.References()) == 0:
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v; its %d missing entries are not estimated", withWorkers(d), ErrNoReference, d.Missing()))
				rep.LeftMissing += d.Missing()
				if noRef == nil {
					noRef = fmt.Errorf("%s: %w", withWorkers(d), ErrNoReference)
				}
				continue
			}
			r, err := method.Estimate(ctx, d)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", name, err)
			}
			unc, notes := uncertaintyOf(d, r, name, o.Uncertainty)
			rep.Notes = append(rep.Notes, notes...)
			rep.fill(out, d, r, unc)
			rep.Notes = append(rep.Notes, blockNotes(d, r, name)...)
			estimated = true
		}
		for _, x := range outs {
			rep.fillOutside(out, t, x)
		}
	}
	if noRef != nil && !estimated {
		return nil, nil, noRef
	}
	if err := ctx.Err(); err != nil { // the fill does not stop for it; its table is not the whole
		return nil, nil, err
	}
	others, n := unselectedMissing(t, o.Workers)
	switch {
	case rep.Estimated == 0 && rep.KnownInfeasible == 0 && rep.LeftMissing == 0:
		rep.Notes = append(rep.Notes, completeNote(o.Workers, others, n))
	case rep.LeftMissing > 0:
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d entries stay missing (see the notes above)", rep.LeftMissing))
	}
	if n > 0 && rep.Estimated+rep.KnownInfeasible+rep.LeftMissing > 0 {
		// Counted apart from LeftMissing, which is what the estimator could not do on the
		// selection; a user who selected worker types should not take the output for complete.
		rep.Notes = append(rep.Notes, fmt.Sprintf("not selected: %s, with %d missing entries, left as they are", workerTypes(others), n))
	}
	return out, rep, nil
}

// unselectedMissing returns the worker types of t outside workers (none when workers is nil)
// that lack entries, and how many entries they lack in all.
func unselectedMissing(t *table.Table, workers []string) (others []string, n int) {
	for _, w := range t.WorkerTypes() {
		if workers == nil || slices.Contains(workers, w) {
			continue
		}
		if m := missingEntries(t, w); m > 0 {
			others = append(others, w)
			n += m
		}
	}
	return others, n
}

// completeNote says that nothing was missing: in the table, or, when workers selects some of
// its worker types and the others (n entries missing) still lack entries, on the selection
// only, naming both.
func completeNote(workers, others []string, n int) string {
	if n == 0 {
		return "the table has no missing entries; returned unchanged"
	}
	return fmt.Sprintf("no missing entries on the selected %s; returned unchanged (not selected: %s, with %d missing entries)",
		workerTypes(workers), workerTypes(others), n)
}

// workerTypes lists worker type names after "worker type" or "worker types".
func workerTypes(ws []string) string {
	if len(ws) == 1 {
		return "worker type " + ws[0]
	}
	return "worker types " + strings.Join(ws, ", ")
}

// missingEntries counts the ordered entries (a, b) of t on worker type w, a and b of one scale
// factor, that t lacks (those of job types without an isolated rate there included, as Table
// counts them).
func missingEntries(t *table.Table, w string) int {
	n := 0
	jobs := t.JobTypes()
	for _, a := range jobs {
		for _, b := range jobs {
			if a.ScaleFactor != b.ScaleFactor {
				continue
			}
			if _, _, s := t.Pair(w, a, b); s == table.Missing {
				n++
			}
		}
	}
	return n
}

// outsideMissing reports whether one of outs, on one of workers, leaves entries of t missing.
func outsideMissing(t *table.Table, outs []*outside, workers []string) bool {
	for _, x := range outs {
		if slices.Contains(workers, x.worker) && x.count(t) > 0 {
			return true
		}
	}
	return false
}

// splitNote says, when the worker types of scale factor sf fall into several groups by the job
// types with an isolated rate there, that the groups are estimated apart, naming what each
// lacks: one job type not profiled alone on a worker type sets that type apart, and the others
// no longer learn from its pairs (a reviewer's table, where a job that could not run alone on
// one type did so until it joined the group with its rate of 0: MAPE on the other types 7% to
// 11%, and their infeasible pairs no longer found).
func splitNote(l *tableLayout, sf int) string {
	var gs []group
	for _, g := range l.groups {
		if g.sf == sf && g.missing == nil {
			gs = append(gs, g)
		}
	}
	if len(gs) < 2 { // the common case, on tables of thousands of job types too: no work
		return ""
	}
	var union []table.JobType
	seen := map[table.JobType]bool{}
	for _, g := range gs {
		for _, j := range g.jobs {
			if !seen[j] {
				seen[j] = true
				union = append(union, j)
			}
		}
	}
	parts := make([]string, len(gs))
	for x, g := range gs {
		parts[x] = strings.Join(g.workers, ",")
		has := map[table.JobType]bool{}
		for _, j := range g.jobs {
			has[j] = true
		}
		var lack []string
		for _, j := range union {
			if !has[j] {
				lack = append(lack, j.Model)
			}
		}
		if len(lack) > 3 {
			lack = append(lack[:3], fmt.Sprintf("... (%d in all)", len(lack)))
		}
		if len(lack) > 0 {
			parts[x] += " (without " + strings.Join(lack, ", ") + ")"
		}
	}
	return fmt.Sprintf("scale factor %d: worker types estimated in %d groups that do not learn from each other's pairs, by the job types with an isolated rate there: %s",
		sf, len(gs), strings.Join(parts, "; "))
}

// blockName names a block in messages: by its scale factor, and its worker types when the scale
// factor has several blocks.
func blockName(d *Data, blocksOfSF int) string {
	if blocksOfSF == 1 {
		return fmt.Sprintf("scale factor %d", d.Jobs[0].ScaleFactor)
	}
	return withWorkers(d)
}

// withWorkers names a block by its scale factor and worker types, for messages about what the
// user must measure there.
func withWorkers(d *Data) string {
	return fmt.Sprintf("scale factor %d on %s", d.Jobs[0].ScaleFactor, strings.Join(d.Workers, ","))
}

// outsidePairs calls f for every ordered entry (a, b) of x's scale factor on its worker type
// with a or b outside the blocks, once each.
func (x *outside) outsidePairs(f func(a, b table.JobType)) {
	out := map[table.JobType]bool{}
	for _, j := range x.zero {
		out[j] = true
	}
	for _, j := range x.none {
		out[j] = true
	}
	for _, a := range x.all {
		if !out[a] {
			continue
		}
		for _, b := range x.all {
			f(a, b)
			if !out[b] {
				f(b, a)
			}
		}
	}
}

// count returns the number of x's entries missing in t.
func (x *outside) count(t *table.Table) int {
	n := 0
	x.outsidePairs(func(a, b table.JobType) {
		if _, _, s := t.Pair(x.worker, a, b); s == table.Missing {
			n++
		}
	})
	return n
}

// fillOutside fills x's entries missing in t whose pair has a job that cannot run alone as
// infeasible in out, counts those that stay missing, and notes both per job.
func (rep *Report) fillOutside(out, t *table.Table, x *outside) {
	zero, none := map[table.JobType]bool{}, map[table.JobType]bool{}
	for _, j := range x.zero {
		zero[j] = true
	}
	for _, j := range x.none {
		none[j] = true
	}
	filled, left := map[table.JobType]int{}, map[table.JobType]int{}
	x.outsidePairs(func(a, b table.JobType) {
		if _, _, s := t.Pair(x.worker, a, b); s != table.Missing {
			return
		}
		// Each entry is told under one job: the one that cannot run alone, else the first
		// without an isolated rate.
		switch {
		case zero[a]:
			out.SetInfeasible(x.worker, a, b)
			filled[a]++
		case zero[b]:
			out.SetInfeasible(x.worker, a, b)
			filled[b]++
		case none[a]:
			left[a]++
		default:
			left[b]++
		}
	})
	for _, j := range x.zero {
		if n := filled[j]; n > 0 {
			rep.KnownInfeasible += n
			rep.Notes = append(rep.Notes, fmt.Sprintf("scale factor %d: worker type %s: %s cannot run alone there (isolated rate 0): its %d missing entries filled as infeasible",
				x.sf, x.worker, j.Model, n))
		}
	}
	for _, j := range x.none {
		if n := left[j]; n > 0 {
			rep.LeftMissing += n
			rep.Notes = append(rep.Notes, fmt.Sprintf("scale factor %d: worker type %s: %s has no isolated rate there: its %d missing entries cannot be normalized and stay missing",
				x.sf, x.worker, j.Model, n))
		}
	}
}

// fill writes r's estimate of every pair d is missing into out and records each estimated
// entry ((job, partner) and (partner, job) separately) in rep, with its uncertainty where unc
// is not nil and the pair is predicted feasible.
//
// A large table has millions of such entries (about 4 million for 1,000 job types on 4 worker
// types), so they are counted first and rep.Entries grown once: appending them one at a time
// copied the growing slice over and over and dominated the time of Table after the fit. The
// table (filled a worker type per goroutine) and the report are filled concurrently.
func (rep *Report) fill(out *table.Table, d *Data, r *Result, unc func(w, i, k int) (Uncertainty, Uncertainty)) {
	var wg sync.WaitGroup
	wg.Go(func() {
		out.FillPairs(d.Workers, d.Jobs, func(w, i, k int) (float64, float64, bool) {
			e, ok := estimated(d, r, w, i, k)
			return e.rateA, e.rateB, ok
		})
	})
	defer wg.Wait()
	sf := d.Jobs[0].ScaleFactor
	rep.Entries = slices.Grow(rep.Entries, d.Missing())
	for w, wt := range d.Workers {
		for i, a := range d.Jobs {
			for k := i; k < len(d.Jobs); k++ {
				e, ok := estimated(d, r, w, i, k)
				if !ok {
					continue
				}
				b := d.Jobs[k]
				ea := Entry{WorkerType: wt, Job: a.Model, Partner: b.Model, ScaleFactor: sf, Normalized: e.normA, Rate: e.rateA, Infeasible: e.infeasible}
				eb := Entry{WorkerType: wt, Job: b.Model, Partner: a.Model, ScaleFactor: sf, Normalized: e.normB, Rate: e.rateB, Infeasible: e.infeasible}
				if unc != nil && !e.infeasible {
					ua, ub := unc(w, i, k)
					ea.Uncertainty, eb.Uncertainty = &ua, &ub
				}
				rep.add(ea)
				if i != k {
					rep.add(eb)
				}
			}
		}
	}
}

// feasibleEstimate reports whether r estimates some pair d is missing feasible.
func feasibleEstimate(d *Data, r *Result) bool {
	for w := range d.State {
		for i := range d.State[w] {
			for k, s := range d.State[w][i] {
				if s == table.Missing && !r.Infeasible[w][i][k] && !r.Infeasible[w][k][i] {
					return true
				}
			}
		}
	}
	return false
}

// blockNotes says what of d's estimate r rests on little: jobs with no known pair on a worker
// type (estimated there from their isolated rates and their pairs elsewhere alone), infeasible
// calls on a worker type with few pairs measured feasible (the classifier leans on the base
// rate there), and measured pairs faster together than alone, which the estimates (at most 1)
// cannot follow.
func blockNotes(d *Data, r *Result, name string) []string {
	var notes []string
	for w, wt := range d.Workers {
		feasible, infeasible, predicted := 0, 0, 0
		for i := range d.Jobs {
			for k := i; k < len(d.Jobs); k++ {
				switch s := d.State[w][i][k]; {
				case s == table.Measured:
					feasible++
				case s == table.Infeasible:
					infeasible++
				case r.Infeasible[w][i][k] || r.Infeasible[w][k][i]:
					predicted++
				}
			}
		}
		if feasible < fewFeasible && feasible > 0 && predicted > 0 {
			notes = append(notes, fmt.Sprintf("%s: worker type %s: only %s measured feasible there (%d infeasible): its %s predicted infeasible rest mostly on the base rate; a few more measured pairs there settle them",
				name, wt, plural(feasible, "pair", "pairs"), infeasible, plural(predicted, "pair", "pairs")))
		}
	}
	count, _ := knownCounts(d)
	var cold []string
	for i, j := range d.Jobs {
		var on []string
		for w, wt := range d.Workers {
			if count[w][i] == 0 {
				on = append(on, wt)
			}
		}
		switch {
		case len(on) == len(d.Workers):
			cold = append(cold, strconv.Quote(j.Model)+" (every worker type)")
		case len(on) > 0:
			cold = append(cold, fmt.Sprintf("%q (%s)", j.Model, strings.Join(on, ", ")))
		}
	}
	if len(cold) > 0 {
		notes = append(notes, fmt.Sprintf("%s: %s measured next to no job on some worker types, estimated there from isolated rates and pairs elsewhere only ('gavel-profile suggest' proposes first pairs): %s",
			name, plural(len(cold), "job", "jobs"), namesList(cold)))
	}
	above := 0
	for w := range d.State {
		for i := range d.State[w] {
			for k, s := range d.State[w][i] {
				if s == table.Measured && d.Norm[w][i][k] > 1 {
					above++
				}
			}
		}
	}
	if above > 0 {
		notes = append(notes, fmt.Sprintf("%s: %s measured with a normalized rate above 1 (faster next to the partner than alone, as under MPS); estimates are at most 1, so such pairs are understated", name, plural(above, "entry", "entries")))
	}
	return notes
}

// fewHeldOut is the count of pairs measured outside the references on a worker type (those
// cross-validation learns the errors from) below which Table says its uncertainties rest on
// priors.
const fewHeldOut = 5

// uncertaintyOf returns what fill gives each estimated pair of d's estimate r when want is set
// (nil otherwise), and notes: that there is none, where the method gives no calibrated errors
// and some pair is estimated feasible, or that they rest mostly on priors, on worker types with
// few pairs measured outside the references.
func uncertaintyOf(d *Data, r *Result, name string, want bool) (func(w, i, k int) (Uncertainty, Uncertainty), []string) {
	switch {
	case !want:
		return nil, nil
	case r.EntryError == nil || r.SumError == nil:
		if feasibleEstimate(d, r) {
			return nil, []string{name + ": no uncertainty: the method gives no calibrated errors (the pairwise model does)"}
		}
		return nil, nil
	}
	perWorker := make([]int, len(d.Workers))
	for _, q := range heldOutPairs(d, 0) {
		perWorker[q[0]]++
	}
	var few []string
	for w, n := range perWorker {
		if n < fewHeldOut {
			few = append(few, d.Workers[w])
		}
	}
	var notes []string
	if len(few) > 0 {
		notes = append(notes, fmt.Sprintf("%s: %s: fewer than %d pairs measured outside the references: the uncertainties there rest mostly on priors, the packing probabilities too low (on Gavel's table with none, 71%% of true rates fell inside the 80%% intervals, and 9%% of the pairs said below 0.05 were mis-decided)",
			name, workerTypes(few), fewHeldOut))
	}
	return uncertainty(d, r), notes
}

// fewFeasible is the count of pairs measured feasible on a worker type below which blockNotes
// says its infeasible calls rest on little (a reviewer's new GPU type with one such pair had a
// third of its pairs predicted infeasible, six times the truth).
const fewFeasible = 5

// namesList joins names, the first five and how many in all.
func namesList(names []string) string {
	const shown = 5
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s, ... (%d in all)", strings.Join(names[:shown], ", "), len(names))
}

// plural is "1 job" or "n jobs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// pairEstimate is what fill writes for one pair (i, k): normalized rates and rates of i and of
// k, all 0 when the pair is predicted infeasible.
type pairEstimate struct {
	normA, normB, rateA, rateB float64
	infeasible                 bool
}

// estimated returns r's estimate of pair (i, k) on worker type w, and false when d has the pair
// in both directions (nothing to fill).
func estimated(d *Data, r *Result, w, i, k int) (pairEstimate, bool) {
	if d.State[w][i][k] != table.Missing && d.State[w][k][i] != table.Missing {
		return pairEstimate{}, false
	}
	if r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
		return pairEstimate{infeasible: true}, true
	}
	na, nb := r.Norm[w][i][k], r.Norm[w][k][i]
	return pairEstimate{normA: na, normB: nb, rateA: na * d.Iso[w][i], rateB: nb * d.Iso[w][k]}, true
}

// add records one estimated entry.
func (rep *Report) add(e Entry) {
	rep.Entries = append(rep.Entries, e)
	rep.Estimated++
	if e.Infeasible {
		rep.InfeasiblePredicted++
	}
}

// Suggestion is one measurement worth making, in table terms (model names as in the table).
type Suggestion struct {
	WorkerType  string `json:"worker_type"`
	Job         string `json:"job"`
	Partner     string `json:"partner"`
	ScaleFactor int    `json:"scale_factor"`
	Reason      string `json:"reason"`
	// Score ranks suggestions, higher first. With the default (calibrated) estimate, cold starts
	// score 200 and up, consistency checks 100 and up, the rest their calibrated value (see
	// [Suggest]).
	Score float64 `json:"score"`
}

// SuggestTable names the budget co-location measurements most worth making next across all
// blocks of t (see [Suggest]); blocks without missing pairs contribute nothing. A block without
// references (a worker type with isolated rates but none of the others' reference pairs: see
// [Blocks]) gets the reference pairs of another block of its scale factor (see
// [referencePairs]), ranked first: until they are measured nothing there can be estimated. A
// block without references and no such other block is skipped with a note; when no block of
// the table has references, that is an error ([ErrNoReference], naming the worker types).
func SuggestTable(ctx context.Context, t *table.Table, budget int, o Options) ([]Suggestion, []string, error) {
	if budget < 0 {
		return nil, nil, fmt.Errorf("budget %d: must be 0 or more", budget)
	}
	if err := o.Aim.check(); err != nil {
		return nil, nil, err
	}
	blocks, notes, err := Blocks(t, o.Workers, false)
	if err != nil {
		return nil, nil, err
	}
	if budget == 0 { // nothing to pick: no fit (18 s on 1,000 job types)
		return []Suggestion{}, notes, nil
	}
	perSF := map[int]int{} // blocks per scale factor, for blockName
	for _, d := range blocks {
		perSF[d.Jobs[0].ScaleFactor]++
	}
	refs := blockReferences(blocks)
	var all []Suggestion
	var picked []blockPicks // the blocks Suggest picked from
	var noRef error         // the first block with missing pairs and no references
	anyMissing, allCalibrated := false, true
	for x, d := range blocks {
		if d.Missing() == 0 {
			continue
		}
		anyMissing = true
		if len(refs[x]) == 0 {
			ms, note := referencePairs(d, blocks, refs, budget)
			notes = append(notes, note)
			all = append(all, suggestions(d, ms)...)
			if noRef == nil {
				noRef = fmt.Errorf("%s: %w", withWorkers(d), ErrNoReference)
			}
			continue
		}
		method := o.Method
		if method == nil {
			method = calibrated(o.method())
		}
		r, err := method.Estimate(ctx, d)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", blockName(d, perSF[d.Jobs[0].ScaleFactor]), err)
		}
		ms, err := Suggest(d, r, budget, o.Aim)
		if err != nil {
			return nil, nil, err
		}
		if o.Aim == AimDecisions && len(ms) < budget {
			if n := unsuggestedInfeasible(d, r); n > 0 {
				notes = append(notes, fmt.Sprintf("%s: %d missing pairs predicted infeasible not suggested (aim %v)",
					blockName(d, perSF[d.Jobs[0].ScaleFactor]), n, o.Aim))
			}
		}
		if len(ms) > 0 {
			picked = append(picked, blockPicks{d, r, ms})
		}
		allCalibrated = allCalibrated && r.SumError != nil
		all = append(all, suggestions(d, ms)...)
	}
	if noRef != nil && budget > 0 && !slices.ContainsFunc(refs, func(r []int) bool { return len(r) > 0 }) {
		return nil, nil, noRef
	}
	if !anyMissing {
		notes = append(notes, "the table has no missing pairs; nothing to suggest")
	}
	// One block's picks already keep the shares, and the decisions aim has none.
	if len(picked) > 1 && allCalibrated && o.Aim != AimDecisions {
		if all, err = withinShares(all, picked, budget, o.Aim); err != nil {
			return nil, nil, err
		}
	}
	// Best first across blocks; stable, so each block's order is kept on ties.
	slices.SortStableFunc(all, func(a, b Suggestion) int { return cmp.Compare(b.Score, a.Score) })
	if len(all) > budget {
		all = all[:budget]
	}
	if anyMissing && len(all) < budget {
		notes = append(notes, fmt.Sprintf("budget %d: only %d pairs to suggest; all are", budget, len(all)))
	}
	if err := ctx.Err(); err != nil { // Suggest's greedy picks do not stop for it
		return nil, nil, err
	}
	return all, notes, nil
}

// unsuggestedInfeasible counts the missing pairs of d (unordered, per worker type) that r
// predicts infeasible: those AimDecisions does not suggest.
func unsuggestedInfeasible(d *Data, r *Result) int {
	n := 0
	for w := range d.State {
		for i := range d.State[w] {
			for k := i; k < len(d.State[w]); k++ {
				missing := d.State[w][i][k] == table.Missing || d.State[w][k][i] == table.Missing
				if missing && (r.Infeasible[w][i][k] || r.Infeasible[w][k][i]) {
					n++
				}
			}
		}
	}
	return n
}

// suggestions puts d's measurements in table terms.
func suggestions(d *Data, ms []Measurement) []Suggestion {
	out := make([]Suggestion, len(ms))
	for x, m := range ms {
		out[x] = Suggestion{WorkerType: d.Workers[m.W], Job: d.Jobs[m.I].Model, Partner: d.Jobs[m.K].Model,
			ScaleFactor: d.Jobs[m.I].ScaleFactor, Reason: m.Reason, Score: m.Score}
	}
	return out
}

// blockReferences returns each block's reference job types (every job of a block with nothing
// missing).
func blockReferences(blocks []*Data) [][]int {
	refs := make([][]int, len(blocks))
	for x, d := range blocks {
		refs[x] = d.References()
	}
	return refs
}

// refBonus scores a reference pair of a block without references: above cold starts (see
// coldBonus), since until such a block has a reference nothing on its worker types can be
// estimated at all, while a cold-start job is still estimated from its isolated rates.
const refBonus = 300

// referencePairs returns, for block d without references, the first budget of its missing pairs
// among the references of the first other block of its scale factor that has references, on
// each of d's worker types, and a note saying so (or that d is skipped, when there is no such
// block). Pairs come in the order that grows a reference set one job at a time: the first
// reference with itself, then the second with the first and with itself, and so on, so that
// after any prefix the jobs measured so far are references of d (the first pair alone makes one).
func referencePairs(d *Data, blocks []*Data, refs [][]int, budget int) ([]Measurement, string) {
	sf := d.Jobs[0].ScaleFactor
	from := -1
	for x, b := range blocks {
		if b != d && b.Jobs[0].ScaleFactor == sf && len(refs[x]) > 0 {
			from = x
			break
		}
	}
	if from < 0 {
		return nil, fmt.Sprintf("%s: %v; skipped (no other worker type of the scale factor has reference job types to suggest)", withWorkers(d), ErrNoReference)
	}
	var cand []int // the references of blocks[from], as indices of d
	for _, i := range refs[from] {
		if k := slices.Index(d.Jobs, blocks[from].Jobs[i]); k >= 0 {
			cand = append(cand, k)
		}
	}
	var ms []Measurement
	for b := range cand {
		for a := 0; a <= b; a++ {
			for w := range d.Workers {
				i, k := cand[a], cand[b]
				if d.State[w][i][k] == table.Missing || d.State[w][k][i] == table.Missing {
					ms = append(ms, Measurement{W: w, I: i, K: k, Score: refBonus, Reason: ReasonReference})
				}
			}
		}
	}
	note := fmt.Sprintf("%s: %v; suggesting the %d missing pairs there among the %d reference job types of %s, first",
		withWorkers(d), ErrNoReference, len(ms), len(cand), strings.Join(blocks[from].Workers, ","))
	if len(ms) > budget {
		ms = ms[:budget]
	}
	return ms, note
}

// blockPicks are the picks Suggest made in block d from its estimate r.
type blockPicks struct {
	d  *Data
	r  *Result
	ms []Measurement
}

// withinShares keeps the capped kinds of pick (feasibility doubt, reliance, consistency check)
// of several blocks within the shares of budget, and returns every block's suggestions (those of
// blocks without references, in all, as they are). Each block's Suggest keeps the shares of its
// own picks, but every block gets the whole budget, so a table of several scale factors would
// fill the budget with those kinds, whose scores rank high. The best of them across blocks keep
// the shares; each block then picks again with what it kept of each kind as its cap, so that a
// capped pick left out is replaced by the block's next best pick of another kind (the budget is
// filled while missing pairs remain), and its later picks do not count the one left out as
// measured.
func withinShares(all []Suggestion, picked []blockPicks, budget int, aim Aim) ([]Suggestion, error) {
	type ranked struct {
		m     Measurement
		block int
	}
	var capped []ranked
	for b, p := range picked {
		for _, m := range p.ms {
			if m.Reason == ReasonFeasibility || m.Reason == ReasonRely || m.Reason == ReasonCheck {
				capped = append(capped, ranked{m, b})
			}
		}
	}
	slices.SortStableFunc(capped, func(a, b ranked) int { return cmp.Compare(b.m.Score, a.m.Score) })
	left := budgetShares(budget, aim)
	caps := make([]shares, len(picked))
	for _, c := range capped {
		n, kept := &left.feas, &caps[c.block].feas
		switch c.m.Reason {
		case ReasonRely:
			n, kept = &left.rely, &caps[c.block].rely
		case ReasonCheck:
			n, kept = &left.checks, &caps[c.block].checks
		}
		if *n > 0 {
			*n--
			*kept++
		}
	}
	var out []Suggestion
	for _, s := range all {
		if s.Reason == ReasonReference { // from referencePairs, not a block's Suggest
			out = append(out, s)
		}
	}
	for b, p := range picked {
		ms, err := suggest(p.d, p.r, budget, aim, nil, &caps[b])
		if err != nil {
			return nil, err
		}
		out = append(out, suggestions(p.d, ms)...)
	}
	return out, nil
}
