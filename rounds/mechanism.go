package rounds

import (
	"cmp"
	"math"
	"slices"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// Job is what the mechanism needs to know about an active job.
type Job struct {
	ID          string
	Type        table.JobType
	ScaleFactor int
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
}

// State is the mechanism's input besides the allocation.
type State struct {
	Topology *Topology
	Jobs     map[string]*Job
	// PairRates is needed only when the allocation has pairs.
	PairRates PairRates
	History   Accounting
	// Previous is last round's placement, for lease extension.
	Previous map[policy.Combination][]int
	Options
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

// Plan picks the next round's assignment. It is deterministic: equal
// priorities are broken by deficit, target, arrival order and worker type
// name, never by map order. No GPU is booked twice and no job runs in two
// combinations.
func Plan(s *State, alloc *policy.Allocation, now float64) *RoundPlan {
	entries := s.entries(alloc)
	queue := make([]*entry, len(entries))
	for i := range entries {
		queue[i] = &entries[i]
	}
	s.sortEntries(queue)
	sel := s.selectEntries(queue)
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
	types := s.typeOrder()
	var fr map[policy.Combination]map[string]float64
	if alloc != nil {
		fr = alloc.Fractions
	}
	eb := &entryBuilder{s: s, jobs: s.jobUrgencies(fr), rank: make(map[string]int, len(types)),
		out: make([]entry, 0, len(s.Jobs)*len(types))}
	for i, w := range types {
		eb.rank[w] = i
	}
	eb.eu, eb.hasDue = s.History.(EntryUrgency)
	eb.hasDue = eb.hasDue && !s.GavelCompat
	// The input order does not matter: the sort's keys are total.
	for _, j := range s.Jobs {
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
	out    []entry
}

// add ranks c on w (target x[w]) and appends the entry.
func (b *entryBuilder) add(c policy.Combination, x map[string]float64, inAlloc bool, w string, sf int, key orderKey) {
	s := b.s
	target := x[w]
	r := s.History.Rank(c, w, target, inAlloc)
	ja := b.jobs[c.A]
	jk, jd := 0.0, math.Inf(1)
	if ja != nil {
		jk, jd = ja.key, ja.due
	}
	if jb := b.jobs[c.B]; c.IsPair() && jb != nil {
		jk, jd = max(jk, jb.key), min(jd, jb.due)
	}
	due := math.Inf(1)
	if b.hasDue && target > 0 {
		due = b.eu.Due(c, w, target)
	}
	// A job whose only target is this entry uses the entry's own PD²
	// tie-breaks; a job split over several entries competes as a whole.
	bbit, group, exact := 1.0, 0.0, jk
	if !c.IsPair() && target > 0 && ja != nil && ja.entries == 1 {
		bbit, group, exact = r.BBit, r.Group, r.Key
	} else if jd < math.Inf(1) {
		exact = -jd
		if jt, ok := s.History.(JobTieBreaks); ok && !c.IsPair() {
			bbit, group = jt.JobPD2(c.A, ja.total)
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
	byValue := func(a, b *entry) int {
		// Descending class, job urgency, key, tie, target.
		return cmp.Or(cmp.Compare(b.class, a.class), cmp.Compare(b.jobKey, a.jobKey),
			cmp.Compare(b.bbit, a.bbit), cmp.Compare(b.group, a.group), cmp.Compare(b.exact, a.exact),
			cmp.Compare(b.key, a.key), cmp.Compare(b.tie, a.tie), cmp.Compare(b.target, a.target))
	}
	if s.GavelCompat {
		// One queue per worker type, concatenated in walk order; ties keep
		// arrival order (Gavel's stable sort over dict order).
		slices.SortFunc(es, func(a, b *entry) int {
			return cmp.Or(cmp.Compare(a.typeRank, b.typeRank), byValue(a, b), compareOrder(a.order, b.order))
		})
		return
	}
	slices.SortFunc(es, func(a, b *entry) int {
		if c := byValue(a, b); c != 0 {
			return c
		}
		return cmp.Or(compareOrder(a.order, b.order), cmp.Compare(a.w, b.w))
	})
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
func (s *State) placeConsolidated(p *RoundPlan, w string, sel []entry) {
	if len(sel) == 0 {
		return
	}
	servers := s.Topology.Servers(w)
	base := servers[0].GPUs[0]
	n := s.Topology.Count(w)
	free := make([]bool, n)
	reserved := make([]bool, n)
	nfree := make([]int, len(servers))
	nres := make([]int, len(servers))
	for si, srv := range servers {
		nfree[si] = len(srv.GPUs)
	}
	for i := range free {
		free[i] = true
	}
	prev := make([][]int, len(sel))
	for i, e := range sel {
		prev[i] = s.previousOn(e.c, w, e.sf)
		for _, g := range prev[i] {
			if !reserved[g-base] {
				reserved[g-base] = true
				nres[s.Topology.Server(g)]++
			}
		}
	}
	take := func(g int) {
		si := s.Topology.Server(g)
		free[g-base] = false
		nfree[si]--
		if reserved[g-base] {
			reserved[g-base] = false
			nres[si]--
		}
	}
	idx := make([]int, len(sel))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(sel[b].sf, sel[a].sf), compareOrder(sel[a].order, sel[b].order))
	})
	done := make([]bool, len(sel))
	for start := 0; start < len(idx); {
		end := start
		for end < len(idx) && sel[idx[end]].sf == sel[idx[start]].sf {
			end++
		}
		group := idx[start:end]
		for _, i := range group {
			if prev[i] == nil {
				continue
			}
			ok := true
			for _, g := range prev[i] {
				ok = ok && free[g-base]
			}
			if ok {
				for _, g := range prev[i] {
					take(g)
				}
				p.Assignments = append(p.Assignments, assignment(sel[i], prev[i], true))
				done[i] = true
			}
		}
		for _, i := range group {
			if done[i] {
				continue
			}
			gpus := s.pick(servers, base, sel[i].sf, free, reserved, nfree, nres)
			for _, g := range gpus {
				take(g)
			}
			p.Assignments = append(p.Assignments, assignment(sel[i], gpus, false))
		}
		start = end
	}
}

// pick chooses sf free GPUs of one worker type (see placeConsolidated).
func (s *State) pick(servers []Server, base, sf int, free, reserved []bool, nfree, nres []int) []int {
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
		// Unreserved GPUs first, then reserved ones, lowest id first.
		for pass := 0; pass < 2 && len(gpus) < sf; pass++ {
			for _, g := range servers[si].GPUs {
				if len(gpus) == sf {
					break
				}
				if free[g-base] && reserved[g-base] == (pass == 1) && !slices.Contains(gpus, g) {
					gpus = append(gpus, g)
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
func (s *State) placeCompat(p *RoundPlan, w string, sel []entry) {
	if len(sel) == 0 {
		return
	}
	srvs := s.Topology.Servers(w)
	lists := make([][]int, len(srvs))
	for i, srv := range srvs {
		lists[i] = append([]int(nil), srv.GPUs...)
	}
	ptr := 0
	assigned := map[int]bool{}
	order := append([]entry(nil), sel...)
	slices.SortStableFunc(order, func(a, b entry) int { return cmp.Compare(b.sf, a.sf) })
	placed := map[policy.Combination]bool{}
	for start := 0; start < len(order); {
		end := start
		for end < len(order) && order[end].sf == order[start].sf {
			end++
		}
		group := order[start:end]
		for _, e := range group {
			prev := s.previousOn(e.c, w, e.sf)
			if prev == nil {
				continue
			}
			ok := true
			for _, g := range prev {
				ok = ok && !assigned[g]
			}
			if ok {
				for _, g := range prev {
					assigned[g] = true
				}
				p.Assignments = append(p.Assignments, assignment(e, prev, true))
				placed[e.c] = true
			}
		}
		for _, e := range group {
			if placed[e.c] {
				continue
			}
			if !e.inAlloc {
				p.Unplaced = append(p.Unplaced, e.c)
				continue
			}
			var gpus []int
			for len(gpus) < e.sf && ptr < len(lists) {
				if len(lists[ptr]) == 0 {
					ptr++
					continue
				}
				g := lists[ptr][0]
				if !assigned[g] {
					gpus = append(gpus, g)
					assigned[g] = true
				}
				lists[ptr] = lists[ptr][1:]
			}
			if len(gpus) < e.sf {
				// Gavel raises here; take any free GPUs instead (the
				// selection guarantees there are enough).
				for _, srv := range srvs {
					for _, g := range srv.GPUs {
						if len(gpus) < e.sf && !assigned[g] {
							gpus = append(gpus, g)
							assigned[g] = true
						}
					}
				}
			}
			p.Assignments = append(p.Assignments, assignment(e, gpus, false))
			placed[e.c] = true
		}
		start = end
	}
}
