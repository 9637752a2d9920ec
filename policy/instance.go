package policy

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gavelkit/gavel/table"
)

// ErrInput is matched (errors.Is) by every error about bad input: unknown job
// types, impossible scale factors, bad weights, missing prices, an empty
// cluster. Solver failures are lp.StatusError instead.
var ErrInput = errors.New("invalid policy input")

// InputError describes bad input. Job is the id of the job the error is
// about ("" when it is about no single job), so that a caller that read the
// jobs from a file can point at the entry.
type InputError struct {
	Job string
	Msg string
}

// Error returns the message, which names the job when there is one.
func (e *InputError) Error() string { return e.Msg }

// Is makes every InputError match ErrInput.
func (e *InputError) Is(target error) bool { return target == ErrInput }

func inputErr(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}

// jobErr is an InputError about job id.
func jobErr(id, format string, args ...any) error {
	return &InputError{Job: id, Msg: fmt.Sprintf("job %q: ", id) + fmt.Sprintf(format, args...)}
}

// combo is a single job (b < 0) or a pair of jobs with equal scale factors,
// with each member's rate per worker type (0 = cannot run there).
type combo struct {
	a, b   int
	sf     int
	ra, rb []float64
}

func (c *combo) pair() bool { return c.b >= 0 }

// rateOf returns job i's rate inside c on worker index w.
func (c *combo) rateOf(i, w int) float64 {
	if i == c.a {
		return c.ra[w]
	}
	return c.rb[w]
}

// runnable reports whether c may be placed on worker index w.
func (c *combo) runnable(w int) bool {
	if c.pair() {
		return c.ra[w] > 0 && c.rb[w] > 0
	}
	return c.ra[w] > 0
}

// instance is a validated Problem in index form. Jobs are sorted by id,
// worker types by name (only those with GPUs).
type instance struct {
	p       *Problem
	jobs    []Job
	idx     map[string]int
	workers []string
	cap     []float64
	total   float64     // GPUs
	rate    [][]float64 // [job][worker] isolated rate; 0 where the job cannot run (rate 0 or sf > GPUs)
	weight  []float64
	prop    []float64 // proportional throughput (§2.4), from the table's rates
	iso     []float64 // Gavel's isolated throughput (§2.4): FTF's reference
	equal   []float64 // equal-share rate: what the isolated allocation delivers
	combos  []combo   // singles first (index = job index), then pairs
	byJob   [][]int   // job → its combinations, own single first
	// badPair is the first measured pair whose rates are NaN, infinite or
	// negative that pairLookup met: the input error addPairs returns.
	badPair error
	// oddSets are the job sets whose odd-set rows (see oddsets.go) every
	// LP of this instance carries; found lazily by builder.solve.
	oddSets [][]int
	oddKeys map[string]bool
	// covers are the gang covers whose rows (see covers.go) every LP of
	// this instance carries; found lazily by builder.solve.
	covers    []cover
	coverKeys map[string]bool
	// cliques are the conflict cliques whose rows (see cliques.go) every LP
	// of this instance carries, once cliquesMade.
	cliques     []clique
	cliquesMade bool
	// roundCuts are the inequalities (see separate) that every LP of this
	// instance carries; found lazily by builder.solve.
	roundCuts []roundCut
	// separationOff stops separate once an LP of the instance ended without
	// its solution proven realizable: a cut found later could exclude that
	// solution, which water filling's later LPs rely on (solveAtLevels).
	separationOff bool
	// roundPool holds the rounds (combination, worker type) that
	// decompositions of this instance's solutions found, to start the next.
	roundPool [][][2]int
}

// checkID rejects job ids that would make combination keys ambiguous: a
// pair's key is "a+b", so an id "a+b" could not be told from the pair of
// jobs "a" and "b".
func checkID(id string) error {
	if strings.Contains(id, "+") {
		return fmt.Errorf("id %q contains '+', which joins the ids of co-located pairs (\"a+b\")", id)
	}
	return nil
}

