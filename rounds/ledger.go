package rounds

import (
	"github.com/gavelkit/gavel/policy"
)

// Ledger is the default history: for every combination and worker type, the
// seconds it was owed (its target fraction × the length of each round it was
// allocated in) and the seconds it actually ran. History survives allocation
// changes, so a job starved under one allocation stays ahead in the queue
// under the next.
type Ledger struct {
	round   float64
	owed    map[policy.Combination]map[string]float64
	got     map[policy.Combination]map[string]float64
	elapsed float64
}

// NewLedger returns an empty ledger for rounds of roundSeconds.
func NewLedger(roundSeconds float64) *Ledger {
	return &Ledger{round: roundSeconds, owed: map[policy.Combination]map[string]float64{}, got: map[policy.Combination]map[string]float64{}}
}

// Priority is target fraction ÷ received fraction, both over c's history on
// w, with one round at exactly the target added to each side as a prior: a
// new combination starts at 1, one behind its target rises above 1, one
// ahead falls below. The deficit is the time owed by the end of next round.
// A zero target gives priority 0 (back-fill only).
func (l *Ledger) Priority(c policy.Combination, w string, target float64, inAlloc bool) (float64, float64) {
	got := l.got[c][w]
	if target <= 0 {
		return 0, -got
	}
	prior := target * l.round
	owed := l.owed[c][w] + prior
	return owed / (got + prior), owed - got
}

// Busy is the time one combination occupied its GPUs in a round.
type Busy struct {
	Combination policy.Combination
	WorkerType  string
	Seconds     float64
}

// Record adds one round of length duration: every combination of alloc whose
// jobs are all active is owed target × duration on each type, and every busy
// entry is credited.
func (l *Ledger) Record(alloc *policy.Allocation, active func(id string) bool, duration float64, busy []Busy) {
	if alloc != nil {
		for c, x := range alloc.Fractions {
			if !active(c.A) || (c.IsPair() && !active(c.B)) {
				continue
			}
			for w, f := range x {
				if f > 0 {
					add(l.owed, c, w, f*duration)
				}
			}
		}
	}
	for _, b := range busy {
		add(l.got, b.Combination, b.WorkerType, b.Seconds)
	}
	l.elapsed += duration
}

// Forget drops every combination that contains job id.
func (l *Ledger) Forget(id string) {
	for _, m := range []map[policy.Combination]map[string]float64{l.owed, l.got} {
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
	deficits   map[string]map[policy.Combination]float64
	lastReset  float64
}

func newGavelHistory(roundSeconds float64, types []string) *gavelHistory {
	h := &gavelHistory{half: roundSeconds / 2, types: types, jobTime: map[policy.Combination]map[string]float64{},
		workerTime: map[string]float64{}, deficits: map[string]map[policy.Combination]float64{}}
	for _, w := range types {
		h.workerTime[w] = 0
		h.deficits[w] = map[policy.Combination]float64{}
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
			for _, w := range h.types {
				delete(h.deficits[w], c)
			}
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
		for _, c := range h.order {
			received := h.jobTime[c][w] - h.half
			should := 0.0
			if old != nil {
				if x, ok := old.Fractions[c]; ok {
					should = x[w] * elapsed
				}
			}
			h.deficits[w][c] += should - received
			h.jobTime[c][w] = h.half
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

// Priority is _update_priorities for one entry.
func (h *gavelHistory) Priority(c policy.Combination, w string, target float64, inAlloc bool) (float64, float64) {
	d := h.deficits[w][c]
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
