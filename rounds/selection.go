package rounds

import "slices"

// dueSlack absorbs rounding in the ledger's seconds: an entry due at 1 round
// plus this is due this round.
const dueSlack = 1e-9

// selectEntries picks the combinations of the next round from the sorted
// queue. In compat mode it is Gavel's greedy walk: an entry is taken when its
// type has sf free GPUs and none of its jobs is taken yet; a job that does not
// fit does not block smaller ones behind it.
//
// Outside compat mode the walk aims to keep every combination's received
// time within a round of its target on every worker type. The queue is in
// PD² order (Ledger.Rank: pseudo-deadline, b-bit, group deadline; a job with
// targets on several types ranks as a whole), and:
//
//  1. entries due this round on their type (they fall a full round behind
//     there if they sit out) are taken first, in queue order, and stay put;
//  2. every other entry with a positive target that is eligible (not already
//     a round ahead), in queue order (the most urgent job first, then its most
//     urgent type). A single-GPU job takes its most urgent type that has a
//     free GPU or can get one along an augmenting path: jobs seated in this
//     step move to another type where they are eligible, as in bipartite
//     b-matching, so a job is left out of a type only when no rearrangement
//     of the step's jobs could seat it there. A gang or pair that finds its
//     type short pushes such jobs off it the same way;
//  3. entries already a round ahead, in queue order, so no GPU idles;
//  4. back-fill: entries with no target there (not with NoBackFill).
//
// When every job has its target on one worker type and each type's targets
// sum to its GPU count, steps 1-2 are PD² on each type, which keeps every job
// within one round of its target after every round (lag in (-1, 1)). When
// targets are split, a job must choose one type per round, which couples the
// types; the augmenting paths keep nearly all cases within a round, but no
// rule is known to guarantee it for every allocation (fidelity_test.go has
// the measured rates).
func (s *State) selectEntries(es []*entry, now float64) map[string][]*entry {
	w := newWalk(s)
	if s.GavelCompat {
		for _, e := range es {
			if !(s.NoBackFill && e.prio <= 0) {
				w.try(e)
			}
		}
		return w.result()
	}
	if s.followSchedule(w, es, now) {
		return w.finish(s, es)
	}
	// A single-GPU single may later move between its eligible types.
	alts := map[string][]*entry{}
	for _, e := range es {
		if e.target > 0 && e.class == 2 && movable(e) {
			alts[e.c.A] = append(alts[e.c.A], e)
		}
	}
	for _, e := range es {
		if e.target <= 0 || e.class != 2 || e.due > 1+dueSlack {
			continue
		}
		if movable(e) {
			w.seat([]*entry{e}, alts, false)
		} else if !w.try(e) && w.push(e, alts) {
			w.try(e)
		}
	}
	for _, e := range es {
		if e.target <= 0 || e.class != 2 || w.taken[e.c.A] {
			continue
		}
		if movable(e) {
			w.seat(alts[e.c.A], alts, true)
		} else if !w.try(e) && w.push(e, alts) {
			w.try(e)
		}
	}
	return w.finish(s, es)
}

// finish is steps 3 and 4: entries already ahead, then back-fill.
func (w *walk) finish(s *State, es []*entry) map[string][]*entry {
	for _, e := range es {
		if e.target > 0 {
			w.try(e)
		}
	}
	if !s.NoBackFill {
		for _, e := range es {
			if e.target <= 0 {
				w.try(e)
			}
		}
	}
	return w.result()
}

// movable reports whether e can be moved to another worker type by an
// augmenting path: single-GPU singles only (moving a gang or a pair would
// need several GPUs to free up at once).
func movable(e *entry) bool { return !e.c.IsPair() && e.sf == 1 }

type walk struct {
	left    map[string]int
	taken   map[string]bool
	chosen  map[string][]*entry // per type, in selection order; nil = moved away
	pos     map[*entry]int      // index of a movable entry in chosen[e.w]
	movable map[*entry]bool     // placed in step 2, so it may move
	dead    map[string]bool     // full types from which no augmenting path exists
	// moves counts seats and moves of movable jobs (the search graph's
	// changes); pushFailed holds its value when a push from a type failed.
	moves      int
	pushFailed map[string]int
}

func newWalk(s *State) *walk {
	w := &walk{left: map[string]int{}, taken: make(map[string]bool, len(s.Jobs)), chosen: map[string][]*entry{},
		pos: map[*entry]int{}, movable: map[*entry]bool{}, dead: map[string]bool{}, pushFailed: map[string]int{}}
	for _, t := range s.Topology.WorkerTypes() {
		w.left[t] = s.Topology.Count(t)
	}
	return w
}

