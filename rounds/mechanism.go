package rounds

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// Job is what the mechanism needs to know about an active job.
type Job struct {
	ID          string
	Type        table.JobType
	ScaleFactor int // GPUs it needs at once, at least 1 (Plan panics otherwise)
	// Order is the job's arrival rank; on equal priority the earlier job goes
	// first (Gavel's dict order, made explicit).
	Order int
	// Rates holds the isolated rate (steps/s over all ScaleFactor GPUs) per
	// worker type; 0 or absent means the job cannot run there.
	Rates map[string]float64
}

// PairRates returns the rates of a and b sharing GPUs of type w (0, 0 when
// they cannot).
type PairRates func(w string, a, b *Job) (rateA, rateB float64)

// Rank orders queue entries: higher Class, then higher Key, then higher Tie
// goes first. Priority is reported in plans; an entry whose Priority is 0 is
// back-fill.
type Rank struct {
	Class              int
	Priority, Key, Tie float64
	// BBit and Group are PD²'s tie-breaks among entries due in the same
	// round (higher first); see Ledger.Rank.
	BBit, Group float64
}

// JobUrgency is optionally implemented by an Accounting: the pseudo-deadline
// (in rounds from now) of job id as a whole, given the sum of its targets over
// all combinations and worker types. Jobs that are due overall go first; the
// per-type rank then picks among their types.
type JobUrgency interface {
	JobDue(id string, totalTarget float64) float64
}

// JobTieBreaks is optionally implemented by an Accounting: PD²'s b-bit and
// group deadline for job id as a whole (a task whose weight is its total
// target), which order jobs due in the same round.
type JobTieBreaks interface {
	JobPD2(id string, totalTarget float64) (bbit, group float64)
}

// EntryUrgency is optionally implemented by an Accounting: the
// pseudo-deadline (in rounds from now) of c on w, the number of rounds it can
// sit out before it falls a full round behind its target there. An entry due
// within one round must run this round, and a job due as a whole within one
// round must run somewhere; the mechanism places those first (and moves other
// due jobs between their worker types to make room).
type EntryUrgency interface {
	Due(c policy.Combination, w string, target float64) float64
}

// Accounting is the history the mechanism ranks combinations by.
type Accounting interface {
	// Rank ranks running c on w next round, given c's target fraction on w.
	// inAlloc is false when the allocation does not mention c at all.
	Rank(c policy.Combination, w string, target float64, inAlloc bool) Rank
}

// Options select the mechanism's variant.
type Options struct {
	// GavelCompat walks one queue per worker type in TypeOrder (Gavel's
	// _schedule_jobs_on_workers_helper) instead of one global queue, uses
	// Gavel's strided placement, and selects-but-never-places combinations
	// that are absent from the allocation (their GPUs idle for the round).
	GavelCompat bool
	// TypeOrder is the worker-type walk order in compat mode; nil means
	// sorted. Types missing from it are walked last, sorted.
	TypeOrder []string
	// NoBackFill keeps entries with priority 0 off the GPUs (Gavel does this
	// for FIFO policies only; otherwise idle GPUs are back-filled).
	NoBackFill bool
	// Decompose realizes an allocation with pairs or gangs by following its
	// decomposition into feasible rounds (see configs.go), or the nearest
	// rounds where none realizes it, instead of the per-entry walk, which
	// can drift there. It is for an allocation that stays fixed: the
	// decomposition (LPs and MILPs, 0.06 s for 43 targets, up to about 3 s
	// for 150, about twice that for unrealizable ones) starts again, with no
	// rounds counted, whenever a target changes. It applies only to
	// allocations of at most 150 targets and never in compat mode; RunRounds
	// sets it for one of the two plans it compares.
	Decompose bool
}

