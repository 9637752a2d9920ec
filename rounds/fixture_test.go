package rounds

import (
	"context"
	"slices"

	"github.com/gavelkit/gavel/policy"
)

// refFIFOPerf is Gavel's FIFO policy in perf mode (gavel-reference §3.4),
// written out here so the compat simulator can be checked on its own: jobs in
// id order take the fastest worker type with sf free GPUs (ties: sorted
// order); the first job that fits nowhere blocks the queue.
type refFIFOPerf struct{}

func (refFIFOPerf) Name() string        { return "fifo_perf" }
func (refFIFOPerf) RuntimeName() string { return "FIFO_Perf" }

func (refFIFOPerf) Allocate(_ context.Context, p *policy.Problem) (*policy.Allocation, error) {
	types := p.Cluster.WorkerTypes()
	avail := map[string]int{}
	for _, w := range types {
		avail[w] = p.Cluster[w]
	}
	jobs := slices.Clone(p.Jobs)
	slices.SortFunc(jobs, func(a, b policy.Job) int { return policy.CompareIDs(a.ID, b.ID) })
	a := &policy.Allocation{Policy: "fifo_perf", Fractions: map[policy.Combination]map[string]float64{}}
	for _, j := range jobs {
		x := map[string]float64{}
		for _, w := range types {
			x[w] = 0
		}
		a.Fractions[policy.Single(j.ID)] = x
	}
	for _, j := range jobs {
		best, bestRate, any := "", 0.0, false
		for _, w := range types {
			if avail[w] < j.Type.ScaleFactor {
				continue
			}
			any = true
			r, _ := p.Table.Isolated(w, j.Type)
			if best == "" || r > bestRate {
				best, bestRate = w, r
			}
		}
		if !any {
			break
		}
		if bestRate > 0 {
			a.Fractions[policy.Single(j.ID)][best] = 1
			avail[best] -= j.Type.ScaleFactor
		}
	}
	return a, nil
}