func (w *walk) try(e *entry) bool {
	if w.left[e.w] < e.sf || w.taken[e.c.A] || (e.c.IsPair() && w.taken[e.c.B]) {
		return false
	}
	w.take(e)
	return true
}

func (w *walk) take(e *entry) {
	w.left[e.w] -= e.sf
	w.taken[e.c.A] = true
	if e.c.IsPair() {
		w.taken[e.c.B] = true
	}
	w.pos[e] = len(w.chosen[e.w])
	w.chosen[e.w] = append(w.chosen[e.w], e)
}

// seat places a single-GPU job on one of its eligible entries (cands, in
// queue order): directly when one of their types has a free GPU, otherwise
// along an augmenting path (see path). With mobile, the job may later be
// moved to another of its eligible types to make room for others.
func (w *walk) seat(cands []*entry, alts map[string][]*entry, mobile bool) bool {
	if len(cands) == 0 || w.taken[cands[0].c.A] {
		return false
	}
	for _, e := range cands {
		if w.try(e) {
			w.movable[e] = mobile
			w.moves++
			return true
		}
		if end, parent, ok := w.path([]string{e.w}, alts, false); ok {
			w.shift(end, parent)
			w.take(e)
			w.movable[e] = mobile
			w.moves++
			return true
		}
	}
	return false
}

// push frees GPUs on e's type for a combination that cannot move (a gang or
// a pair) by moving movable jobs to other types, one augmenting path per GPU.
func (w *walk) push(e *entry, alts map[string][]*entry) bool {
	if w.taken[e.c.A] || (e.c.IsPair() && w.taken[e.c.B]) {
		return false
	}
	if v, ok := w.pushFailed[e.w]; ok && v == w.moves {
		return false // nothing has moved or been seated since the last try
	}
	for w.left[e.w] < e.sf {
		end, parent, ok := w.path([]string{e.w}, alts, true)
		if !ok {
			w.pushFailed[e.w] = w.moves
			return false
		}
		w.shift(end, parent)
	}
	return true
}

// hop is one edge of an augmenting path: job entry from (on its type) moves
// to entry to (the same job on another type).
type hop struct{ from, to *entry }

// path is a breadth-first search over worker types from start for one with a
// free GPU, where type t leads to type u when a movable job on t is eligible
// on u. Types searched in vain are remembered as dead: GPUs are only ever
// taken during the walk, so no path will leave them later. With away (push,
// one start type), the start type's own free GPUs do not count.
func (w *walk) path(start []string, alts map[string][]*entry, away bool) (string, map[string]hop, bool) {
	parent := map[string]hop{}
	seen := map[string]bool{}
	var queue []string
	for _, t := range start {
		if !seen[t] && !w.dead[t] {
			seen[t] = true
			queue = append(queue, t)
		}
	}
	nstart := len(queue)
	for i := 0; i < len(queue); i++ {
		t := queue[i]
		if w.left[t] >= 1 && !(away && i < nstart) {
			return t, parent, true
		}
		for _, m := range w.chosen[t] {
			if m == nil || !w.movable[m] {
				continue
			}
			for _, a := range alts[m.c.A] {
				if !seen[a.w] && !w.dead[a.w] {
					seen[a.w] = true
					parent[a.w] = hop{m, a}
					queue = append(queue, a.w)
				}
			}
		}
	}
	// With away, a start type's own free GPUs were not counted, so the
	// others may still reach them.
	if !away || w.left[start[0]] == 0 {
		for _, t := range queue {
			w.dead[t] = true
		}
	}
	return "", nil, false
}

// shift applies the path ending at t back to front (each job moves one type
// down the path, so t's free GPU ends up on the path's first type) and
// returns that first type.
func (w *walk) shift(t string, parent map[string]hop) string {
	for {
		h, ok := parent[t]
		if !ok {
			return t
		}
		w.chosen[h.from.w][w.pos[h.from]] = nil
		delete(w.pos, h.from)
		delete(w.movable, h.from)
		w.left[h.from.w]++
		w.take(h.to)
		w.movable[h.to] = true
		w.moves++
		t = h.from.w
	}
}

// result returns each type's chosen entries, in selection order (those
// moved away left out).
func (w *walk) result() map[string][]*entry {
	sel := make(map[string][]*entry, len(w.chosen))
	for t, list := range w.chosen {
		list = slices.DeleteFunc(list, func(e *entry) bool { return e == nil })
		if len(list) > 0 {
			sel[t] = list
		}
	}
	return sel
}