// State is the mechanism's input besides the allocation.
type State struct {
	Topology *Topology // required
	Jobs     map[string]*Job
	// PairRates is needed only when the allocation has pairs: without it
	// (nil) Plan runs none of them (TablePairRates reads a table's).
	PairRates PairRates
	History   Accounting // required; NewLedger gives the default
	// Previous is last round's placement, for lease extension, in
	// Topology's GPU ids. Ids are positions, not physical GPUs (see
	// Topology): after the topology changes (a server down or back), the
	// ids of the servers and types after it shift, so translate Previous
	// into the new ids or drop it. Plan cannot tell, and would keep a
	// combination on the old ids, marked Extended, though they now name
	// other GPUs.
	Previous map[policy.Combination][]int
	Options
	// schedule decomposes the current packed allocation (see configs.go):
	// a cache of a function of the allocation and the GPUs of each type,
	// with the rounds each of its configurations was planned for.
	schedule *configSchedule
	scratch  *planBuffer // Plan's queue, kept for the next round
	// decomposeCtx bounds the decomposition behind schedule: RunRounds's
	// context; nil (as Plan's callers leave it) means none.
	decomposeCtx context.Context
}

// Assignment is one combination placed on GPUs for a round.
type Assignment struct {
	Combination policy.Combination
	WorkerType  string
	GPUs        []int // sorted
	Priority    float64
	Target      float64
	Extended    bool // on the same GPUs as last round
	// BackFill marks a combination that runs only because the GPUs would
	// otherwise idle: it has no target on this worker type, or it is already
	// a round ahead of its target there. Compat mode marks only the former.
	BackFill bool
}

// RoundPlan is the next round: which combination runs on which GPUs.
type RoundPlan struct {
	Start       float64
	Assignments []Assignment // sorted by first GPU
	// Unplaced lists combinations that were selected but could not be placed
	// (compat mode: absent from the allocation); their GPUs stay idle.
	Unplaced []policy.Combination
}

// Placement returns combination → GPUs.
func (p *RoundPlan) Placement() map[policy.Combination][]int {
	m := make(map[policy.Combination][]int, len(p.Assignments))
	for _, a := range p.Assignments {
		m[a.Combination] = a.GPUs
	}
	return m
}

// orderKey is a combination's position in arrival order: a single sorts at
// its own rank, a pair right after its later member, then by earlier member.
type orderKey struct{ hi, pair, lo int }

func compareOrder(a, b orderKey) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	if c := cmp.Compare(a.pair, b.pair); c != 0 {
		return c
	}
	return cmp.Compare(a.lo, b.lo)
}

type entry struct {
	c      policy.Combination
	w      string
	sf     int
	prio   float64
	class  int
	jobKey float64 // minus the job's due, rounded up to whole rounds
	// PD² tie-breaks: the entry's own for a job whose only target is this
	// entry, else the job's as a whole (JobTieBreaks) with its exact due.
	bbit, group, exact float64
	jobDue             float64 // the job's (a pair's: earlier member's) due, +Inf when unknown
	due                float64 // this entry's due, +Inf when unknown
	key                float64
	tie                float64
	target             float64
	inAlloc            bool
	order              orderKey
	typeRank           int
	fill               bool // see Assignment.BackFill
}

// Check reports the first inconsistency between s and alloc that Plan would not report
// itself (it panics on some, and drops the others without a word): a missing Topology or
// History, a nil job or one filed under another id, a scale factor below 1, a combination of
// alloc with a job not in s.Jobs, a fraction that is not a number in [0, 1], a worker type not
// in the topology, or a job given time on a type with fewer GPUs than its scale factor. A
// scheduler that builds the state from live input calls it before Plan; the error names the
// entry.
func (s *State) Check(alloc *policy.Allocation) error {
	switch {
	case s.Topology == nil:
		return errors.New("state: no Topology")
	case s.History == nil:
		return errors.New("state: no History (NewLedger gives the default)")
	}
	for _, id := range slices.Sorted(maps.Keys(s.Jobs)) {
		switch j := s.Jobs[id]; {
		case j == nil:
			return fmt.Errorf("state: job %q is nil", id)
		case j.ID != id:
			return fmt.Errorf("state: job %q is filed under %q", j.ID, id)
		case j.ScaleFactor < 1:
			return fmt.Errorf("state: job %q: scale factor %d; want at least 1", id, j.ScaleFactor)
		}
	}
	if alloc == nil {
		return nil
	}
	combos := slices.SortedFunc(maps.Keys(alloc.Fractions), func(a, b policy.Combination) int {
		return strings.Compare(a.String(), b.String())
	})
	for _, c := range combos {
		for _, w := range slices.Sorted(maps.Keys(alloc.Fractions[c])) {
			if err := s.checkEntry(c, w, alloc.Fractions[c][w]); err != nil {
				return fmt.Errorf("allocation: %v on %s: %w", c, w, err)
			}
		}
	}
	return nil
}

