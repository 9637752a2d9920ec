package rounds

import (
	"math"
	"slices"

	"github.com/gavelkit/gavel/policy"
)

// Ledger is the default history: for every combination and worker type, the
// seconds it was owed (its target fraction × the length of each round it was
// allocated in) and the seconds it actually ran. History survives allocation
// changes, so a job starved under one allocation stays ahead in the queue
// under the next. A lead does not carry over the same way: time run more
// than a round ahead of what was owed (on GPUs that would otherwise idle:
// back-fill, or a job already a round ahead) counts as received, but ranks
// as at most one round ahead, so a job that had idle GPUs to itself is not
// kept off them for as long once others want them (before, a job allocated
// a quarter of an otherwise idle GPU for 100 rounds then ran in 13 of the
// next 100 rounds at a target of a half).
//
// A Ledger's state is not exported and cannot be saved: a scheduler that
// restarts either starts a new one (every job then starts even, with no
// debt or lead) or replays its Record and Forget calls, which give the same
// ledger. With Options.Decompose, the State's decomposition is not saved
// either; it starts again with no rounds counted.
type Ledger struct {
	round   float64
	owed    map[policy.Combination]map[string]float64
	got     map[policy.Combination]map[string]float64
	owedJob map[string]float64 // per job, over its combinations and types
	gotJob  map[string]float64
	// rgot and rgotJob are got and gotJob as ranked: at most a round
	// beyond owed (see the type's comment).
	rgot    map[policy.Combination]map[string]float64
	rgotJob map[string]float64
	elapsed float64
}

// NewLedger returns an empty ledger for rounds of roundSeconds.
func NewLedger(roundSeconds float64) *Ledger {
	return &Ledger{round: roundSeconds, owed: map[policy.Combination]map[string]float64{}, got: map[policy.Combination]map[string]float64{},
		owedJob: map[string]float64{}, gotJob: map[string]float64{}, rgot: map[policy.Combination]map[string]float64{}, rgotJob: map[string]float64{}}
}

// Rank orders c on w like Pfair (PD²) scheduling with early release. c is
// eligible when running it this round would not put it a full round ahead of
// its target (owed + target·T > received); eligible entries go first, then
// the rest (so GPUs are not left idle), each by pseudo-deadline, earliest
// first: the time from now at which owed will exceed received plus one more
// round, (received + T − owed) ÷ target. This keeps a combination within
// about one round of its target on a steady job set, which a bare ratio does
// not (it lets small targets steal rounds from large ones, or starves them,
// by rounding). The reported priority is Gavel's notion, target fraction ÷
// received fraction, both measured at the end of the round being planned as
// if c ran in it: (owed + target·T) ÷ (received + T), received as ranked (a
// lead counts as at most a round; see Ledger). A zero target ranks
// last (back-fill), least-served first.
func (l *Ledger) Rank(c policy.Combination, w string, target float64, inAlloc bool) Rank {
	if target <= 0 {
		return Rank{Class: 0, Key: -l.got[c][w]}
	}
	got, owed := l.rgot[c][w], l.owed[c][w]
	class := 1
	if owed+target*l.round > got+1e-9*l.round {
		class = 2
	}
	due := (got + l.round - owed) / (target * l.round) // rounds from now
	r := Rank{Class: class, Priority: (owed + target*l.round) / (got + l.round), Key: -due, Tie: target}
	r.BBit, r.Group = pd2(got/l.round, owed/(target*l.round), target)
	return r
}

// pd2 is PD²'s tie-breaks (Anderson and Srinivasan) among quanta with the
// same pseudo-deadline, for the next quantum of a task of weight x that has
// received `done` rounds after tau rounds of its virtual time: the b-bit (1
// when the subtask's window overlaps the next one's) and, for heavy tasks
// (x ≥ 1/2), the group deadline in rounds from now. PD² (earliest
// pseudo-deadline, then these) keeps every task within one round of its
// target on m processors whenever the weights sum to at most m.
func pd2(done, tau, x float64) (bbit, group float64) {
	const eps = 1e-9
	up := func(v float64) float64 { return math.Ceil(v - eps) }
	i := done + 1
	if i/x-math.Floor(i/x+eps) > eps {
		bbit = 1
	}
	switch {
	case x >= 1-eps:
		group = math.Inf(1)
	case x >= 0.5:
		group = up(up(up(i/x)*(1-x))/(1-x)) - tau
	}
	return bbit, group
}

