package estimate

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gavelkit/gavel/table"
)

// Reasons a measurement is suggested.
const (
	ReasonPacking     = "packing decision could flip"
	ReasonUncertain   = "estimate least certain"
	ReasonFeasibility = "feasibility in doubt"
	ReasonCoverage    = "job has few measurements"
	ReasonCheck       = "estimate disagrees with similar jobs"
	ReasonRely        = "planner would rely on it"
	ReasonReference   = "reference pair: worker type has no reference job type"
)

// Aim is what [Suggest] spends a budget on.
//
// The balanced aim gives a share of the picks to pairs whose feasibility is in doubt, to pairs a
// packing planner would rely on, and to consistency checks; each serves something besides the
// packing decision (infeasible precision and recall, the allocation's quality, rates of
// little-known jobs), and together they cost packing agreement. On the Gavel table (R = 16,
// P = 0.2, active, one run a seed; chosen on hold-out seeds 10-57 among variants of which
// terms to drop, checked on 58-81, which agreed), decisions against balanced over seeds 10-81,
// paired: agreement 91.4% → 93.9% (+2.5 ± 0.2 points, better on 68 of 72 seeds), MAPE 7.82% →
// 7.56% (−0.26 ± 0.10), infeasible precision 0.85 → 0.73 and recall 0.88 → 0.83 (pairs predicted
// infeasible are never measured, so a false alarm stays), and the max-min packed downstream
// ratio 0.75 → 0.64 (−0.11 ± 0.04; 21 seeds below 0.6 against 12; dropping the reliance
// share alone cost −0.08 ± 0.03 of it on seeds 10-57). Dropping only the feasibility share
// (+0.8 points), only reliance (+0.5) or only the checks (+0.6, MAPE +0.6) gave less. Measured
// against balanced as it was before pairs predicted infeasible had their flip weighed by
// feasibility (see calibratedValue), which gained balanced 0.7 points of agreement on fresh
// seeds 16-39: the gap is now nearer 1.8 points.
type Aim int

const (
	// AimBalanced (the default) weighs packing decisions, feasibility doubt, reliance and
	// consistency checks as Suggest describes.
	AimBalanced Aim = iota
	// AimDecisions leaves out the feasibility, reliance and check terms, and pairs predicted
	// infeasible; cold starts still come first, and SuggestTable's reference pairs for a
	// worker type without references. Calibrated, the flip probability alone ranks the rest.
	AimDecisions
)

// ParseAim returns the aim named "balanced" or "decisions" (as Aim.String writes it).
func ParseAim(s string) (Aim, error) {
	for _, a := range []Aim{AimBalanced, AimDecisions} {
		if s == a.String() {
			return a, nil
		}
	}
	return 0, fmt.Errorf("%q: want balanced or decisions", s)
}

// check returns an error for an aim that is not one of the constants.
func (a Aim) check() error {
	if a != AimBalanced && a != AimDecisions {
		return fmt.Errorf("aim %v: unknown", a)
	}
	return nil
}

func (a Aim) String() string {
	switch a {
	case AimBalanced:
		return "balanced"
	case AimDecisions:
		return "decisions"
	}
	return fmt.Sprintf("Aim(%d)", int(a))
}

// Measurement is one co-location measurement worth making in a block (Data): job types d.Jobs[I]
// and d.Jobs[K] together on worker type d.Workers[W]. Score ranks measurements, higher first, and
// Reason is one of the Reason constants. SuggestTable gives the same in table terms (Suggestion).
type Measurement struct {
	W, I, K int
	Score   float64
	Reason  string
	flip    float64 // the calibrated score without feasibility doubt or reliance
	feas    float64 // the feasibility-doubt term of a calibrated score
	rely    float64 // the reliance term of a calibrated score (see relyValue)
}

// priorSpread is the log-rate uncertainty of an entry whose jobs have no measurement on its
// worker type; it shrinks as 1/sqrt(1+measurements) of each job.
const priorSpread = 0.5

// coverWeight and diversity weigh coverage against the other terms of the uncalibrated ranking;
// with uncWeight they were chosen on hold-out seeds 10-12 of the Gavel table (not the reported
// seeds 0-2).
const coverWeight = 20

const diversity = 0.01

const uncWeight = 3

// Suggest chooses budget missing pairs of d (unordered, on any worker type) worth measuring,
// given the estimate r, greedily.
//
// When r carries a calibrated pair-sum error (Result.SumError, from [Pairwise] with
// Calibrate), each pick maximizes
//
//	P(packing decision wrong) + feasibility doubt + reliance + cold start
//
// where the decision (do the two normalized rates sum to more than 1?) is wrong with probability
// Φ(−|sum − 1|/σ) (times 1 − the infeasibility score for a pair predicted infeasible, which has
// a decision only if it can share after all), σ² being the worker type's cross-validated sum
// error squared, scaled by how
// little is known of the pair's two jobs there compared with the pairs it was measured on (see
// evidencePower), plus the entries' own spread (r.Spread, from bootstrap fits) in rate units;
// feasibility doubt (see feasBand) counts for a limited share of the picks; so does reliance
// (see relyValue): how much a packing planner, whatever its policy, would act on the pair's
// estimate and how much that estimate could be too high; cold start
// (coldBonus) goes to pairs with a job that has no known entry on the worker type, which the
// model cannot place at all (not in a block with no pair measured feasible, where nothing is
// fitted: multi-GPU jobs that never share); a consistency check (checkBonus, see consistencyChecks)
// re-measures a little-known job whose row disagrees with the references most like it. Job
// counts include the picks made so far, so one call's picks spread over poorly known jobs
// rather than piling onto one.
//
// Otherwise each pick maximizes
//
//	coverage + flip + uncertainty + feasibility doubt
//
// where coverage rewards jobs (and job/worker-type combinations) with few measurements, next to
// well-measured partners that have been used least; flip is the probability, under a normal
// error model with a prior spread, that the pair's packing decision is wrong; uncertainty is its
// log-rate spread.
// Counts are updated after every pick. Ties go to the lower worker, job, partner index.
//
// That is the balanced aim ([AimBalanced]); with [AimDecisions] the feasibility, reliance and
// check terms are left out and pairs predicted infeasible are not candidates.
func Suggest(d *Data, r *Result, budget int, aim Aim) ([]Measurement, error) {
	return suggest(d, r, budget, aim, nil, nil)
}

