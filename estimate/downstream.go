package estimate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// ToTable returns a table with d's isolated rates and r's pair estimates (infeasible entries as
// infeasible); with r nil, d's own known pairs.
func ToTable(d *Data, r *Result) *table.Table {
	t := table.New()
	for w, wt := range d.Workers {
		for i, j := range d.Jobs {
			if !math.IsNaN(d.Iso[w][i]) {
				t.SetIsolated(wt, j, d.Iso[w][i])
			}
		}
	}
	if r == nil {
		d.WriteTo(t)
		return t
	}
	for w, wt := range d.Workers {
		for i := range d.Jobs {
			for k := i; k < len(d.Jobs); k++ {
				if r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
					t.SetInfeasible(wt, d.Jobs[i], d.Jobs[k])
					continue
				}
				t.SetPair(wt, d.Jobs[i], d.Jobs[k], r.Norm[w][i][k]*d.Iso[w][i], r.Norm[w][k][i]*d.Iso[w][k])
			}
		}
	}
	return t
}

// DownstreamPolicies lists the policies Downstream takes, sorted: the max-min fairness policies
// that pack jobs (policy.Names ending in "_packed"). The ratio is a max-min objective, which
// other policies (FIFO, sums of throughput) may rightly leave at 0 by giving a job nothing; and
// only a policy that packs reads the pair rates an estimate fills, so with any other the two
// allocations are the same and the ratio is 1 whatever the estimate.
func DownstreamPolicies() []string {
	var out []string
	for _, n := range policy.Names() {
		if strings.HasPrefix(n, "max_min_fairness") && strings.HasSuffix(n, "_packed") {
			out = append(out, n)
		}
	}
	return out
}

// Downstream returns a score of an estimate by what it does to scheduling, for
// EvalOptions.Downstream: one job of every job type of the block on a cluster of gpusPerWorker
// GPUs of each worker type, allocated by the policy (one of DownstreamPolicies, e.g.
// "max_min_fairness_packed") on the estimated table, and the allocation's max-min objective (the
// smallest normalized throughput) evaluated with the true rates (a pair that is truly infeasible
// gives its jobs nothing), divided by the objective of the allocation computed on the true table.
// 1 means the estimate cost nothing. The score's allocations stop with ctx's error once ctx is
// done.
//
// Downstream fails, before anything is estimated, for a policy name New does not know (the
// error is policy.New's), for one that is not in DownstreamPolicies, and for gpusPerWorker
// below 1.
func Downstream(policyName string, gpusPerWorker int) (func(ctx context.Context, truth *Data, r *Result) (float64, error), error) {
	if _, err := policy.New(policyName); err != nil {
		return nil, err
	}
	if ok := DownstreamPolicies(); !slices.Contains(ok, policyName) {
		return nil, fmt.Errorf("policy %s: the downstream ratio is the max-min fairness objective of an allocation that packs jobs; want one of %s",
			policyName, strings.Join(ok, ", "))
	}
	if gpusPerWorker < 1 {
		return nil, fmt.Errorf("%d GPUs per worker type: want at least 1", gpusPerWorker)
	}
	return func(ctx context.Context, truth *Data, r *Result) (float64, error) {
		cluster := policy.Cluster{}
		for _, w := range truth.Workers {
			cluster[w] = gpusPerWorker
		}
		var jobs []policy.Job
		for i, j := range truth.Jobs {
			jobs = append(jobs, policy.Job{ID: fmt.Sprintf("j%03d", i), Type: j, Weight: 1, TotalSteps: 1e6})
		}
		alloc := func(t *table.Table) (*policy.Allocation, error) {
			p, err := policy.New(policyName)
			if err != nil {
				return nil, err
			}
			return p.Allocate(ctx, &policy.Problem{Table: t, Cluster: cluster, Jobs: jobs})
		}
		best, err := alloc(ToTable(truth, nil))
		if err != nil {
			return 0, fmt.Errorf("true table: %w", err)
		}
		est, err := alloc(ToTable(truth, r))
		if err != nil {
			return 0, fmt.Errorf("estimated table: %w", err)
		}
		eff := trueEffective(truth, jobs, est)
		// Normalized throughput divides by a job's equal-share rate, which depends only on the
		// (exact) isolated rates, so both allocations share it.
		objTrue, objEst := math.Inf(1), math.Inf(1)
		for i, j := range jobs {
			nb, ok1 := best.Normalized[j.ID]
			eb, ok2 := best.Effective[j.ID]
			if !ok1 || !ok2 || eb <= 0 {
				return 0, fmt.Errorf("true allocation: policy %s gives job type %s nothing, so the max-min objective is 0 and there is no ratio", policyName, j.Type)
			}
			share := eb / nb
			objTrue = math.Min(objTrue, nb)
			objEst = math.Min(objEst, eff[i]/share)
		}
		return objEst / objTrue, nil
	}, nil
}

// trueEffective returns each job's effective rate under alloc with truth's rates (jobs[i] is of
// job type i); a pair that is truly infeasible gives its jobs nothing.
func trueEffective(truth *Data, jobs []policy.Job, alloc *policy.Allocation) []float64 {
	id := map[string]int{}
	for i := range jobs {
		id[jobs[i].ID] = i
	}
	// Summed in a fixed order (combinations sorted, then worker types in truth's order), so the
	// ratio is the same to the bit on every run; map order would change its last digits.
	eff := make([]float64, len(jobs))
	for _, c := range alloc.Combinations() {
		fr := alloc.Fractions[c]
		a := id[c.A]
		for w, wname := range truth.Workers {
			x, ok := fr[wname]
			if !ok || x <= 0 {
				continue
			}
			if !c.IsPair() {
				eff[a] += x * truth.Iso[w][a]
				continue
			}
			b := id[c.B]
			if truth.State[w][a][b] != table.Measured {
				continue
			}
			eff[a] += x * truth.Norm[w][a][b] * truth.Iso[w][a]
			eff[b] += x * truth.Norm[w][b][a] * truth.Iso[w][b]
		}
	}
	return eff
}
