package policy

import (
	"context"
	"math"
	"sort"
	"sync"
)

// alloxState remembers AlloX's previous assignment (it is non-preemptive).
type alloxState struct {
	mu   sync.Mutex
	prev map[string]string // job id → worker type
}

// alloxJob refuses what AlloX can never take: a job of more than one GPU.
func alloxJob(j Job) error {
	if j.Type.ScaleFactor != 1 {
		return jobErr(j.ID, "AlloX supports scale factor 1 only, got %d", j.Type.ScaleFactor)
	}
	return nil
}

// allox is AlloX (§3.7): minimum mean completion time by a min-cost
// assignment of jobs to (GPU, position) slots, non-preemptive. Jobs that
// were running keep their GPU; the others, oldest (largest TimeRun) first
// and at most max(α·waiting, free GPUs) of them, are assigned by the
// Hungarian method with cost k·steps_i/T_i,w for the job k-th from the end of
// GPU w's queue; the job at the head of each GPU's queue gets fraction 1 on
// its worker type. AlloX needs every scale factor to be 1 (like Gavel).
// Objective: the assignment's total cost, Σ completion times in seconds.
func allox(ctx context.Context, p *Problem, opt *options, st *alloxState) (*Allocation, error) {
	in, err := newInstance(p)
	if err != nil || in.m() == 0 {
		return orEmpty(err)
	}
	for _, j := range in.jobs {
		if err := alloxJob(j); err != nil {
			return nil, err
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	place, free, waiting := keepRunning(in, st.prev)
	var slots []int // free GPUs as worker indices, in worker order
	for w := range in.workers {
		for k := 0; k < int(free[w]); k++ {
			slots = append(slots, w)
		}
	}
	waiting = oldestWaiting(in, waiting, max(int(opt.alloxAlpha*float64(len(waiting))), len(slots)))
	heads, total, err := assignSlots(ctx, in, waiting, slots)
	if err != nil {
		return nil, err
	}
	for s, i := range heads {
		if i >= 0 {
			place[i] = slots[s]
		}
	}
	x := make([][]float64, len(in.combos))
	st.prev = map[string]string{}
	for i := range in.jobs {
		x[i] = make([]float64, in.nw())
		if place[i] >= 0 {
			x[i][place[i]] = 1
			st.prev[in.jobs[i].ID] = in.workers[place[i]]
		}
	}
	a := in.allocation(x)
	a.Objective = total
	a.ObjectiveMeaning = "the assignment's cost: sum of the jobs' completion times in seconds"
	return a, nil
}

// keepRunning keeps each job that ran on a worker type (prev) there while
// that type has a GPU free and a rate for it. It returns each job's worker
// index (-1 for none), the GPUs left free per worker type, and the jobs left
// waiting.
func keepRunning(in *instance, prev map[string]string) (place []int, free []float64, waiting []int) {
	wIdx := map[string]int{}
	for w, wt := range in.workers {
		wIdx[wt] = w
	}
	free = append([]float64(nil), in.cap...)
	place = make([]int, in.m())
	for i, j := range in.jobs {
		place[i] = -1
		if w, ok := wIdx[prev[j.ID]]; ok && free[w] >= 1 && in.rate[i][w] > 0 {
			place[i] = w
			free[w]--
			continue
		}
		waiting = append(waiting, i)
	}
	return place, free, waiting
}

// oldestWaiting returns the n (at most all) jobs of waiting that have
// waited longest, ties by job id.
func oldestWaiting(in *instance, waiting []int, n int) []int {
	sort.SliceStable(waiting, func(a, b int) bool {
		ja, jb := in.jobs[waiting[a]], in.jobs[waiting[b]]
		if ja.TimeRun != jb.TimeRun {
			return ja.TimeRun > jb.TimeRun
		}
		return CompareIDs(ja.ID, jb.ID) < 0
	})
	return waiting[:min(n, len(waiting))]
}

// assignSlots assigns the waiting jobs to (slot, position) pairs at least
// cost, k·steps_i/T_i,w for the job k-th from the end of slot s's queue
// (Hungarian method), and returns the job at the head of each slot's queue
// (-1 for none) and the assignment's cost. Only the context's error is
// returned.
func assignSlots(ctx context.Context, in *instance, waiting, slots []int) (heads []int, total float64, err error) {
	heads = make([]int, len(slots))
	for s := range heads {
		heads[s] = -1
	}
	if len(slots) == 0 || len(waiting) == 0 {
		return heads, 0, nil
	}
	cost, cols, big := queueCosts(in, waiting, slots)
	headK := make([]int, len(slots))
	assigned, err := hungarian(ctx, cost)
	if err != nil {
		return nil, 0, err
	}
	for a, col := range assigned {
		k, s := cols[col].k, cols[col].s
		if cost[a][col] >= big {
			continue
		}
		total += cost[a][col]
		if heads[s] < 0 || k > headK[s] {
			heads[s], headK[s] = waiting[a], k
		}
	}
	return heads, total, nil
}

// queueSlot is a column of assignSlots's cost matrix: position k (0 = the
// end of the queue) on slot s.
type queueSlot struct{ k, s int }

// queueCosts builds assignSlots's cost matrix, rows the waiting jobs,
// columns (cols) the positions (k, s), k-th from the end of slot s's queue,
// in the order k·len(slots)+s; a job without a rate on a slot's worker type
// costs big there, more than any feasible assignment.
//
// Of each worker type's positions only the first r (r waiting jobs) in that
// order are columns: slots of a type are alike, so a job at one of the
// others could move to one of those left free (at most r−1 other jobs are
// on the type), nearer the end of a queue (k no larger) and so at no more
// cost, and some optimal assignment uses them alone. All k < r of every
// slot made the matrix r × r·len(slots): 2,000 jobs waiting on 9,000 free
// GPUs asked for 36 billion entries. Now it is at most r × r·(worker types).
func queueCosts(in *instance, waiting, slots []int) (cost [][]float64, cols []queueSlot, big float64) {
	r, f := len(waiting), len(slots)
	q := make([][]float64, r)
	maxQ := 0.0
	for a, i := range waiting {
		q[a] = make([]float64, f)
		for s, w := range slots {
			if in.rate[i][w] > 0 {
				q[a][s] = in.jobs[i].StepsRemaining() / in.rate[i][w]
				maxQ = math.Max(maxQ, q[a][s])
			} else {
				q[a][s] = math.Inf(1)
			}
		}
	}
	big = (maxQ*float64(r)*float64(r) + 1) * 10
	// Each slot's place among its type's slots, and how many its type has
	// (slots are in worker order, so a type's slots are contiguous).
	first := map[int]int{}
	perType := map[int]int{}
	for s, w := range slots {
		if _, ok := first[w]; !ok {
			first[w] = s
		}
		perType[w]++
	}
	for k := 0; k < r; k++ {
		more := false
		for s, w := range slots {
			if rank := k*perType[w] + s - first[w]; rank < r {
				cols = append(cols, queueSlot{k, s})
				more = true
			}
		}
		if !more {
			break
		}
	}
	cost = make([][]float64, r)
	for a := range q {
		cost[a] = make([]float64, len(cols))
		for c, col := range cols {
			if v := q[a][col.s]; math.IsInf(v, 1) {
				cost[a][c] = big
			} else {
				cost[a][c] = float64(col.k+1) * v
			}
		}
	}
	return cost, cols, big
}

// hungarian solves the rectangular assignment problem (rows ≤ columns):
// every row gets a distinct column minimizing the total cost. It returns the
// column of each row. O(rows²·columns), shortest augmenting paths with
// potentials; ties go to the lowest column index. It stops, with the
// context's error, when ctx ends (checked once a row): an assignment of
// thousands of jobs takes minutes, and nothing else stopped it, so an
// interrupt (SIGINT, SIGTERM) went unheard until it ended.
//
// Each step of a row's search is one pass over the columns (scan): the
// potentials of the columns already reached, few, are kept on a list and
// moved at once, and the other columns' distances are lowered by the last
// step's delta as the next pass reads them, the same subtraction on the
// same values as a separate pass, so the assignment is the textbook's to
// the bit. Its second pass over every column, and per-column state in
// four arrays, made it about twice as slow (BenchmarkHungarian1000, on
// shared cores: 6.2-8.8 s against 2.5-5.0 s; 2,000 jobs took 82 s). The
// steps stay O(rows²·columns): ties go to the lowest column, often one
// already assigned, so a row's search walks through those before a free
// one; preferring a free column among equals was 8x faster with many GPUs
// but slower with deep queues, and changes which equal-cost optimum (so
// which jobs head the queues) comes out.
func hungarian(ctx context.Context, cost [][]float64) ([]int, error) {
	n := len(cost)
	if n == 0 {
		return nil, nil
	}
	h := newAssignment(n, len(cost[0]))
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h.addRow(i, cost)
	}
	out := make([]int, n)
	for j := 1; j <= h.m; j++ {
		if h.col[j].p > 0 {
			out[h.col[j].p-1] = j - 1
		}
	}
	return out, nil
}

// assignment is hungarian's state, 1-based with column 0 a sentinel.
type assignment struct {
	m       int
	u       []float64 // row potentials
	col     []column
	reached []int // the columns used in this row's search, in order
}

// column is a column's part of the state, kept together: each step of a
// search reads and writes most of it for every column.
type column struct {
	v    float64 // potential
	minv float64 // distance in this row's search
	p    int     // row assigned, 0 = free
	way  int     // the column before it on the path
	used bool    // reached in this row's search
}

func newAssignment(n, m int) *assignment {
	return &assignment{m: m, u: make([]float64, n+1), col: make([]column, m+1)}
}

// addRow assigns row i by the shortest augmenting path from it.
func (h *assignment) addRow(i int, cost [][]float64) {
	col := h.col
	col[0].p = i
	j0 := 0
	for j := range col {
		col[j].minv = math.Inf(1)
		col[j].used = false
	}
	h.reached = h.reached[:0]
	last := 0.0 // the previous step's delta, not yet taken off minv
	for {
		col[j0].used = true
		h.reached = append(h.reached, j0)
		delta, j1 := h.scan(cost[col[j0].p-1], h.u[col[j0].p], j0, last)
		for _, j := range h.reached {
			h.u[col[j].p] += delta
			col[j].v -= delta
		}
		last = delta
		j0 = j1
		if col[j0].p == 0 {
			break
		}
	}
	for j0 != 0 {
		j1 := col[j0].way
		col[j0].p = col[j1].p
		j0 = j1
	}
}

// scan is one step of the search from column j0, whose row has costs row
// and potential ui: it lowers each free column's distance by the last
// step's delta, relaxes it through j0, and returns the least distance and
// the lowest column at it.
func (h *assignment) scan(row []float64, ui float64, j0 int, last float64) (delta float64, j1 int) {
	delta = math.Inf(1)
	cols := h.col[1 : h.m+1]
	row = row[:len(cols)]
	for k := range cols {
		c := &cols[k]
		if c.used {
			continue
		}
		c.minv -= last
		if cur := row[k] - ui - c.v; cur < c.minv {
			c.minv, c.way = cur, j0
		}
		if c.minv < delta {
			delta, j1 = c.minv, k+1
		}
	}
	return delta, j1
}