// checkEntry checks one fraction x of combination c on worker type w against s.
func (s *State) checkEntry(c policy.Combination, w string, x float64) error {
	if !(x >= 0 && x <= 1) {
		return fmt.Errorf("fraction %v; want a number in [0, 1]", x)
	}
	if x == 0 {
		return nil
	}
	n := s.Topology.Count(w)
	if !slices.Contains(s.Topology.WorkerTypes(), w) {
		return fmt.Errorf("worker type not in the topology (it has %s)", strings.Join(s.Topology.WorkerTypes(), ", "))
	}
	for _, m := range members(c) {
		j, ok := s.Jobs[m]
		if !ok {
			return fmt.Errorf("job %q is not in the state's jobs", m)
		}
		if j.ScaleFactor > n {
			return fmt.Errorf("job %q needs %d GPUs; the type has %d", m, j.ScaleFactor, n)
		}
	}
	return nil
}

// Plan picks the next round's assignment. It is deterministic: equal
// priorities are broken by deficit, target, arrival order and worker type
// name, never by map order. No GPU is booked twice and no job runs in two
// combinations. A nil job or one with a scale factor below 1 is a
// programming error: Plan panics naming it; Check finds these and the
// inconsistencies Plan passes over. Plan keeps a cache and scratch space in
// s between rounds, so calls on one State must not overlap.
func Plan(s *State, alloc *policy.Allocation, now float64) *RoundPlan {
	if s.scratch == nil {
		s.scratch = new(planBuffer)
	}
	buf := s.scratch
	defer buf.release()
	buf.entries = s.appendEntries(buf.entries[:0], alloc)
	entries := buf.entries
	queue := slices.Grow(buf.queue[:0], len(entries))
	for i := range entries {
		queue = append(queue, &entries[i])
	}
	buf.queue = queue
	s.sortEntries(queue)
	sel := s.selectEntries(queue, now)
	p := &RoundPlan{Start: now}
	for _, w := range s.typeOrder() {
		if s.GavelCompat {
			s.placeCompat(p, w, sel[w])
		} else {
			s.placeConsolidated(p, w, sel[w])
		}
	}
	slices.SortFunc(p.Assignments, func(a, b Assignment) int { return cmp.Compare(a.GPUs[0], b.GPUs[0]) })
	return p
}

// planBuffer holds one Plan call's queue, which a simulation would otherwise
// allocate afresh every round (most of its garbage; twice the time of its
// rounds). Nothing of it outlives the call: plans copy what they keep
// (Assignment, entryKey).
type planBuffer struct {
	entries []entry
	queue   []*entry
}

// release clears the pointers the buffer holds (job ids, worker types, the
// queue's entries), so that it keeps no job of a past round alive.
func (b *planBuffer) release() {
	clear(b.entries)
	clear(b.queue)
	b.entries, b.queue = b.entries[:0], b.queue[:0]
}

func (s *State) typeOrder() []string {
	types := s.Topology.WorkerTypes()
	if !s.GavelCompat || s.TypeOrder == nil {
		return types
	}
	out := make([]string, 0, len(types))
	seen := map[string]bool{}
	for _, w := range s.TypeOrder {
		if s.Topology.Count(w) > 0 && !seen[w] {
			out = append(out, w)
			seen[w] = true
		}
	}
	for _, w := range types {
		if !seen[w] {
			out = append(out, w)
		}
	}
	return out
}

// entries lists every (combination, worker type) the round could run: each
// job on every type it has a rate on and fits, and each pair in the
// allocation on every type where both members have a co-located rate.
func (s *State) entries(alloc *policy.Allocation) []entry {
	return s.appendEntries(nil, alloc)
}

