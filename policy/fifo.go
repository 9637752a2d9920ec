package policy

import (
	"context"
	"math/rand/v2"
	"sync"
)

// fifoState is FIFO's memory: in agnostic mode jobs keep their worker type
// across calls (Gavel's base mode); the random stream of agnostic choices.
type fifoState struct {
	mu       sync.Mutex
	assigned map[string]string // job id → worker type
	rng      *rand.Rand
}

// fifo is Gavel's FIFO (§3.4), not an LP: in (arrival, id) order each job
// gets a whole worker type (fraction 1) while GPUs are free; a job that fits
// on no worker type blocks the queue (head-of-line blocking) and jobs that
// fit only where their rate is 0 are skipped.
//   - agnostic: a seeded random worker type among those with room, kept
//     across calls. Unlike Gavel (§11.1) it never oversubscribes a type.
//   - perf: the fastest worker type with room (ties: worker type name).
//   - packed: perf, then each waiting job joins an allocated single job of
//     the same scale factor on that job's worker type when the pair's
//     summed normalized rate exceeds 1.5; the queue stops at the first job
//     that finds no such partner.
//
// Objective: the number of jobs running.
func fifo(md mode, st *fifoState) allocator {
	return func(ctx context.Context, p *Problem, opt *options) (*Allocation, error) {
		in, err := prepare(p, md, opt)
		if err != nil || in.m() == 0 {
			return orEmpty(err)
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.rng == nil {
			st.rng = rand.New(rand.NewPCG(uint64(opt.seed), 0x9e3779b97f4a7c15))
		}
		place, queue := in.fifoPlace(md, st)
		x := make([][]float64, len(in.combos))
		for c := range x {
			x[c] = make([]float64, in.nw())
		}
		partner := make([]int, in.m())
		for i := range partner {
			partner[i] = -1
		}
		if md == packed {
			in.fifoPack(queue, place, partner, x)
		}
		st.assigned = map[string]string{}
		running := 0
		for i := range in.jobs {
			if place[i] < 0 {
				continue
			}
			running++
			st.assigned[in.jobs[i].ID] = in.workers[place[i]]
			if partner[i] < 0 {
				x[i][place[i]] = 1
			}
		}
		a := in.allocation(x)
		a.Objective = float64(running)
		a.ObjectiveMeaning = "number of jobs running"
		return a, nil
	}
}

// fifoPlace gives jobs, in FIFO order, a whole worker type while GPUs are
// free. It returns each job's worker index (-1 = waiting) and the waiting
// jobs in FIFO order. Agnostic jobs first keep the type they had (Gavel's
// base mode remembers its allocation).
func (in *instance) fifoPlace(md mode, st *fifoState) (place, queue []int) {
	avail := append([]float64(nil), in.cap...)
	place = make([]int, in.m())
	for i := range place {
		place[i] = -1
	}
	if md == agnostic {
		wIdx := map[string]int{}
		for w, wt := range in.workers {
			wIdx[wt] = w
		}
		for _, i := range in.fifoOrder() {
			w, ok := wIdx[st.assigned[in.jobs[i].ID]]
			if ok && in.rate[i][w] > 0 && avail[w] >= in.sf(i) {
				place[i] = w
				avail[w] -= in.sf(i)
			}
		}
	}
	blocked := false
	for _, i := range in.fifoOrder() {
		if place[i] >= 0 {
			continue
		}
		if blocked {
			queue = append(queue, i)
			continue
		}
		var fits []int
		anyRoom := false
		for w := range in.workers {
			if avail[w] >= in.sf(i) {
				anyRoom = true
				if in.rate[i][w] > 0 {
					fits = append(fits, w)
				}
			}
		}
		// No room anywhere blocks the queue (head of line); room only where
		// the job cannot run skips it.
		blocked = !anyRoom
		if len(fits) == 0 {
			queue = append(queue, i)
			continue
		}
		w := fits[0]
		if md == agnostic {
			w = fits[st.rng.IntN(len(fits))]
		} else {
			for _, v := range fits[1:] {
				if in.rate[i][v] > in.rate[i][w] {
					w = v
				}
			}
		}
		place[i] = w
		avail[w] -= in.sf(i)
	}
	return place, queue
}

// fifoPack is FIFO's packing step (§3.4, threshold 1.5): each waiting job,
// in FIFO order, joins the placed single job of its scale factor with which
// its pair has the highest summed normalized rate above 1.5 on that job's
// worker type (ties: FIFO order); the first job without such a partner
// stops the packing. It records pairs in partner and x and places the
// joining jobs.
func (in *instance) fifoPack(queue, place, partner []int, x [][]float64) {
	pairIdx := map[[2]int]int{}
	for c := in.m(); c < len(in.combos); c++ {
		pairIdx[[2]int{in.combos[c].a, in.combos[c].b}] = c
	}
	order := in.fifoOrder()
	for _, i := range queue {
		best, bestC, bestScore := -1, -1, 1.5
		for _, k := range order {
			w := place[k]
			if w < 0 || partner[k] >= 0 || in.sf(k) != in.sf(i) {
				continue
			}
			c, ok := pairIdx[[2]int{min(i, k), max(i, k)}]
			if !ok || !in.combos[c].runnable(w) {
				continue
			}
			cb := &in.combos[c]
			score := cb.ra[w]/in.rate[cb.a][w] + cb.rb[w]/in.rate[cb.b][w]
			if score > bestScore {
				best, bestC, bestScore = k, c, score
			}
		}
		if best < 0 {
			return
		}
		partner[i], partner[best] = best, i
		x[bestC][place[best]] = 1
		place[i] = place[best]
	}
}