// newInstance validates p and builds the singles.
func newInstance(p *Problem) (*instance, error) {
	if p == nil || p.Table == nil {
		return nil, inputErr("no throughput table")
	}
	in := &instance{p: p, idx: map[string]int{}}
	if err := in.setCluster(p.Cluster); err != nil {
		return nil, err
	}
	for i, j := range p.Jobs {
		if j.ID == "" {
			return nil, inputErr("job %d (in the order given): empty id", i)
		}
		if err := checkID(j.ID); err != nil {
			return nil, jobErr(j.ID, "%v", err)
		}
	}
	// Jobs in id order make the LP, and so the result, independent of the
	// order the caller gives them in.
	in.jobs = append([]Job(nil), p.Jobs...)
	sort.SliceStable(in.jobs, func(a, b int) bool { return in.jobs[a].ID < in.jobs[b].ID })
	for i, j := range in.jobs {
		if err := in.addJob(i, j); err != nil {
			return nil, in.firstJobError(p.Jobs, err)
		}
	}
	if err := checkJobEntities(in.jobs, p.Entities); err != nil {
		return nil, in.firstJobError(p.Jobs, err)
	}
	in.iso = in.isolated(in.rate)
	in.equal = in.equalShares()
	return in, nil
}

// setCluster keeps the worker types that have GPUs, in name order.
func (in *instance) setCluster(c Cluster) error {
	for _, w := range c.WorkerTypes() {
		n := c[w]
		if n < 0 {
			return inputErr("cluster: worker type %q: negative count %d", w, n)
		}
		if n > 0 {
			in.workers = append(in.workers, w)
			in.cap = append(in.cap, float64(n))
			in.total += float64(n)
		}
	}
	if len(in.workers) == 0 {
		return inputErr("cluster is empty: no worker type has GPUs")
	}
	return nil
}

// firstJobError returns the error of the first of the given jobs, in the caller's order, that
// addJob or the entity check refuses on its own, so that a jobs file's first bad entry is the
// one named; err (of jobs in id order) when none is (a duplicate id).
func (in *instance) firstJobError(given []Job, err error) error {
	for _, j := range given {
		alone := &instance{p: in.p, idx: map[string]int{}, workers: in.workers, cap: in.cap, total: in.total}
		if e := alone.addJob(0, j); e != nil {
			return e
		}
		if e := checkJobEntities([]Job{j}, in.p.Entities); e != nil {
			return e
		}
	}
	return err
}

// addJob validates job j, the i-th in id order, and adds its single.
func (in *instance) addJob(i int, j Job) error {
	if _, dup := in.idx[j.ID]; dup {
		return jobErr(j.ID, "duplicate id")
	}
	in.idx[j.ID] = i
	if j.Weight != 0 {
		if err := CheckWeight(j.Weight); err != nil {
			return jobErr(j.ID, "%v (0 means 1)", err)
		}
	}
	if j.Type.ScaleFactor < 1 {
		return jobErr(j.ID, "scale factor %d must be at least 1", j.Type.ScaleFactor)
	}
	if !slices.ContainsFunc(in.cap, func(n float64) bool { return n >= float64(j.Type.ScaleFactor) }) {
		return jobErr(j.ID, "scale factor %d exceeds the GPUs of every worker type (cluster %s)", j.Type.ScaleFactor, in.p.Cluster)
	}
	if !in.p.Table.HasJobType(j.Type) {
		return jobErr(j.ID, "job type %s is not in the throughput table", j.Type)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"total steps", j.TotalSteps}, {"steps done", j.StepsDone}, {"time run", j.TimeRun}, {"arrival", j.Arrival}, {"SLO", j.SLO}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return jobErr(j.ID, "%s %v must be finite and non-negative", f.name, f.v)
		}
	}
	row, raw, err := in.rates(j)
	if err != nil {
		return err
	}
	in.rate = append(in.rate, row)
	in.prop = append(in.prop, in.proportionalRow(raw))
	in.weight = append(in.weight, j.EffectiveWeight())
	in.combos = append(in.combos, combo{a: i, b: -1, sf: j.Type.ScaleFactor, ra: row})
	in.byJob = append(in.byJob, []int{i})
	return nil
}