// appendEntries is entries appending to out.
func (s *State) appendEntries(out []entry, alloc *policy.Allocation) []entry {
	types := s.typeOrder()
	var fr map[policy.Combination]map[string]float64
	if alloc != nil {
		fr = alloc.Fractions
	}
	eb := &entryBuilder{s: s, jobs: s.jobUrgencies(fr), rank: make(map[string]int, len(types)),
		out: slices.Grow(out, len(s.Jobs)*len(types))}
	for i, w := range types {
		eb.rank[w] = i
	}
	eb.eu, eb.hasDue = s.History.(EntryUrgency)
	eb.hasDue = eb.hasDue && !s.GavelCompat
	eb.jt, _ = s.History.(JobTieBreaks)
	eb.ledger, _ = s.History.(*Ledger)
	// The input order does not matter: the sort's keys are total.
	for id, j := range s.Jobs {
		switch {
		case j == nil:
			panic(fmt.Sprintf("rounds: Plan: job %q is nil", id))
		case j.ScaleFactor < 1:
			panic(fmt.Sprintf("rounds: Plan: job %q: scale factor %d, want at least 1", id, j.ScaleFactor))
		}
		c := policy.Single(j.ID)
		x, inAlloc := fr[c]
		for _, w := range types {
			if j.Rates[w] > 0 && j.ScaleFactor <= s.Topology.Count(w) {
				eb.add(c, x, inAlloc, w, j.ScaleFactor, orderKey{j.Order, 0, 0})
			}
		}
	}
	if s.PairRates == nil {
		return eb.out
	}
	for c := range fr {
		if !c.IsPair() {
			continue
		}
		a, b := s.Jobs[c.A], s.Jobs[c.B]
		if a == nil || b == nil || a.ScaleFactor != b.ScaleFactor {
			continue
		}
		lo, hi := a.Order, b.Order
		if lo > hi {
			lo, hi = hi, lo
		}
		x := fr[c]
		for _, w := range types {
			ra, rb := s.PairRates(w, a, b)
			if ra > 0 && rb > 0 && a.ScaleFactor <= s.Topology.Count(w) {
				eb.add(c, x, true, w, a.ScaleFactor, orderKey{hi, 1, lo})
			}
		}
	}
	return eb.out
}

// entryBuilder ranks entries for one Plan call.
type entryBuilder struct {
	s      *State
	jobs   map[string]*jobUrgency
	rank   map[string]int // worker type → position in the type order
	eu     EntryUrgency
	hasDue bool
	jt     JobTieBreaks // nil when History has none
	ledger *Ledger      // History, when it is the default ledger (its Due comes with Rank)
	out    []entry
}

// add ranks c on w (target x[w]) and appends the entry.
func (b *entryBuilder) add(c policy.Combination, x map[string]float64, inAlloc bool, w string, sf int, key orderKey) {
	s := b.s
	target := x[w]
	var r Rank
	due := math.Inf(1)
	if b.ledger != nil {
		r = b.ledger.Rank(c, w, target, inAlloc)
		if b.hasDue && target > 0 {
			// Ledger.Due is minus Rank's key: the same seconds, the same
			// arithmetic (TestPlanLedgerShortcut holds the two paths equal).
			due = -r.Key
		}
	} else {
		r = s.History.Rank(c, w, target, inAlloc)
		if b.hasDue && target > 0 {
			due = b.eu.Due(c, w, target)
		}
	}
	ja := b.jobs[c.A]
	jk, jd := 0.0, math.Inf(1)
	if ja != nil {
		jk, jd = ja.key, ja.due
	}
	if c.IsPair() {
		if jb := b.jobs[c.B]; jb != nil {
			jk, jd = max(jk, jb.key), min(jd, jb.due)
		}
	}
	// A job whose only target is this entry uses the entry's own PD²
	// tie-breaks; a job split over several entries competes as a whole.
	bbit, group, exact := 1.0, 0.0, jk
	if !c.IsPair() && target > 0 && ja != nil && ja.entries == 1 {
		bbit, group, exact = r.BBit, r.Group, r.Key
	} else if jd < math.Inf(1) {
		exact = -jd
		if b.jt != nil && !c.IsPair() {
			// The job's, the same for each of its entries: asked once a plan.
			if !ja.pd2 {
				ja.bbit, ja.group = b.jt.JobPD2(c.A, ja.total)
				ja.pd2 = true
			}
			bbit, group = ja.bbit, ja.group
		}
	}
	b.out = append(b.out, entry{c: c, w: w, sf: sf, prio: r.Priority, class: r.Class, jobKey: jk, jobDue: jd, due: due,
		bbit: bbit, group: group, exact: exact, key: r.Key, tie: r.Tie, target: target, inAlloc: inAlloc, order: key,
		typeRank: b.rank[w], fill: target <= 0 || (!s.GavelCompat && r.Class < 2)})
}