// shares are the most picks a Suggest call makes for each capped reason.
type shares struct{ feas, rely, checks int }

// budgetShares are the shares of a call of budget picks.
func budgetShares(budget int, aim Aim) shares {
	if aim == AimDecisions {
		return shares{}
	}
	// Feasibility doubt takes at most a share of the picks: measuring a doubtful pair mostly
	// finds it infeasible, which says nothing about rates. Reliance takes its own share: those
	// pairs are rarely near the line, so measuring them seldom fixes a packing decision; it
	// fixes the rates a planner acts on. Rounded down: a call of a few picks is left to the
	// flip probability alone.
	return shares{
		feas:   max(1, int(feasShare*float64(budget))),
		rely:   int(relyShare * float64(budget)),
		checks: max(1, int(checkShare*float64(budget))),
	}
}

// sameShape reports an estimate r that is not of block d: suggestions read from it would name
// pairs of another block.
func sameShape(d *Data, r *Result) error {
	W, n := len(d.Workers), len(d.Jobs)
	if r == nil || len(r.Norm) != W || len(r.Infeasible) != W {
		return fmt.Errorf("the estimate is not of this block (%d worker types)", W)
	}
	for w := range W {
		if len(r.Norm[w]) != n || len(r.Infeasible[w]) != n || (n > 0 && (len(r.Norm[w][0]) != n || len(r.Infeasible[w][0]) != n)) {
			return fmt.Errorf("the estimate is not of this block (%d job types)", n)
		}
	}
	return nil
}

// suggest is Suggest choosing only among the pairs pool allows (every missing pair when pool is
// nil): [Active] on a partial truth can measure only what the truth has. caps, when not nil,
// replace the budget's shares.
func suggest(d *Data, r *Result, budget int, aim Aim, pool func(w, i, k int) bool, caps *shares) ([]Measurement, error) {
	if budget < 0 {
		return nil, fmt.Errorf("budget %d: must be 0 or more", budget)
	}
	if err := aim.check(); err != nil {
		return nil, err
	}
	if err := sameShape(d, r); err != nil {
		return nil, err
	}
	st := newPicker(d, r)
	st.aim = aim
	cands := st.candidates(pool)
	var out []Measurement
	taken := make([]bool, len(cands))
	sh := budgetShares(budget, aim)
	if caps != nil {
		sh = *caps
	}
	feasLeft, relyLeft := sh.feas, sh.rely
	st.checksLeft = sh.checks
	rank := ranking{st: st, cands: cands, taken: taken}
	for len(out) < budget {
		best, bestV := rank.best(feasLeft > 0, relyLeft > 0)
		if best < 0 {
			break
		}
		taken[best] = true
		m := cands[best]
		if r.SumError != nil {
			m.Reason = m.reason(feasLeft > 0, relyLeft > 0)
		}
		if c, why := st.cover(m); c > m.Score {
			m.Reason = why
		}
		// A share counts the picks made for its reason, not a cold start or check whose largest
		// calibrated term happens to be of its kind.
		switch m.Reason {
		case ReasonFeasibility:
			feasLeft--
		case ReasonRely:
			relyLeft--
		}
		m.Score = bestV
		out = append(out, m)
		st.pick(m)
		if r.SumError != nil {
			rank.rescore(m)
		}
	}
	return out, nil
}

// ranking finds Suggest's next pick: the untaken candidate of highest value (score, capped
// while a share is used up, plus cover), the first on ties.
//
// With a calibrated estimate it keeps each candidate's value in a heap, since a pick changes
// only those on its worker type with one of its jobs (rescore) and, when a share or the checks
// run out, all of them; recomputing every value on every pick took most of Suggest's time on
// large tables (about 5 s for 100 picks at 1,000 x 4), and scanning every value for the best
// and for the pick's pairs 2 s more.
type ranking struct {
	st    *picker
	cands []Measurement
	taken []bool
	vals  []float64 // calibrated only; nil until the first pick
	state [3]bool   // feasibility share, reliance share, checks left when vals were computed
	order valueHeap // the untaken candidates by vals, calibrated only
	byJob [][][]int32
}

// best returns the index and value of the next pick, -1 when every candidate is taken.
func (rk *ranking) best(feas, rely bool) (int, float64) {
	best, bestV := -1, math.Inf(-1)
	if rk.st.r.SumError == nil {
		for x, m := range rk.cands {
			if rk.taken[x] {
				continue
			}
			if c, _ := rk.st.cover(m); m.Score+c > bestV {
				best, bestV = x, m.Score+c
			}
		}
		return best, bestV
	}
	if state := [3]bool{feas, rely, rk.st.checksLeft > 0}; rk.vals == nil || state != rk.state {
		rk.state = state
		rk.revalue()
	}
	for rk.order.Len() > 0 && rk.taken[rk.order.x[0]] {
		heap.Pop(&rk.order)
	}
	if rk.order.Len() == 0 {
		return -1, bestV
	}
	if x := int(rk.order.x[0]); rk.vals[x] > bestV { // as a scan would: never a NaN or −Inf
		return x, rk.vals[x]
	}
	return -1, bestV
}