// rates returns j's isolated rate per worker type as the table gives it
// (raw) and as the job can use it (row: 0 where the type has fewer GPUs
// than its scale factor, so it can never get sf GPUs of it at once).
func (in *instance) rates(j Job) (row, raw []float64, err error) {
	row = make([]float64, len(in.workers))
	raw = make([]float64, len(in.workers))
	runs := false
	for w, wt := range in.workers {
		r, ok := in.p.Table.Isolated(wt, j.Type)
		if !ok {
			// Absent means not measured, which a planner cannot guess; a job that cannot run
			// there is recorded as a rate of 0.
			return nil, nil, jobErr(j.ID, "job type %s has no isolated rate on worker type %q in the table (measure it, or record 0 if it cannot run there, or leave the type out of the cluster)", j.Type, wt)
		}
		if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			return nil, nil, jobErr(j.ID, "job type %s: bad rate %v on worker type %q", j.Type, r, wt)
		}
		raw[w] = r
		if float64(j.Type.ScaleFactor) <= in.cap[w] {
			row[w] = r
		}
		runs = runs || row[w] > 0
	}
	if !runs {
		return nil, nil, jobErr(j.ID, "job type %s cannot run on any worker type of cluster %s (rate 0 or too few GPUs)", j.Type, in.p.Cluster)
	}
	return row, raw, nil
}

// checkJobEntities checks the entities the jobs name (when there are
// entities at all: without them, jobs are their own entities).
func checkJobEntities(jobs []Job, entities map[string]Entity) error {
	if entities == nil {
		return nil
	}
	for _, j := range jobs {
		if j.Entity == "" {
			continue
		}
		e, ok := entities[j.Entity]
		if !ok {
			return jobErr(j.ID, "entity %q is not defined", j.Entity)
		}
		if err := CheckWeight(e.Weight); err != nil {
			return inputErr("entity %q: %v", j.Entity, err)
		}
		if e.Policy != "" && e.Policy != EntityFairness && e.Policy != EntityFIFO {
			return inputErr("entity %q: policy %q: want %q or %q", j.Entity, e.Policy, EntityFairness, EntityFIFO)
		}
	}
	return nil
}

func (in *instance) m() int           { return len(in.jobs) }
func (in *instance) nw() int          { return len(in.workers) }
func (in *instance) sf(i int) float64 { return float64(in.jobs[i].Type.ScaleFactor) }

// proportionalRow returns Gavel's proportional throughput Σ_w T_w·n_w/N
// (gavel-reference §2.4) of a row of table rates. It is computed from the
// table as Gavel does, including worker types with fewer GPUs than the
// job's scale factor: it is the max-min normalizer, and changing it would
// change Gavel's objective.
func (in *instance) proportionalRow(row []float64) float64 {
	s := 0.0
	for w, r := range row {
		s += r * in.cap[w] / in.total
	}
	return s
}

// lasView returns the rates and normalizers of the max-min family (§3.1,
// §3.2): the table's rates and Gavel's proportional rate, or, agnostic,
// rate 1 wherever the job can run and normalizer 1 (Gavel's T ≡ 1 gives
// prop = Σ_w n_w/N = 1), so that attained GPU time is what is equalized.
func (in *instance) lasView(md mode) (rateFunc, []float64) {
	if md != agnostic {
		return in.trueRates(), in.prop
	}
	ones := make([]float64, in.m())
	for i := range ones {
		ones[i] = 1
	}
	return in.viewRates(in.agnosticRates()), ones
}

// isolated returns iso_i = Σ_w T_iw·n_w / max(m·sf_i, N), the rate of an
// equal 1/m share of the cluster (§2.4).
func (in *instance) isolated(rate [][]float64) []float64 {
	out := make([]float64, len(rate))
	m := float64(len(rate))
	for i, row := range rate {
		den := math.Max(m*in.sf(i), in.total)
		for w, r := range row {
			out[i] += r * in.cap[w] / den
		}
	}
	return out
}

// equalShares returns each job's rate under an equal split of the cluster
// (the isolated allocation, isolatedFractions): 1/m of every worker type's
// GPUs the job can run on, at most full time, Σ_w T_w·n_w / max(m·sf, N_i)
// with N_i the GPUs of those types. Gavel's isolated throughput divides by
// max(m·sf, N) instead, counting GPUs the job cannot use, so that with
// fewer jobs than GPUs the equal split itself would read as faster than
// the equal share.
func (in *instance) equalShares() []float64 {
	out := make([]float64, in.m())
	m := float64(in.m())
	for i, row := range in.rate {
		usable, s := 0.0, 0.0
		for w, r := range row {
			if r > 0 {
				usable += in.cap[w]
				s += r * in.cap[w]
			}
		}
		out[i] = s / math.Max(m*in.sf(i), usable)
	}
	return out
}