// jobUrgency is what the queue needs to know about a job as a whole.
type jobUrgency struct {
	total   float64 // target summed over combinations and types
	entries int     // positive (combination, type) targets
	due     float64 // JobUrgency's due; +Inf when the total is 0
	key     float64 // minus the due rounded up to whole rounds
	// JobTieBreaks' answer, once asked (pd2).
	pd2         bool
	bbit, group float64
}

// jobUrgencies sums each job's targets and asks the history how urgent each
// job is (not in compat mode, whose queue knows nothing of jobs). Sums run
// in a fixed order (a job's single first, then its pairs sorted; types
// sorted), so they come out the same to the last bit on every run.
func (s *State) jobUrgencies(fr map[policy.Combination]map[string]float64) map[string]*jobUrgency {
	ju, ok := s.History.(JobUrgency)
	if !ok || s.GavelCompat {
		return nil
	}
	u := make(map[string]*jobUrgency, len(s.Jobs))
	add := func(c policy.Combination, x map[string]float64) {
		if s.Jobs[c.A] == nil || (c.IsPair() && s.Jobs[c.B] == nil) {
			return
		}
		sum, n := sumSorted(x)
		for _, m := range members(c) {
			j := u[m]
			if j == nil {
				j = &jobUrgency{}
				u[m] = j
			}
			j.total += sum
			j.entries += n
		}
	}
	var pairs []policy.Combination
	for c, x := range fr {
		if c.IsPair() {
			pairs = append(pairs, c)
		} else {
			add(c, x)
		}
	}
	sortCombinations(pairs)
	for _, c := range pairs {
		add(c, fr[c])
	}
	for id, j := range u {
		j.due, j.key = math.Inf(1), 0
		if j.total > 0 {
			j.due = ju.JobDue(id, j.total)
			j.key = -math.Ceil(j.due - 1e-9)
		}
	}
	return u
}

func (s *State) sortEntries(es []*entry) {
	// The comparisons return at the first key that differs (cmp.Or would
	// compute every one of them first: this sort was a fifth of a
	// simulation's rounds).
	if s.GavelCompat {
		// One queue per worker type, concatenated in walk order; ties keep
		// arrival order (Gavel's stable sort over dict order).
		slices.SortFunc(es, func(a, b *entry) int {
			if c := cmp.Compare(a.typeRank, b.typeRank); c != 0 {
				return c
			}
			if c := compareValue(a, b); c != 0 {
				return c
			}
			return compareOrder(a.order, b.order)
		})
		return
	}
	slices.SortFunc(es, func(a, b *entry) int {
		if c := compareValue(a, b); c != 0 {
			return c
		}
		if c := compareOrder(a.order, b.order); c != 0 {
			return c
		}
		return cmp.Compare(a.w, b.w)
	})
}