// revalue computes every candidate's value for rk.state and orders the untaken ones.
func (rk *ranking) revalue() {
	if rk.vals == nil {
		rk.vals = make([]float64, len(rk.cands))
		rk.indexJobs()
	}
	rk.order = valueHeap{vals: rk.vals, pos: make([]int32, len(rk.cands))}
	for x := range rk.cands {
		rk.vals[x] = rk.value(x)
		rk.order.pos[x] = -1
		if !rk.taken[x] {
			rk.order.pos[x] = int32(len(rk.order.x))
			rk.order.x = append(rk.order.x, int32(x))
		}
	}
	heap.Init(&rk.order)
}

// indexJobs lists, per worker type and job, the candidates with that job.
func (rk *ranking) indexJobs() {
	rk.byJob = make([][][]int32, len(rk.st.d.Workers))
	for w := range rk.byJob {
		rk.byJob[w] = make([][]int32, len(rk.st.d.Jobs))
	}
	for x, c := range rk.cands {
		rk.byJob[c.W][c.I] = append(rk.byJob[c.W][c.I], int32(x))
		if c.K != c.I {
			rk.byJob[c.W][c.K] = append(rk.byJob[c.W][c.K], int32(x))
		}
	}
}

// value is candidate x's calibrated score, capped as rk.state says, plus its cover.
func (rk *ranking) value(x int) float64 {
	m := rk.cands[x]
	c, _ := rk.st.cover(m)
	return m.capped(rk.state[0], rk.state[1]) + c
}

// rescore updates the calibrated values that the pick m changed: those of pairs on m's worker
// type with one of m's jobs, whose known-entry counts (behind σ and cold start) and consistency
// checks it changed. Only m itself has both jobs, and it is taken.
func (rk *ranking) rescore(m Measurement) {
	for _, j := range []int{m.I, m.K} {
		for _, x := range rk.byJob[m.W][j] {
			if rk.taken[x] {
				continue
			}
			c := rk.cands[x]
			rk.cands[x] = rk.st.calibratedValue(c.W, c.I, c.K)
			rk.vals[x] = rk.value(int(x))
			heap.Fix(&rk.order, int(rk.order.pos[x]))
		}
		if m.K == m.I {
			break
		}
	}
}

// valueHeap orders candidates by value, highest first, then by index: the scan's order, with
// a NaN value last.
type valueHeap struct {
	x    []int32   // candidates
	pos  []int32   // each candidate's position in x, −1 when not in it
	vals []float64 // by candidate
}

func (h *valueHeap) Len() int { return len(h.x) }

func (h *valueHeap) Less(a, b int) bool {
	va, vb := h.vals[h.x[a]], h.vals[h.x[b]]
	switch {
	case math.IsNaN(va) || math.IsNaN(vb):
		return !math.IsNaN(va) || math.IsNaN(vb) && h.x[a] < h.x[b]
	case va != vb:
		return va > vb
	}
	return h.x[a] < h.x[b]
}

func (h *valueHeap) Swap(a, b int) {
	h.x[a], h.x[b] = h.x[b], h.x[a]
	h.pos[h.x[a]], h.pos[h.x[b]] = int32(a), int32(b)
}

func (h *valueHeap) Push(v any) {
	x := v.(int32)
	h.pos[x] = int32(len(h.x))
	h.x = append(h.x, x)
}

func (h *valueHeap) Pop() any {
	x := h.x[len(h.x)-1]
	h.x = h.x[:len(h.x)-1]
	h.pos[x] = -1
	return x
}

// picker holds what Suggest's greedy choice depends on besides the estimate: how many entries
// of each job are known, and how often each has been picked so far.
type picker struct {
	d     *Data
	r     *Result
	count [][]int // known entries per worker type and job, picks included
	total []int   // known entries per job, picks included
	used  [][]int // picks so far per worker type and job
	full  float64 // known entries of a fully measured job, about
	// meanScarcity is, per worker type, the mean scarcity (see scarcity) of the measured pairs
	// behind r.SumError, 0 when there are none (calibrated ranking only).
	meanScarcity []float64
	// check is, per worker type and job, the reference partner of a consistency check (see
	// consistencyChecks), or −1.
	check [][]int
	// checksLeft is how many more consistency checks this call may pick.
	checksLeft int
	// options is, per worker type and job, its two best estimated packing options (see
	// relyValue); nil in the uncalibrated ranking.
	options [][]packOptions
	aim     Aim
	// rates is whether the block has a pair measured feasible; without one nothing is fitted
	// (noRates), so a job's first pair places it nowhere and earns no cold-start bonus: in a
	// block whose every known pair is infeasible (multi-GPU jobs that never share), those
	// bonuses had spent most of a budget there.
	rates bool
}

func newPicker(d *Data, r *Result) *picker {
	W, n := len(d.Workers), len(d.Jobs)
	st := &picker{d: d, r: r, used: make([][]int, W), full: float64(2 * W * n)}
	st.count, st.total = knownCounts(d)
	for w := range st.used {
		st.used[w] = make([]int, n)
	}
	if r.SumError != nil {
		st.rates = hasMeasuredRate(d)
		st.meanScarcity = measuredScarcity(d, st.count)
		st.check = consistencyChecks(d, r, st.count)
		st.options = bestOptions(r)
	}
	return st
}