// Busy is the time one combination occupied its GPUs in a round.
type Busy struct {
	Combination policy.Combination
	WorkerType  string
	Seconds     float64
}

// Record adds one round of length duration: every combination of alloc whose
// jobs are all active is owed target × duration on each type, and every busy
// entry is credited (for ranking, up to a round beyond what it was owed; see
// Ledger).
func (l *Ledger) Record(alloc *policy.Allocation, active func(id string) bool, duration float64, busy []Busy) {
	if alloc != nil {
		// Singles first, then pairs sorted, types sorted: a job's sums come
		// out the same to the last bit on every run.
		var pairs []policy.Combination
		for c := range alloc.Fractions {
			if c.IsPair() {
				pairs = append(pairs, c)
			} else {
				l.owe(c, alloc.Fractions[c], active, duration)
			}
		}
		sortCombinations(pairs)
		for _, c := range pairs {
			l.owe(c, alloc.Fractions[c], active, duration)
		}
	}
	for _, b := range busy {
		add(l.got, b.Combination, b.WorkerType, b.Seconds)
		add(l.rgot, b.Combination, b.WorkerType, b.Seconds)
		for _, m := range members(b.Combination) {
			l.gotJob[m] += b.Seconds
			l.rgotJob[m] += b.Seconds
		}
	}
	for _, b := range busy {
		c, w := b.Combination, b.WorkerType
		l.rgot[c][w] = min(l.rgot[c][w], l.owed[c][w]+l.round)
		for _, m := range members(c) {
			l.rgotJob[m] = min(l.rgotJob[m], l.owedJob[m]+l.round)
		}
	}
	l.elapsed += duration
}

// Due is c's pseudo-deadline on w in rounds from now: the rounds it can sit
// out before it is owed a full round more than it received there.
func (l *Ledger) Due(c policy.Combination, w string, target float64) float64 {
	return (l.rgot[c][w] + l.round - l.owed[c][w]) / (target * l.round)
}

// owe adds what c was owed over one round, unless one of its jobs was gone.
func (l *Ledger) owe(c policy.Combination, x map[string]float64, active func(id string) bool, duration float64) {
	if !active(c.A) || (c.IsPair() && !active(c.B)) {
		return
	}
	var buf [8]typeValue // the usual few worker types, sorted on the stack
	for _, tv := range appendSorted(buf[:0], x) {
		if w, f := tv.w, tv.v; f > 0 {
			add(l.owed, c, w, f*duration)
			for _, m := range members(c) {
				l.owedJob[m] += f * duration
			}
		}
	}
}

// JobDue is job id's pseudo-deadline as a whole, in rounds from now.
func (l *Ledger) JobDue(id string, totalTarget float64) float64 {
	return (l.rgotJob[id] + l.round - l.owedJob[id]) / (totalTarget * l.round)
}

// JobPD2 is PD²'s tie-breaks (see pd2) for job id as a whole.
func (l *Ledger) JobPD2(id string, totalTarget float64) (bbit, group float64) {
	return pd2(l.rgotJob[id]/l.round, l.owedJob[id]/(totalTarget*l.round), min(totalTarget, 1))
}

// Forget drops every combination that contains job id.
func (l *Ledger) Forget(id string) {
	delete(l.owedJob, id)
	delete(l.gotJob, id)
	delete(l.rgotJob, id)
	for _, m := range []map[policy.Combination]map[string]float64{l.owed, l.got, l.rgot} {
		for c := range m {
			if c.Contains(id) {
				delete(m, c)
			}
		}
	}
}

// Received returns the seconds c ran on w.
func (l *Ledger) Received(c policy.Combination, w string) float64 { return l.got[c][w] }

// Owed returns the seconds c was owed on w.
func (l *Ledger) Owed(c policy.Combination, w string) float64 { return l.owed[c][w] }

// Elapsed returns the total length of the recorded rounds.
func (l *Ledger) Elapsed() float64 { return l.elapsed }