// agnosticRates returns 1 wherever a job can run and 0 elsewhere: the
// heterogeneity-agnostic view of LAS (§3.1.2), minus Gavel's allocation on
// types where the job cannot run.
func (in *instance) agnosticRates() [][]float64 {
	out := make([][]float64, in.m())
	for i, row := range in.rate {
		out[i] = make([]float64, len(row))
		for w, r := range row {
			if r > 0 {
				out[i][w] = 1
			}
		}
	}
	return out
}

// referenceRates gives every job one rate on every type it can run on: its
// rate on the reference worker type, or (ref == "") its fastest isolated
// rate. It is the agnostic view of FTF and makespan without Gavel's
// hard-coded "v100" (§11.6).
func (in *instance) referenceRates(ref string) ([][]float64, error) {
	out := make([][]float64, in.m())
	for i, row := range in.rate {
		v := 0.0
		if ref == "" {
			for _, r := range row {
				v = math.Max(v, r)
			}
		} else {
			r, ok := in.p.Table.Isolated(ref, in.jobs[i].Type)
			if !ok || r <= 0 {
				return nil, jobErr(in.jobs[i].ID, "job type %s has no positive rate on reference worker type %q", in.jobs[i].Type, ref)
			}
			v = r
		}
		out[i] = make([]float64, len(row))
		for w, r := range row {
			if r > 0 {
				out[i][w] = v
			}
		}
	}
	return out, nil
}

// pairRates is a job-type pair's rates per worker type, and its score:
// the best summed normalized rate over worker types.
type pairRates struct {
	ra, rb []float64
	score  float64
	ok     bool // measured with both rates positive on some usable worker type
}

// pairLookup returns the pair rates of jobs a and b, cached by job type
// (in a dense table: it is called for every pair of same-sf jobs).
func (in *instance) pairLookup() func(a, b int) *pairRates {
	typeIdx := map[table.JobType]int{}
	ti := make([]int, in.m())
	for i, j := range in.jobs {
		k, ok := typeIdx[j.Type]
		if !ok {
			k = len(typeIdx)
			typeIdx[j.Type] = k
		}
		ti[i] = k
	}
	cache := make([]*pairRates, len(typeIdx)*len(typeIdx))
	return func(a, b int) *pairRates {
		k := ti[a]*len(typeIdx) + ti[b]
		if r := cache[k]; r != nil {
			return r
		}
		ta, tb := in.jobs[a].Type, in.jobs[b].Type
		r := &pairRates{ra: make([]float64, in.nw()), rb: make([]float64, in.nw())}
		for w, wt := range in.workers {
			if in.rate[a][w] == 0 || in.rate[b][w] == 0 {
				continue
			}
			x, y, s := in.p.Table.Pair(wt, ta, tb)
			if s == table.Measured && in.badPair == nil && (!(x >= 0) || !(y >= 0) || math.IsInf(x, 0) || math.IsInf(y, 0)) {
				// As a bad isolated rate is: skipped, it passed for "not measured".
				in.badPair = inputErr("worker type %q: pair %s + %s: rates [%v, %v] must be finite and non-negative", wt, ta, tb, x, y)
			}
			if s != table.Measured || !(x > 0) || !(y > 0) || math.IsInf(x, 0) || math.IsInf(y, 0) {
				continue
			}
			r.ra[w], r.rb[w] = x, y
			r.ok = true
			r.score = math.Max(r.score, x/in.rate[a][w]+y/in.rate[b][w])
		}
		cache[k] = r
		return r
	}
}

// addPairs adds a pair combination for every two jobs with equal scale
// factors whose pair is measured (non-infeasible) with both rates positive
// on some worker type; with maxPartners > 0 a pair is kept only if it is
// among the top maxPartners partners (by best combined normalized rate) of
// one of its members. Gavel pairs all same-sf jobs (§11.19).
func (in *instance) addPairs(maxPartners int) error {
	in.reservePairs(maxPartners)
	in.walkPairs(maxPartners, func(a, b int, r *pairRates) { in.addPair(a, b, r) })
	return in.badPair
}