// hasMeasuredRate reports whether d has a pair measured feasible.
func hasMeasuredRate(d *Data) bool {
	for w := range d.State {
		for i := range d.State[w] {
			if slices.Contains(d.State[w][i], table.Measured) {
				return true
			}
		}
	}
	return false
}

// scarcity is how little is known of the pair's jobs on w (picks included; see scarcity).
func (st *picker) scarcity(w, i, k int) float64 { return scarcity(st.count, w, i, k) }

// scarcity is how little is known of the pair's jobs on w: (1+m)^−evidencePower summed over
// the two jobs, m being a job's known entries there (count, from knownCounts).
func scarcity(count [][]int, w, i, k int) float64 {
	return math.Pow(1+float64(count[w][i]), -evidencePower) + math.Pow(1+float64(count[w][k]), -evidencePower)
}

// scarcityRatio is the scarcity of pair (i, k) on w relative to ms[w], the measured pairs' mean
// there (measuredScarcity), or 1 where none is measured.
func scarcityRatio(count [][]int, ms []float64, w, i, k int) float64 {
	if ms[w] > 0 {
		return scarcity(count, w, i, k) / ms[w]
	}
	return 1
}

// measuredScarcity returns, per worker type, the mean scarcity of the measured pairs outside
// the reference block (those the sum error is cross-validated on), or 0 when there are none.
func measuredScarcity(d *Data, count [][]int) []float64 {
	isRef := make([]bool, len(d.Jobs))
	for _, i := range d.References() {
		isRef[i] = true
	}
	out := make([]float64, len(d.Workers))
	for w := range d.Workers {
		sum, cnt := 0.0, 0
		for i := range d.Jobs {
			for k := i; k < len(d.Jobs); k++ {
				if isRef[i] && isRef[k] || d.State[w][i][k] != table.Measured {
					continue
				}
				sum += scarcity(count, w, i, k)
				cnt++
			}
		}
		if cnt > 0 {
			out[w] = sum / float64(cnt)
		}
	}
	return out
}

// candidates scores every missing pair (w, i ≤ k) pool allows (all when pool is nil), except,
// with the decisions aim, pairs predicted infeasible.
func (st *picker) candidates(pool func(w, i, k int) bool) []Measurement {
	d, r := st.d, st.r
	decisions := st.aim == AimDecisions
	var cands []Measurement
	for w := range d.Workers {
		for i := range d.Jobs {
			for k := i; k < len(d.Jobs); k++ {
				if d.State[w][i][k] != table.Missing && d.State[w][k][i] != table.Missing || pool != nil && !pool(w, i, k) {
					continue
				}
				if decisions && (r.Infeasible[w][i][k] || r.Infeasible[w][k][i]) {
					continue
				}
				if r.SumError != nil {
					cands = append(cands, st.calibratedValue(w, i, k))
				} else {
					cands = append(cands, value(r, st.count, w, i, k, !decisions))
				}
			}
		}
	}
	return cands
}

// cover is the coverage term of m and the reason it gives: the cold-start or check bonus in
// the calibrated ranking (0 and no reason when neither applies); otherwise a job's need for
// coverage, weighted by how well its partner is known already, less a little for jobs already
// picked on the worker type.
func (st *picker) cover(m Measurement) (float64, string) {
	if st.r.SumError != nil {
		switch {
		case st.rates && (st.count[m.W][m.I] == 0 || st.count[m.W][m.K] == 0):
			return coldBonus, ReasonCoverage
		case st.isCheck(m):
			return checkBonus, ReasonCheck
		}
		return 0, ""
	}
	W := float64(len(st.d.Workers))
	need := func(a, b int) float64 {
		known := float64(st.total[b]) / st.full
		return known * (1/(1+float64(st.total[a])/W) + 0.5/(1+float64(st.count[m.W][a])))
	}
	c := need(m.I, m.K)
	if m.K != m.I {
		c += need(m.K, m.I)
	}
	return coverWeight*c - diversity*float64(st.used[m.W][m.I]+st.used[m.W][m.K]), ReasonCoverage
}

// isCheck reports whether m is a consistency check this call may still pick.
func (st *picker) isCheck(m Measurement) bool {
	return st.check != nil && st.checksLeft > 0 && (st.check[m.W][m.I] == m.K || st.check[m.W][m.K] == m.I)
}

// pick counts m as measured.
func (st *picker) pick(m Measurement) {
	for _, j := range []int{m.I, m.K} {
		st.count[m.W][j]++
		st.total[j]++
		st.used[m.W][j]++
	}
	if st.check != nil {
		if st.isCheck(m) {
			st.checksLeft--
		}
		st.check[m.W][m.I], st.check[m.W][m.K] = -1, -1
	}
}