func add(m map[policy.Combination]map[string]float64, c policy.Combination, w string, v float64) {
	x := m[c]
	if x == nil {
		x = map[string]float64{}
		m[c] = x
	}
	x[w] += v
}

// gavelHistory is Gavel's accounting (gavel-reference §5.2-5.4): time run
// since the last reset, initialized to half a round, over the per-type sum of
// those times; deficits accrue only at resets.
type gavelHistory struct {
	half       float64
	types      []string
	jobTime    map[policy.Combination]map[string]float64
	order      []policy.Combination // insertion order of jobTime (Python dict order)
	workerTime map[string]float64
	// deficits holds each combination's deficit per worker type, in the
	// order of types (one lookup a combination where reset runs over all of
	// them, every pair of a packing policy's jobs).
	deficits  map[policy.Combination][]float64
	lastReset float64
}

func newGavelHistory(roundSeconds float64, types []string) *gavelHistory {
	h := &gavelHistory{half: roundSeconds / 2, types: types, jobTime: map[policy.Combination]map[string]float64{},
		workerTime: map[string]float64{}, deficits: map[policy.Combination][]float64{}}
	for _, w := range types {
		h.workerTime[w] = 0
	}
	return h
}

// addJob registers a new single (time T/2 on every type) and, for packing
// policies, its pairs with the given partners (time 0).
func (h *gavelHistory) addJob(id string, partners []string) {
	c := policy.Single(id)
	h.jobTime[c] = map[string]float64{}
	h.order = append(h.order, c)
	for _, w := range h.types {
		h.jobTime[c][w] = h.half
	}
	for _, o := range partners {
		p := policy.PairOf(id, o)
		if _, ok := h.jobTime[p]; !ok {
			h.jobTime[p] = map[string]float64{}
			h.order = append(h.order, p)
		}
		for _, w := range h.types {
			h.jobTime[p][w] = 0
		}
	}
}

func (h *gavelHistory) removeJob(id string) {
	kept := h.order[:0]
	for _, c := range h.order {
		if c.Contains(id) {
			delete(h.jobTime, c)
			delete(h.deficits, c)
			continue
		}
		kept = append(kept, c)
	}
	h.order = kept
}

// reset is _reset_time_run_so_far: deficits accrue under the old allocation,
// then every time returns to T/2.
func (h *gavelHistory) reset(now float64, old *policy.Allocation) {
	elapsed := now - h.lastReset
	for _, w := range h.types {
		h.workerTime[w] = 0
	}
	// Combinations outside, types inside: each type's sums still run in the
	// order of combinations, and each combination is looked up once.
	for _, c := range h.order {
		jt := h.jobTime[c]
		var x map[string]float64
		inOld := false
		if old != nil {
			x, inOld = old.Fractions[c]
		}
		d := h.deficits[c]
		if d == nil {
			d = make([]float64, len(h.types))
			h.deficits[c] = d
		}
		for i, w := range h.types {
			received := jt[w] - h.half
			should := 0.0
			if inOld {
				should = x[w] * elapsed
			}
			d[i] += should - received
			jt[w] = h.half
			h.workerTime[w] += h.half
		}
	}
	h.lastReset = now
}

func (h *gavelHistory) record(c policy.Combination, w string, exec float64) {
	if x, ok := h.jobTime[c]; ok {
		x[w] += exec
		h.workerTime[w] += exec
	}
}

// Rank is _update_priorities for one entry; ties go by deficit.
func (h *gavelHistory) Rank(c policy.Combination, w string, target float64, inAlloc bool) Rank {
	p, d := h.priority(c, w, target, inAlloc)
	return Rank{Priority: p, Key: p, Tie: d}
}

func (h *gavelHistory) priority(c policy.Combination, w string, target float64, inAlloc bool) (float64, float64) {
	d := 0.0
	if i := slices.Index(h.types, w); i >= 0 && h.deficits[c] != nil {
		d = h.deficits[c][i]
	}
	if !inAlloc || target == 0 {
		return 0, d
	}
	frac := 0.0
	if wt := h.workerTime[w]; wt != 0 {
		if x, ok := h.jobTime[c]; ok {
			frac = x[w] / wt
		}
	}
	if frac > 0 {
		return target / frac, d
	}
	return target * 1e9, d
}
