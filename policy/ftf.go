package policy

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/gavelkit/gavel/policy/lp"
)

// ftfState is finish-time fairness's memory across calls (§3.3): per job,
// the isolated time it has accumulated and the previous call's isolated
// rate and remaining steps.
type ftfState struct {
	mu      sync.Mutex
	cumIso  map[string]float64
	prevIso map[string]float64
	prevRem map[string]float64
	prevJob map[string]Job // as last seen, to tell a new job under the same id
}

// sameJob reports whether j can be the job was (seen at the last call): the
// same type and total steps, no less time run, no more steps left.
func sameJob(was, j Job) bool {
	return was.Type == j.Type && was.TotalSteps == j.TotalSteps && j.TimeRun >= was.TimeRun && j.StepsRemaining() <= was.StepsRemaining()
}

// finishTimeFairness minimizes max_i ρ_i with
//
//	ρ_i = E_alloc_i / E_iso_i,  E_alloc_i = TimeRun_i + steps_i/eff_i,
//	E_iso_i = cumIso_i + steps_i/iso_i
//
// exactly. ρ_i = (TimeRun_i·eff_i + steps_i)/(E_iso_i·eff_i) is a ratio of
// affine functions of x, so the min-max is a generalized fractional program;
// it is solved by the Dinkelbach-type method of Crouzeix, Ferland and
// Schaible (1985): at ρ_k solve the LP
//
//	minimize z  s.t.  steps_i + (TimeRun_i − ρ_k·E_iso_i)·eff_i(x) ≤ z·E_iso_i·eff_i(x_{k−1})
//
// then ρ_{k+1} = max_i ρ_i(x_k); it stops when z ≥ 0 (ρ_k is optimal).
// Gavel solves the same objective as an SOCP with ECOS. Like Gavel, weights
// are not used; unlike Gavel, state for jobs that left is dropped.
func finishTimeFairness(md mode, st *ftfState) allocator {
	return func(ctx context.Context, p *Problem, opt *options) (*Allocation, error) {
		in, err := prepare(p, md, opt)
		if err != nil {
			return nil, err
		}
		st.mu.Lock()
		defer st.mu.Unlock()
		if in.m() == 0 {
			st.cumIso, st.prevIso, st.prevRem, st.prevJob = nil, nil, nil, nil
			return emptyAllocation(), nil
		}
		view, err := in.familyView(md, opt)
		if err != nil {
			return nil, err
		}
		iso := in.isolated(view)
		// Update the accumulated isolated time (on a copy: committed only on success).
		cum := map[string]float64{}
		eIso := make([]float64, in.m())
		for i, j := range in.jobs {
			// A job that cannot be the one last seen under its id (another
			// type or total, less time run, more steps left: an id used
			// again, a rollback) starts afresh: a negative gain made E_iso
			// small or negative and the LP infeasible, and a new job would
			// otherwise inherit the old one's isolated time.
			//
			// A job first seen with steps done (a jobs file of running jobs, a one-shot
			// allocate) is credited the isolated time those steps took at today's isolated
			// rate, which is what the running total would hold had it been seen from the start
			// with as many jobs present as now (the isolated rate moves with their number;
			// there is no history to do better): with none, it looked far behind (ρ 2 for a
			// job 40% done in 60 s that needs 60 s more alone, not 1.2) and was favoured. The
			// simulator admits jobs with none done (work done before arrival shortens them).
			c := j.StepsDone / iso[i]
			if was, ok := st.prevJob[j.ID]; ok && sameJob(was, j) {
				c = st.cumIso[j.ID]
				if prev := st.prevIso[j.ID]; prev > 0 {
					c += (st.prevRem[j.ID] - j.StepsRemaining()) / prev
				}
			}
			cum[j.ID] = c
			eIso[i] = c + j.StepsRemaining()/iso[i]
		}
		rate := in.viewRates(view)
		var stats SolveStats
		a, rho, err := solveFTF(ctx, in, opt, rate, eIso, iso, md == agnostic, &stats)
		if err != nil {
			return nil, err
		}
		st.cumIso, st.prevIso, st.prevRem, st.prevJob = cum, map[string]float64{}, map[string]float64{}, map[string]Job{}
		for i, j := range in.jobs {
			st.prevIso[j.ID] = iso[i]
			st.prevRem[j.ID] = j.StepsRemaining()
			st.prevJob[j.ID] = j
		}
		a.Objective, a.Stats = rho, stats
		a.ObjectiveMeaning = "max over jobs with steps left of the finish-time ratio ρ = (time run + steps left/effective) / " +
			"(isolated time so far + steps left/isolated throughput)"
		return a, nil
	}
}