// value is (w, i, k)'s score in the uncalibrated ranking, its feasibility doubt left out unless
// withFeas.
func value(r *Result, count [][]int, w, i, k int, withFeas bool) Measurement {
	sp := func(a, b int) float64 {
		s := 0.0
		if r.Spread != nil {
			s = r.Spread[w][a][b]
		}
		prior := priorSpread * priorSpread * (1/float64(1+count[w][a]) + 1/float64(1+count[w][b]))
		return math.Sqrt(s*s + prior)
	}
	nik, nki := r.Norm[w][i][k], r.Norm[w][k][i]
	sik, ski := sp(i, k), sp(k, i)
	// Log-rate uncertainty σ turns into about n·σ on the rate.
	sigma := math.Hypot(nik*sik, nki*ski)
	flip := 2 * normalCDF(-math.Abs(nik+nki-1)/math.Max(sigma, 1e-9)) // 1 when on the line
	if r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
		flip *= 1 - infeasibleScore(r, w, i, k) // as calibratedValue's
	}
	unc := (sik + ski) / 2
	feas := 0.0
	if r.InfeasibleScore != nil && withFeas {
		feas = 1 - 2*math.Abs(math.Min(1, math.Max(0, r.InfeasibleScore[w][i][k]))-0.5)
	}
	m := Measurement{W: w, I: i, K: k, Score: flip + uncWeight*unc + feas}
	switch {
	case feas >= flip && feas >= unc:
		m.Reason = ReasonFeasibility
	case flip >= unc:
		m.Reason = ReasonPacking
	default:
		m.Reason = ReasonUncertain
	}
	return m
}

// coldBonus and checkBonus are tiers rather than weights: each outweighs any calibrated score
// (flip probability and feasibility doubt at most 0.5 each, reliance 2·(σ + 6) at most, σ
// below 1 in practice), so a job with nothing known on a worker type is measured there first,
// then the consistency checks, then the rest by calibrated score. Scores of different blocks
// (scale factors) compare the same way, which SuggestTable's merge relies on.
const coldBonus = 200

// A consistency check: a job known from few pairs on a worker type (at most checkCount entries)
// whose estimated pair sums with the references there differ on average by more than
// checkGap from those of the checkNear references nearest to it on the other worker types
// probably rests on one odd measurement (a pair-specific slowdown the model spreads over the
// job's whole row; on seed 0, ResNet-18's one V100 pair, next to CycleGAN, put 16 of its V100
// pairs on the wrong side with low flip probability, so nothing else measured it again). It
// is measured once more, next to the reference where the disagreement is largest, with
// checkBonus (above any calibrated score, below cold start), for at most checkShare of a
// call's picks (at least one), since a check next to a reference mostly corrects rates, not decisions near
// the line. On hold-out seeds 10-33 (R = 16, P = 0.2, active; 24 seeds) against no checks:
// MAPE 8.40% -> 7.98% (better on 19 of 24 seeds), wrong pairs 56.4 -> 57.2 a seed (within
// noise: one seed moves by 10 or more between runs); max-min downstream ratio on seeds 10-21
// 0.732 -> 0.790 (better on 8 of 12; one seed's ratio can drop to 0.4 or 0 either way).
// Seeds 10-21, MAPE and wrong pairs a seed: no checks 8.35%, 55.2; share 0.25 (chosen)
// 7.84%, 56.2; share 0.1: 8.38%, 58.4; 0.5: 7.87%, 61.0; unlimited: 7.55%, 62.2; unlimited
// with a gap of 0.1: 7.60%, 63.8; a second measurement for every job with one entry on a
// type (no disagreement test, partner by flip probability): 8.27%, 59.0.
const (
	checkBonus = 100
	checkCount = 2
	checkGap   = 0.15
	checkNear  = 3
	checkShare = 0.25
)

// consistencyChecks returns, per worker type and job, the reference partner of a consistency
// check, or −1 when none is due.
func consistencyChecks(d *Data, r *Result, count [][]int) [][]int {
	W, n := len(d.Workers), len(d.Jobs)
	refs := d.References()
	isRef := make([]bool, n)
	for _, a := range refs {
		isRef[a] = true
	}
	out := make([][]int, W)
	for w := range out {
		out[w] = make([]int, n)
		for j := range out[w] {
			out[w][j] = -1
		}
	}
	if len(refs) < checkNear+1 || W < 2 {
		return out
	}
	for j := 0; j < n; j++ {
		if isRef[j] {
			continue
		}
		for w := 0; w < W; w++ {
			if count[w][j] == 0 || count[w][j] > checkCount {
				continue
			}
			if near := nearestElsewhere(r, refs, j, w); len(near) == checkNear {
				out[w][j] = checkPartner(d, r, refs, near, j, w)
			}
		}
	}
	return out
}

// pairSum is the estimated sum of the normalized rates of i and k on w, and false when the pair
// is predicted infeasible.
func pairSum(r *Result, w, i, k int) (float64, bool) {
	if r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
		return 0, false
	}
	return r.Norm[w][i][k] + r.Norm[w][k][i], true
}

// nearestElsewhere returns the checkNear references whose pair sums with the references are
// closest (mean absolute difference) to job j's on the worker types other than w, or fewer when
// fewer can be compared. Ties keep reference order.
func nearestElsewhere(r *Result, refs []int, j, w int) []int {
	type near struct {
		a    int
		dist float64
	}
	var ns []near
	for _, a := range refs {
		gap, cnt := 0.0, 0
		for v := range r.Norm {
			if v == w {
				continue
			}
			for _, k := range refs {
				sj, ok1 := pairSum(r, v, j, k)
				sa, ok2 := pairSum(r, v, a, k)
				if ok1 && ok2 {
					gap += math.Abs(sj - sa)
					cnt++
				}
			}
		}
		if cnt > 0 {
			ns = append(ns, near{a, gap / float64(cnt)})
		}
	}
	sort.SliceStable(ns, func(x, y int) bool { return ns[x].dist < ns[y].dist })
	out := make([]int, 0, checkNear)
	for x := 0; x < len(ns) && x < checkNear; x++ {
		out = append(out, ns[x].a)
	}
	return out
}