// reservePairs makes room for as many pairs as addPairs can add, so that
// adding them does not regrow in.combos and in.byJob.
func (in *instance) reservePairs(maxPartners int) {
	for _, g := range in.sfGroups() {
		if maxPartners > 0 {
			in.combos = slices.Grow(in.combos, len(g)*maxPartners)
			continue
		}
		in.combos = slices.Grow(in.combos, len(g)*(len(g)-1)/2)
		for _, a := range g {
			in.byJob[a] = slices.Grow(in.byJob[a], len(g)-1)
		}
	}
}

// walkPairs calls visit, in id order, for every pair addPairs adds (a
// before b) with its rates, and leaves the first bad measured pair met in
// in.badPair.
func (in *instance) walkPairs(maxPartners int, visit func(a, b int, r *pairRates)) {
	in.cliquesMade = false // the clique family depends on the combinations
	lookup := in.pairLookup()
	for _, g := range in.sfGroups() {
		var keep bitMatrix
		if maxPartners > 0 {
			keep = in.topPartners(g, maxPartners, lookup)
		}
		for ai, a := range g {
			for bi := ai + 1; bi < len(g); bi++ {
				b := g[bi]
				if keep.n > 0 && !keep.has(ai, bi) {
					continue
				}
				if r := lookup(a, b); r.ok {
					visit(a, b, r)
				}
			}
		}
	}
}

// addPair adds the pair combination of jobs a < b and returns its index.
func (in *instance) addPair(a, b int, r *pairRates) int {
	c := len(in.combos)
	in.combos = append(in.combos, combo{a: a, b: b, sf: in.jobs[a].Type.ScaleFactor, ra: r.ra, rb: r.rb})
	in.byJob[a] = append(in.byJob[a], c)
	in.byJob[b] = append(in.byJob[b], c)
	return c
}

// sfGroups returns the job indices grouped by scale factor (ascending),
// each group in id order: pairs exist only within a group (§11.2).
func (in *instance) sfGroups() [][]int {
	groups := map[int][]int{}
	for i, j := range in.jobs {
		groups[j.Type.ScaleFactor] = append(groups[j.Type.ScaleFactor], i)
	}
	sfs := make([]int, 0, len(groups))
	for sf := range groups {
		sfs = append(sfs, sf)
	}
	sort.Ints(sfs)
	out := make([][]int, len(sfs))
	for k, sf := range sfs {
		out[k] = groups[sf]
	}
	return out
}

// bitMatrix is a symmetric n×n set of position pairs.
type bitMatrix struct {
	n    int
	bits []uint64
}

func newBitMatrix(n int) bitMatrix { return bitMatrix{n: n, bits: make([]uint64, (n*n+63)/64)} }

func (m bitMatrix) set(a, b int) {
	for _, k := range [2]int{a*m.n + b, b*m.n + a} {
		m.bits[k/64] |= 1 << (k % 64)
	}
}

func (m bitMatrix) has(a, b int) bool { k := a*m.n + b; return m.bits[k/64]&(1<<(k%64)) != 0 }

// topPartners returns the pairs of group g (by position in g) that are
// among the k best-scoring partners of one of their members; ties go to
// the partner earlier in id order. Each job keeps its best k by insertion
// (O(|g|·k)), not by sorting all |g| candidates.
func (in *instance) topPartners(g []int, k int, lookup func(a, b int) *pairRates) bitMatrix {
	keep := newBitMatrix(len(g))
	type cand struct {
		b     int // position in g (g is in index order: ties as by index)
		score float64
	}
	better := func(x, y cand) bool { return x.score > y.score || (x.score == y.score && x.b < y.b) }
	best := make([]cand, 0, k+1)
	for ai, a := range g {
		best = best[:0]
		for bi, b := range g {
			if b == a {
				continue
			}
			r := lookup(min(a, b), max(a, b))
			if !r.ok {
				continue
			}
			c := cand{bi, r.score}
			if len(best) == k && !better(c, best[k-1]) {
				continue
			}
			if len(best) < k {
				best = append(best, c)
			} else {
				best[k-1] = c
			}
			for i := len(best) - 1; i > 0 && better(best[i], best[i-1]); i-- {
				best[i], best[i-1] = best[i-1], best[i]
			}
		}
		for _, c := range best {
			keep.set(ai, c.b)
		}
	}
	return keep
}