// ftfMaxIter bounds the fractional-programming iterations; in practice 2-4
// LPs suffice (convergence is superlinear).
const ftfMaxIter = 50

func solveFTF(ctx context.Context, in *instance, opt *options, rate rateFunc, eIso, iso []float64, agnosticView bool, st *SolveStats) (*Allocation, float64, error) {
	var active []int // jobs with work left; done jobs do not constrain the objective
	for i, j := range in.jobs {
		if j.StepsRemaining() > 0 {
			active = append(active, i)
		}
	}
	// Start from the isolated allocation (x = equal share), which every job
	// can use: eff_i > 0 because each job runs somewhere.
	x := isolatedFractions(in)
	// With gangs the isolated allocation can give a gang time beside jobs
	// that leave it too few GPUs; start from what rounds can realize, so
	// that it is what is returned when no LP improves on it.
	if !in.settleCovers(x) {
		st.Unsettled++
	}
	if realizable, err := in.shrinkToRounds(ctx, x, opt, st); err != nil {
		return nil, 0, err
	} else if !realizable {
		st.Unsettled++
	}
	effAt := func(x [][]float64) []float64 { return in.throughputAt(x, rate) }
	ratio := func(e []float64) float64 {
		r := 0.0
		for _, i := range active {
			j := in.jobs[i]
			if e[i] <= 0 {
				return math.Inf(1)
			}
			r = math.Max(r, (j.TimeRun+j.StepsRemaining()/e[i])/eIso[i])
		}
		return r
	}
	finish := func(x [][]float64) (*Allocation, error) {
		var warn string
		if agnosticView {
			var err error
			if x, warn, err = in.spread(ctx, opt, st, x); err != nil {
				return nil, err
			}
		}
		a := in.allocation(x)
		a.Warnings = appendNonEmpty(a.Warnings, warn)
		return a, nil
	}
	if len(active) == 0 {
		a, err := finish(x)
		return a, 0, err
	}
	eff := effAt(x)
	rho := ratio(eff)
	converged := false
	for k := 0; k < ftfMaxIter && !converged; k++ {
		b := in.newBuilder(lp.Minimize)
		b.tightRows = true
		z := b.m.AddCol(-lp.Inf, lp.Inf, 1)
		for _, i := range active {
			j := in.jobs[i]
			// steps + (a − ρE)·eff(x) ≤ z·E·eff(x_prev), divided by steps for scale.
			s := j.StepsRemaining()
			idx, val := b.expr(i, rate, (j.TimeRun-rho*eIso[i])/s)
			b.m.AddRow(-lp.Inf, -1, append(idx, z), append(val, -eIso[i]*eff[i]/s))
		}
		res, err := b.solve(ctx, opt, st)
		if err != nil {
			return nil, 0, err
		}
		if res.Objective >= -1e-9 {
			converged = true // no x beats ρ: ρ is optimal
			break
		}
		nx := b.fractions(res)
		ne := effAt(nx)
		nr := ratio(ne)
		if !(nr < rho) {
			converged = true // numerically no progress
			break
		}
		converged = rho-nr <= 1e-10*rho
		x, eff, rho = nx, ne, nr
	}
	a, err := finish(x)
	if err != nil {
		return nil, 0, err
	}
	a.Terms = map[string]float64{}
	for _, i := range active {
		j := in.jobs[i]
		a.Terms[j.ID] = (j.TimeRun + j.StepsRemaining()/eff[i]) / eIso[i]
	}
	if !converged {
		a.Warnings = append(a.Warnings, fmt.Sprintf("finish-time fairness: stopped after %d LPs at ρ = %g before proving optimality", ftfMaxIter, rho))
	}
	return a, rho, nil
}