// compareValue orders entries by rank, all keys descending: eligible before
// ahead before back-fill (class), so GPUs serve lagging targets first; then
// the job that is due soonest as a whole, so a split job is not starved by
// its own entries; then PD²'s tie-breaks, the entry's own due, and the larger
// target.
func compareValue(a, b *entry) int {
	if c := cmp.Compare(b.class, a.class); c != 0 {
		return c
	}
	if c := cmp.Compare(b.jobKey, a.jobKey); c != 0 {
		return c
	}
	if c := cmp.Compare(b.bbit, a.bbit); c != 0 {
		return c
	}
	if c := cmp.Compare(b.group, a.group); c != 0 {
		return c
	}
	if c := cmp.Compare(b.exact, a.exact); c != 0 {
		return c
	}
	if c := cmp.Compare(b.key, a.key); c != 0 {
		return c
	}
	if c := cmp.Compare(b.tie, a.tie); c != 0 {
		return c
	}
	return cmp.Compare(b.target, a.target)
}

// previousOn returns c's GPUs of last round if they were of type w and sf many.
func (s *State) previousOn(c policy.Combination, w string, sf int) []int {
	g, ok := s.Previous[c]
	if !ok || len(g) != sf {
		return nil
	}
	for _, id := range g {
		if id < 0 || id >= s.Topology.NumGPUs() || s.Topology.WorkerType(id) != w {
			return nil
		}
	}
	return g
}

func assignment(e entry, gpus []int, extended bool) Assignment {
	return Assignment{Combination: e.c, WorkerType: e.w, GPUs: sortedInts(gpus), Priority: e.prio, Target: e.target, Extended: extended, BackFill: e.fill}
}

// placeConsolidated places w's selected combinations, largest first. A
// combination keeps last round's GPUs when they are all free; otherwise it
// goes to the fullest server that still fits it (best fit), preferring GPUs
// that no lease-holder wants back; a combination that fits on no single
// server takes the emptiest servers first, so it spans as few as possible.
func (s *State) placeConsolidated(p *RoundPlan, w string, sel []*entry) {
	if len(sel) == 0 {
		return
	}
	prev := make([][]int, len(sel))
	for i, e := range sel {
		prev[i] = s.previousOn(e.c, w, e.sf)
	}
	pool := s.newGPUPool(w, prev)
	idx := make([]int, len(sel))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := cmp.Compare(sel[b].sf, sel[a].sf); c != 0 {
			return c
		}
		return compareOrder(sel[a].order, sel[b].order)
	})
	// Within a scale factor, lease holders go first so that a newcomer does
	// not take the GPUs a combination could have kept. A lease on GPUs of
	// several servers (a round that had to split a combination) is kept only
	// if placing the group afresh would not split fewer: else the split,
	// chosen once for want of room, would outlive the reason.
	forEachGroup(len(idx), func(i, j int) bool { return sel[idx[i]].sf == sel[idx[j]].sf }, func(start, end int) {
		group := idx[start:end]
		splitOK := true
		if s.splitLease(group, prev, pool) {
			g1, _ := s.placeGroup(pool.clone(), group, sel, prev, true)
			g2, _ := s.placeGroup(pool.clone(), group, sel, prev, false)
			splitOK = s.extraServers(g1) <= s.extraServers(g2)
		}
		gpus, kept := s.placeGroup(pool, group, sel, prev, splitOK)
		for x, i := range group {
			p.Assignments = append(p.Assignments, assignment(*sel[i], gpus[x], kept[x]))
		}
	})
}

// placeGroup places the combinations group (indices into sel, of one scale
// factor) on pool: lease holders whose GPUs are all free keep them (with
// splitOK, also those on several servers), the others are picked in order,
// and taken from pool. It returns each one's GPUs and whether they are a
// kept lease.
func (s *State) placeGroup(pool *gpuPool, group []int, sel []*entry, prev [][]int, splitOK bool) ([][]int, []bool) {
	gpus := make([][]int, len(group))
	kept := make([]bool, len(group))
	for x, i := range group {
		if prev[i] == nil {
			continue
		}
		if splitOK || s.Topology.ServersSpanned(prev[i]) == 1 {
			if pool.allFree(prev[i]) {
				pool.take(prev[i])
				gpus[x], kept[x] = prev[i], true
			}
			continue
		}
		// A split lease given up no longer holds its GPUs: left reserved, they would be
		// picked after those of lease holders still to be placed, breaking their leases.
		pool.unreserve(prev[i])
	}
	for x, i := range group {
		if !kept[x] {
			gpus[x] = pool.pick(sel[i].sf)
			pool.take(gpus[x])
		}
	}
	return gpus, kept
}