// key returns the Combination of combo c.
func (in *instance) key(c int) Combination {
	cb := &in.combos[c]
	if !cb.pair() {
		return Single(in.jobs[cb.a].ID)
	}
	return PairOf(in.jobs[cb.a].ID, in.jobs[cb.b].ID)
}

// allocation turns per-combination fractions x[c][w] into an Allocation with
// effective and normalized throughputs from the true rates. Values within
// 1e-9 of 0 or 1 are snapped; every single appears, pairs only when used.
func (in *instance) allocation(x [][]float64) *Allocation {
	a := &Allocation{
		Fractions:  map[Combination]map[string]float64{},
		Effective:  map[string]float64{},
		Normalized: map[string]float64{},
		EqualShare: map[string]float64{},
	}
	// Per job (index), summed in the order the map was: combination by
	// combination, worker type by worker type.
	eff := make([]float64, in.m())
	snapped := make([]float64, in.nw())
	for c := range in.combos {
		cb := &in.combos[c]
		used := false
		for w := range in.workers {
			v := 0.0
			if x[c] != nil {
				v = x[c][w]
			}
			switch {
			case v < 1e-9:
				v = 0
			case v > 1-1e-9 && v < 1+1e-6:
				v = 1
			}
			snapped[w] = v
			if v > 0 {
				used = true
				eff[cb.a] += cb.ra[w] * v
				if cb.pair() {
					eff[cb.b] += cb.rb[w] * v
				}
			}
		}
		if cb.pair() && !used {
			continue // most pairs: no map for them
		}
		fr := make(map[string]float64, in.nw())
		for w, wt := range in.workers {
			fr[wt] = snapped[w]
		}
		a.Fractions[in.key(c)] = fr
	}
	for i, j := range in.jobs {
		a.Effective[j.ID] = eff[i]
		a.EqualShare[j.ID] = in.equal[i]
		a.Normalized[j.ID] = eff[i] / in.equal[i] // > 0: every job runs somewhere
	}
	return a
}

// emptyAllocation is returned when there are no jobs.
func emptyAllocation() *Allocation {
	return &Allocation{Fractions: map[Combination]map[string]float64{}, Effective: map[string]float64{},
		Normalized: map[string]float64{}, EqualShare: map[string]float64{}}
}

// throughputAt returns each job's throughput Σ_{c∋i} Σ_w rate(i,c,w)·x_cw
// at x, with x clipped to [0, 1] so that solver noise cannot add rate.
func (in *instance) throughputAt(x [][]float64, rate rateFunc) []float64 {
	out := make([]float64, in.m())
	for i := range in.jobs {
		for _, c := range in.byJob[i] {
			for w := range in.workers {
				if v := math.Min(1, math.Max(0, x[c][w])); v > 0 {
					out[i] += rate(i, c, w) * v
				}
			}
		}
	}
	return out
}

// setMaxMinTerms sets a's Terms to sf_i·eff_i/(w_i·prop_i) per job (eff in
// the rates' view), its Normalizer to prop, and its Objective to the
// smallest term: the max-min value.
func (in *instance) setMaxMinTerms(a *Allocation, x [][]float64, rate rateFunc, prop []float64) {
	a.Terms, a.Normalizer = map[string]float64{}, map[string]float64{}
	a.Objective = math.Inf(1)
	for i, e := range in.throughputAt(x, rate) {
		id := in.jobs[i].ID
		a.Terms[id] = in.sf(i) * e / (in.weight[i] * prop[i])
		a.Normalizer[id] = prop[i]
		a.Objective = math.Min(a.Objective, a.Terms[id])
	}
}

// maxMinMeaning describes the max-min objective of a view.
func maxMinMeaning(md mode) string {
	if md == agnostic {
		return "min over jobs of scale_factor·time_share/weight (GPU time, every GPU alike)"
	}
	return "min over jobs of scale_factor·effective/(weight·proportional), proportional = the job's rate averaged over all GPUs of the cluster (Gavel's normalizer)"
}