// checkPartner returns the reference to measure j next to on w when j's pair sums with the
// references there differ on average by more than checkGap from those of its near references:
// the unmeasured one where they differ most; −1 when no check is due.
func checkPartner(d *Data, r *Result, refs, near []int, j, w int) int {
	gap, cnt, worst, worstGap := 0.0, 0, -1, 0.0
	for _, k := range refs {
		sj, ok := pairSum(r, w, j, k)
		if !ok {
			continue
		}
		pred, pc := 0.0, 0
		for _, a := range near {
			if s, ok := pairSum(r, w, a, k); ok {
				pred += s
				pc++
			}
		}
		if pc == 0 {
			continue
		}
		g := math.Abs(sj - pred/float64(pc))
		gap += g
		cnt++
		if d.State[w][j][k] == table.Missing && d.State[w][k][j] == table.Missing && g > worstGap {
			worst, worstGap = k, g
		}
	}
	if cnt > 0 && gap/float64(cnt) > checkGap {
		return worst
	}
	return -1
}

// spreadFloor is the least log-rate spread an estimated entry is given: bootstrap fits can agree
// closely on an entry that is still wrong.
const spreadFloor = 0.03

// Feasibility doubt in the calibrated ranking: a pair whose infeasibility score s has
// min(s, 1−s) of at least feasBand scores that much on top of its flip probability, for at most
// feasShare of a call's picks. On hold-out seeds 10-15 (R = 16, P = 0.2), with no feasibility
// term: agreement 89.1%, infeasible recall 0.63; unlimited (band 0.25): 87.6%, 0.84; a share of
// 0.1: 89.0%, 0.67; 0.2: 88.5%, 0.70.
const (
	feasBand  = 0.25
	feasShare = 0.1
)

// evidencePower: a worker type's cross-validated sum error is an average over its measured
// pairs, but the estimate of a job measured once there can be off by 0.5 in the sum (the V100
// pairs of such jobs were the gross errors), while pairs of two well-measured jobs are better
// than the average. Scaling σ² by the pair's scarcity relative to the measured pairs' mean
// moves picks to poorly known jobs. On hold-out seeds 10-15 (R = 16, P = 0.2), four runs of
// the active protocol per seed (estimator seeds differ; one seed's wrong pairs vary by up to
// 25 between runs), power 2 with coverage 0.2 against none with coverage 0.3: 71.5 against
// 73.0 wrong pairs of 645 a run (88.9% against 88.7% agreement; the difference is one standard
// error), MAPE 9.9% against 10.2%; coverage 0.2 alone (two runs a seed) changed nothing
// (71.8 against 72.0). Powers 0.5 and 1 (one run a seed) did no better than none.
const evidencePower = 2

// infeasibleScore is r's infeasibility score of pair (i, k) on w, clamped to [0, 1]: the larger of
// its two entries', or 1 where r predicts the pair infeasible without a score.
func infeasibleScore(r *Result, w, i, k int) float64 {
	if r.InfeasibleScore == nil {
		if r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
			return 1
		}
		return 0
	}
	return math.Min(1, math.Max(0, math.Max(r.InfeasibleScore[w][i][k], r.InfeasibleScore[w][k][i])))
}

// sumSigma is the uncertainty of pair (i, k)'s estimated sum of normalized rates on w: the
// worker type's cross-validated sum error (r.SumError), scaled by the square root of the pair's
// scarcity relative to the measured pairs' (ratio; see evidencePower), combined with the
// entries' own spread (r.Spread, at least spreadFloor) in rate units.
func sumSigma(r *Result, w, i, k int, ratio float64) float64 {
	own := math.Hypot(r.Norm[w][i][k]*entrySpread(r, w, i, k), r.Norm[w][k][i]*entrySpread(r, w, k, i))
	return math.Max(math.Hypot(r.SumError[w]*math.Sqrt(ratio), own), 1e-9)
}

// entrySpread is r's log-rate spread of entry (w, i, k), at least spreadFloor.
func entrySpread(r *Result, w, i, k int) float64 {
	s := 0.0
	if r.Spread != nil {
		s = r.Spread[w][i][k]
	}
	return math.Hypot(s, spreadFloor)
}

func (st *picker) calibratedValue(w, i, k int) Measurement {
	r := st.r
	sigma := sumSigma(r, w, i, k, scarcityRatio(st.count, st.meanScarcity, w, i, k))
	flip := normalCDF(-math.Abs(r.Norm[w][i][k]+r.Norm[w][k][i]-1) / sigma) // 0.5 when on the line
	if r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
		// A pair predicted infeasible has a packing decision only if it can share after all:
		// in a block whose every known pair is infeasible (multi-GPU jobs), never.
		flip *= 1 - infeasibleScore(r, w, i, k)
	}
	feas := 0.0
	if r.InfeasibleScore != nil {
		sc := math.Min(1, math.Max(0, r.InfeasibleScore[w][i][k]))
		if d := math.Min(sc, 1-sc); d >= feasBand {
			feas = d
		}
	}
	m := Measurement{W: w, I: i, K: k, flip: flip, feas: feas, rely: st.relyValue(w, i, k, sigma)}
	m.Score = m.capped(true, true)
	m.Reason = m.reason(true, true)
	return m
}

// capped is m's calibrated score with the feasibility and reliance terms only where their
// shares are not used up.
func (m Measurement) capped(feas, rely bool) float64 {
	sc := m.flip
	if feas {
		sc += m.feas
	}
	if rely {
		sc += m.rely
	}
	return sc
}