// splitLease reports whether a lease of group that could be kept on pool is on
// more than one server.
func (s *State) splitLease(group []int, prev [][]int, pool *gpuPool) bool {
	return slices.ContainsFunc(group, func(i int) bool {
		return len(prev[i]) > 1 && pool.allFree(prev[i]) && s.Topology.ServersSpanned(prev[i]) > 1
	})
}

// extraServers counts, over the placements, the servers each spans beyond
// its first.
func (s *State) extraServers(gpus [][]int) int {
	n := 0
	for _, g := range gpus {
		n += s.Topology.ServersSpanned(g) - 1
	}
	return n
}

// forEachGroup calls fn(start, end) for each maximal run [start, end) of
// 0..n-1 in which same(start, k) holds for every k.
func forEachGroup(n int, same func(i, j int) bool, fn func(start, end int)) {
	for start := 0; start < n; {
		end := start
		for end < n && same(start, end) {
			end++
		}
		fn(start, end)
		start = end
	}
}

// gpuPool is the free GPUs of one worker type while a round is placed, with
// the GPUs that lease holders want back marked reserved.
type gpuPool struct {
	topo        *Topology
	servers     []Server
	base        int    // the type's first GPU id
	free, resv  []bool // by GPU id − base
	nfree, nres []int  // by server index
}

// newGPUPool returns w's GPUs all free, those in prev reserved.
func (s *State) newGPUPool(w string, prev [][]int) *gpuPool {
	servers := s.Topology.Servers(w)
	n := s.Topology.Count(w)
	g := &gpuPool{topo: s.Topology, servers: servers, base: servers[0].GPUs[0], free: make([]bool, n),
		resv: make([]bool, n), nfree: make([]int, len(servers)), nres: make([]int, len(servers))}
	for si, srv := range servers {
		g.nfree[si] = len(srv.GPUs)
	}
	for i := range g.free {
		g.free[i] = true
	}
	for _, gpus := range prev {
		for _, id := range gpus {
			if !g.resv[id-g.base] {
				g.resv[id-g.base] = true
				g.nres[s.Topology.Server(id)]++
			}
		}
	}
	return g
}

// clone returns a copy of g that can be taken from without changing g.
func (g *gpuPool) clone() *gpuPool {
	c := *g
	c.free, c.resv = slices.Clone(g.free), slices.Clone(g.resv)
	c.nfree, c.nres = slices.Clone(g.nfree), slices.Clone(g.nres)
	return &c
}

func (g *gpuPool) allFree(gpus []int) bool {
	for _, id := range gpus {
		if !g.free[id-g.base] {
			return false
		}
	}
	return true
}

// unreserve marks gpus as no longer wanted back by a lease holder.
func (g *gpuPool) unreserve(gpus []int) {
	for _, id := range gpus {
		if g.resv[id-g.base] {
			g.resv[id-g.base] = false
			g.nres[g.topo.Server(id)]--
		}
	}
}

func (g *gpuPool) take(gpus []int) {
	for _, id := range gpus {
		si := g.topo.Server(id)
		g.free[id-g.base] = false
		g.nfree[si]--
		if g.resv[id-g.base] {
			g.resv[id-g.base] = false
			g.nres[si]--
		}
	}
}