// reason names the largest term of m's capped calibrated score; on a tie packing wins, then
// feasibility.
func (m Measurement) reason(feas, rely bool) string {
	top, why := m.flip, ReasonPacking
	if feas && m.feas > top {
		top, why = m.feas, ReasonFeasibility
	}
	if rely && m.rely > top {
		why = ReasonRely
	}
	return why
}

// Reliance: a planner packs the pairs with the highest estimated sums, so among a job's options
// it favours the most overestimated ones (a winner's curse), and an overestimate there is what
// costs the allocation: on seeds 0 and 2 of the Gavel table the max-min packed allocation put
// 40-50% of a V100 on one unmeasured pair estimated at 1.76 (truly 1.41) or 1.24 (truly
// infeasible). Such pairs are far from the line, so the flip probability never measures them,
// and the policy and cluster are unknown here, so relyValue scores what any packing planner
// would act on: a missing pair estimated above 1 counts fully when its sum is at least that of
// the best other option of one of its jobs on the worker type, less by a factor e per
// relyScale below it; times how much the estimate could be too high: σ (as in the flip
// probability) plus relyInfeasible × the infeasibility score × the sum (all of it is lost if the
// pair cannot run; the score is low on the infeasible pairs that hurt, 0.01-0.44 on the seeds
// looked at). relyWeight puts it on the scale of the flip probability; it takes at most
// relyShare of a call's picks (1 of a batch of 12), since the picks it takes from the flip
// probability cost packing agreement.
//
// Chosen on hold-out seeds 10-57 (R = 16, P = 0.2, active, max-min packed downstream ratio;
// one run a seed; a seed's ratio moves between about 0 and 0.9 with the path). Mean downstream
// / seeds below 0.6 / MAPE / agreement: without reliance 0.681 / 11 / 7.82% / 91.10%;
// scale 0.3, weight 2, share 0.2, infeasibility ×3 (chosen) 0.794 / 5 / 7.93% / 90.53%; the
// same with share 0.15 (1 a batch) 0.690 / 9 / 7.93% / 90.83%, weight 1 0.718 / 10 / 7.99% /
// 90.54%, scale 0.1 0.719 / 11 / 7.88% / 90.74%. On seeds 10-33 only: scale 0.1 with
// infeasibility ×1 0.713, the same with share 0.35 0.739 at 90.05% agreement. Checked after the
// choice on fresh seeds 58-81: 0.612 / 8 / 7.82% / 90.87% without, 0.789 / 2 / 7.85% / 90.48%
// with. The cost is about half a point of agreement (−0.56 ± 0.20 paired over seeds 10-57).
// The reported seeds 0-2, run once at the end: 0.616 / 7.98% / 91.2% → 0.805 / 8.43% / 90.7%.
//
// Those runs counted a cold start or check against the reliance share when reliance was its
// largest calibrated term (so a batch made fewer reliance picks than its share), and reliance
// scores could outrank cold starts and checks. With both fixed, seeds 10-57: share 0.2 0.770 /
// 6 / 8.11% / 90.15%, share 0.1 (chosen) 0.761 / 6 / 7.82% / 90.53% (against 0.2, paired: MAPE
// −0.28 ± 0.11, agreement +0.38 ± 0.18 points, downstream −0.01 ± 0.03).
const (
	relyWeight     = 2
	relyScale      = 0.3
	relyShare      = 0.1
	relyInfeasible = 3
)

// packOptions holds a job's two best estimated feasible pair sums on a worker type and the
// partner of the best (−1 when it has none).
type packOptions struct {
	best, second float64
	partner      int
}

// bestOptions returns every job's packOptions per worker type, measured pairs included.
func bestOptions(r *Result) [][]packOptions {
	out := make([][]packOptions, len(r.Norm))
	for w := range r.Norm {
		out[w] = make([]packOptions, len(r.Norm[w]))
		for j := range out[w] {
			o := packOptions{best: math.Inf(-1), second: math.Inf(-1), partner: -1}
			for k := range r.Norm[w] {
				s, ok := pairSum(r, w, j, k)
				switch {
				case !ok:
				case s > o.best:
					o.second, o.best, o.partner = o.best, s, k
				case s > o.second:
					o.second = s
				}
			}
			out[w][j] = o
		}
	}
	return out
}

// relyValue is the reliance term of the missing pair (w, i, k) whose sum error is sigma.
func (st *picker) relyValue(w, i, k int, sigma float64) float64 {
	r := st.r
	s, ok := pairSum(r, w, i, k)
	if !ok || !(s > 1) { // NaN too
		return 0
	}
	use := math.Max(st.use(w, i, k, s), st.use(w, k, i, s))
	over := sigma
	if r.InfeasibleScore != nil {
		over += relyInfeasible * s * math.Min(1, math.Max(0, r.InfeasibleScore[w][i][k]))
	}
	return relyWeight * use * over
}

// use is how close s, the sum of j next to partner on w, comes to j's best other option there.
func (st *picker) use(w, j, partner int, s float64) float64 {
	o := st.options[w][j]
	alt := o.best
	if o.partner == partner {
		alt = o.second
	}
	return math.Min(1, math.Exp(-(alt-s)/relyScale))
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// Active runs the active protocol: starting from partial, spend budget measurements from truth
// in batches and return the final partial block. The first coverFraction of the budget goes to
// coverage (see [Cover]): every job gets measurements against well-measured partners, which is
// what the model needs to place it; the rest is spent in batches (batches of them; 0 or less
// means batches of activeBatch) chosen by [Suggest] on a fresh estimate of method. When method is
// a [Pairwise], it is run with bootstrap fits and a cross-validated sum error (unless it sets
// them), so Suggest ranks pairs by how likely their packing decision is wrong, with aim.
// Only pairs the truth has are chosen, so on a partial truth no measurement is spent on a pair
// nobody measured.
func Active(ctx context.Context, truth, partial *Data, method Method, budget, batches int, aim Aim) (*Data, error) {
	if err := aim.check(); err != nil { // before the fits, not after the first
		return nil, err
	}
	if budget < 0 {
		return nil, fmt.Errorf("budget %d: must be 0 or more", budget)
	}
	var pool func(w, i, k int) bool
	if truth.Missing() > 0 {
		pool = func(w, i, k int) bool {
			return truth.State[w][i][k] != table.Missing && truth.State[w][k][i] != table.Missing
		}
	}
	d := partial.Clone()
	method = calibrated(method)
	nCover := int(math.Round(coverFraction * float64(budget)))
	covered := cover(d, nCover, pool)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, m := range covered {
		d.Reveal(truth, m.W, m.I, m.K)
	}
	left := budget - len(covered) // the rest, when fewer pairs were left to cover with
	if batches < 1 {
		batches = max(1, (left+activeBatch-1)/activeBatch)
	}
	for b := 0; b < batches && left > 0; b++ {
		take := (left + (batches - b) - 1) / (batches - b)
		r, err := method.Estimate(ctx, d)
		if err != nil {
			return nil, err
		}
		ms, err := suggest(d, r, take, aim, pool, nil)
		if err != nil {
			return nil, err
		}
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			d.Reveal(truth, m.W, m.I, m.K)
		}
		left -= len(ms)
	}
	return d, nil
}

// The active protocol's settings, chosen on hold-out seeds 10-15 of the Gavel table at R = 16,
// P = 0.2 (not the reported seeds 0-2): coverage 0.2/0.3/0.4 gave 88.8/89.2/88.2% agreement,
// batches of 8/12/20 about 88.9/88.9/88.0%. Rechecked before the scarcity-scaled σ (see
// evidencePower), one run a seed: coverage 0/0.2/0.3/0.4/0.7/1.0 gave 88.8/89.3/89.2/88.4/
// 88.1/87.7% agreement and MAPE 9.8/10.2/10.1/10.0/9.5/9.3% (more coverage, better MAPE and
// worse packing); batches of 6: 88.5%. The scarcity-scaled σ was chosen with coverage 0.2.
const (
	coverFraction   = 0.2 // of an active budget spent on coverage first
	activeBatch     = 12  // measurements per batch between refits
	activeBootstrap = 8   // bootstrap fits behind each entry's spread
	activeFolds     = 5   // cross-validation folds behind the sum error
)

// Cover picks budget measurements that spread knowledge evenly: repeatedly, the job with the
// fewest measured entries is measured on the worker type where it has the fewest, next to the
// reference job that has been paired with non-references least often there (so different
// jobs are compared with different references, as random reveals would do); ties go to the
// lower index.
func Cover(d *Data, budget int) []Measurement { return cover(d, budget, nil) }

// cover is Cover choosing only among the pairs pool allows (all when pool is nil).
func cover(d *Data, budget int, pool func(w, i, k int) bool) []Measurement {
	W, n := len(d.Workers), len(d.Jobs)
	refs := d.References()
	isRef := make([]bool, n)
	for _, r := range refs {
		isRef[r] = true
	}
	count, total := knownCounts(d)
	used := make([][]int, W) // a reference's known pairs with non-references
	for w := 0; w < W; w++ {
		used[w] = make([]int, n)
		for _, i := range refs {
			for k := 0; k < n; k++ {
				if !isRef[k] && d.State[w][i][k] != table.Missing {
					used[w][i]++
				}
			}
		}
	}
	var out []Measurement
	picked := map[[3]int]bool{} // (w, i, k), k a reference: scanning out made this quadratic
	for len(out) < budget {
		best := [3]int{-1, -1, -1}
		var bestKey [4]int
		for i := 0; i < n; i++ {
			if isRef[i] {
				continue
			}
			for w := 0; w < W; w++ {
				for _, k := range refs {
					if d.State[w][i][k] != table.Missing || picked[[3]int{w, i, k}] || pool != nil && !pool(w, i, k) {
						continue
					}
					key := [4]int{total[i], count[w][i], used[w][k], k}
					if best[0] < 0 || less4(key, bestKey) {
						best, bestKey = [3]int{w, i, k}, key
					}
				}
			}
		}
		if best[0] < 0 {
			break
		}
		w, i, k := best[0], best[1], best[2]
		out = append(out, Measurement{W: w, I: i, K: k, Reason: ReasonCoverage})
		picked[best] = true
		count[w][i]++
		count[w][k]++
		total[i]++
		total[k]++
		used[w][k]++
	}
	return out
}

// knownCounts returns the known entries of each job per worker type ([w][job]) and in all.
func knownCounts(d *Data) (count [][]int, total []int) {
	W, n := len(d.Workers), len(d.Jobs)
	count = make([][]int, W)
	total = make([]int, n)
	for w := 0; w < W; w++ {
		count[w] = make([]int, n)
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				if d.State[w][i][k] != table.Missing {
					count[w][i]++
					total[i]++
				}
			}
		}
	}
	return count, total
}

func less4(a, b [4]int) bool {
	for x := range a {
		if a[x] != b[x] {
			return a[x] < b[x]
		}
	}
	return false
}