// pick chooses sf free GPUs (see placeConsolidated).
func (g *gpuPool) pick(sf int) []int {
	servers, base, free, reserved, nfree, nres := g.servers, g.base, g.free, g.resv, g.nfree, g.nres
	best := -1
	for si := range servers {
		if nfree[si] < sf {
			continue
		}
		if best < 0 {
			best = si
			continue
		}
		cost := func(i int) (int, int) { return max(0, sf-(nfree[i]-nres[i])), nfree[i] }
		c1, f1 := cost(si)
		c0, f0 := cost(best)
		if c1 < c0 || (c1 == c0 && f1 < f0) {
			best = si
		}
	}
	order := []int{best}
	if best < 0 {
		order = order[:0]
		for si := range servers {
			if nfree[si] > 0 {
				order = append(order, si)
			}
		}
		slices.SortStableFunc(order, func(a, b int) int {
			return cmp.Or(cmp.Compare(nfree[b], nfree[a]), cmp.Compare(nres[a], nres[b]))
		})
	}
	gpus := make([]int, 0, sf)
	for _, si := range order {
		// Unreserved GPUs first, so that a lease holder placed later still
		// finds the GPUs it had; lowest id first for determinism.
		for pass := 0; pass < 2 && len(gpus) < sf; pass++ {
			for _, id := range servers[si].GPUs {
				if len(gpus) == sf {
					break
				}
				if free[id-base] && reserved[id-base] == (pass == 1) && !slices.Contains(gpus, id) {
					gpus = append(gpus, id)
				}
			}
		}
		if len(gpus) == sf {
			break
		}
	}
	return gpus
}

// placeCompat is Gavel's placement: largest scale factor first; a
// combination that ran on this type last round keeps its GPUs when none is
// taken yet; the rest fill servers in order through a moving pointer.
// Combinations absent from the allocation are selected but not placed.
func (s *State) placeCompat(p *RoundPlan, w string, sel []*entry) {
	if len(sel) == 0 {
		return
	}
	ptr := newGavelPointer(s.Topology.Servers(w))
	order := slices.Clone(sel)
	slices.SortStableFunc(order, func(a, b *entry) int { return cmp.Compare(b.sf, a.sf) })
	placed := map[policy.Combination]bool{}
	forEachGroup(len(order), func(i, j int) bool { return order[i].sf == order[j].sf }, func(start, end int) {
		for _, e := range order[start:end] {
			if prev := s.previousOn(e.c, w, e.sf); prev != nil && ptr.allFree(prev) {
				ptr.take(prev)
				p.Assignments = append(p.Assignments, assignment(*e, prev, true))
				placed[e.c] = true
			}
		}
		for _, e := range order[start:end] {
			switch {
			case placed[e.c]:
			case !e.inAlloc:
				p.Unplaced = append(p.Unplaced, e.c)
			default:
				p.Assignments = append(p.Assignments, assignment(*e, ptr.next(e.sf), false))
				placed[e.c] = true
			}
		}
	})
}

// gavelPointer is Gavel's GPU assignment for new combinations: a pointer
// that walks the servers in order, handing out each server's GPUs in turn
// and skipping those a lease holder kept.
type gavelPointer struct {
	srvs     []Server
	lists    [][]int // per server, the GPUs the pointer has not passed yet
	ptr      int
	assigned map[int]bool
}

func newGavelPointer(srvs []Server) *gavelPointer {
	lists := make([][]int, len(srvs))
	for i, srv := range srvs {
		lists[i] = append([]int(nil), srv.GPUs...)
	}
	return &gavelPointer{srvs: srvs, lists: lists, assigned: map[int]bool{}}
}

func (g *gavelPointer) allFree(gpus []int) bool {
	for _, id := range gpus {
		if g.assigned[id] {
			return false
		}
	}
	return true
}

func (g *gavelPointer) take(gpus []int) {
	for _, id := range gpus {
		g.assigned[id] = true
	}
}

// next hands out sf GPUs from the pointer on.
func (g *gavelPointer) next(sf int) []int {
	var gpus []int
	for len(gpus) < sf && g.ptr < len(g.lists) {
		if len(g.lists[g.ptr]) == 0 {
			g.ptr++
			continue
		}
		id := g.lists[g.ptr][0]
		if !g.assigned[id] {
			gpus = append(gpus, id)
			g.assigned[id] = true
		}
		g.lists[g.ptr] = g.lists[g.ptr][1:]
	}
	if len(gpus) < sf {
		// Gavel raises here; take any free GPUs instead (the selection
		// guarantees there are enough).
		for _, srv := range g.srvs {
			for _, id := range srv.GPUs {
				if len(gpus) < sf && !g.assigned[id] {
					gpus = append(gpus, id)
					g.assigned[id] = true
				}
			}
		}
	}
	return gpus
}
