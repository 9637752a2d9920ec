// Package policy turns a scheduling policy into time fractions: given a
// throughput table, a cluster (GPUs per worker type) and a set of jobs, a
// policy returns, for every job or co-located pair of jobs (a Combination),
// the fraction of time it should spend on each worker type, with each job's
// effective throughput, the objective and solve statistics.
//
// Policies are registered under Gavel's names (gavel-reference §2.1); New
// builds one by name and Names lists them:
//
//	max_min_fairness[_perf|_packed]                LAS, one LP
//	max_min_fairness_water_filling[_perf|_packed]  progressive filling, hierarchical with Problem.Entities
//	finish_time_fairness[_perf|_packed]            exact min-max ratio (a few LPs), stateful across calls
//	fifo[_perf|_packed]                            greedy, not an LP
//	min_total_duration[_perf|_packed]              makespan, one LP (and one to use the time left)
//	max_sum_throughput_perf, max_sum_throughput_normalized_by_cost_perf[_SLOs],
//	max_sum_throughput_normalized_by_cost_packed_SLOs
//	                                               one LP, and one that breaks ties by FIFO order
//	allox, allox_alpha=<a>, gandiva, isolated, proportional
//
// The plain names are heterogeneity-agnostic, _perf is aware, _packed adds
// space sharing: pairs of jobs with equal scale factors whose pair rate is
// measured (not infeasible) on some worker type; a pair the table lacks is
// never packed, and MissingPairs counts those. WithMaxPartners caps each
// job's partners for large job counts.
//
// The LPs are solved exactly with COIN-OR CLP through policy/lp (dual
// simplex, or presolve plus barrier for wide packed max-min LPs, see
// MethodAuto; tolerances 1e-9).
// Differences from Gavel, each deliberate (gavel-reference §11): makespan is
// one LP instead of a 5% bisection, and a second that gives jobs which finish
// before it the time they can use (Gavel returns any point that meets its
// makespan); the max-sum policies break ties among their optima by FIFO
// order (arrival, then id; a simplex corner gave identical jobs' time to the
// later id, and Gavel's interior-point solver splits it); packed LPs are correct with mixed scale
// factors and carry the odd-set rows of sets of 3 and 5 jobs their
// solutions would otherwise break (the pairs inside a set of 3 jobs can run
// only one at a time, so take at most all of the time together; Gavel's LP
// can give them 1.5 of it, which no sequence of rounds realizes; see
// oddsets.go); LPs with jobs of several GPUs carry cover and clique rows
// (covers.go, cliques.go: combinations that cannot all share a type's GPUs,
// or that pairwise cannot share a round, which Gavel's capacity row lets
// run together); on instances of at most 8 jobs, each LP's
// solution is decomposed into rounds (Decompose) and the inequality that
// proves it unrealizable added until it is not (roundcuts.go), so those
// allocations are the best realizable; elsewhere other facets of the set
// of rounds can still make an allocation unrealizable (rounds.Realizable
// tells, and DecomposeNearest gives the rounds whose largest share of a
// job's promised throughput lost is least); nothing is allocated where a
// job's isolated rate is 0 or where a worker type has fewer GPUs than its scale factor; agnostic FIFO never
// oversubscribes; water filling uses an exact LP-only bottleneck test and
// returns solver errors; agnostic FTF and makespan use each job's fastest
// rate (or WithReference) instead of "v100"; proportional is scaled so the
// cluster is never oversubscribed; finish-time fairness ignores weights (as
// Gavel) also when packed, forgets jobs that left, and credits a job first
// seen with steps done the isolated time they took at its isolated rate then
// (Gavel starts every job at 0, which a one-shot call gets wrong for running
// jobs). The max-min
// normalizers are Gavel's unchanged (agnostic: 1; aware: the proportional
// rate from the table). Any solver failure is returned as an
// *lp.StatusError and bad input as an error matching ErrInput; no policy
// returns an all-zero allocation in place of an error.
//
// Normalized throughput (Allocation.Normalized) is effective throughput
// divided by the job's equal-share rate (Allocation.EqualShare): its rate
// with 1/m of every worker type's GPUs, at most full time,
// Σ_w T_w·n_w / max(m·sf, N_i) over the worker types it can run on (N_i
// GPUs of them), which is what the isolated policy gives it. 1 means "as
// fast as an equal split". (Gavel's isolated throughput, §2.4, divides by
// max(m·sf, N), counting GPUs the job cannot use; finish-time fairness
// keeps it as its reference.)
//
// The max-min objectives (LAS and water filling) normalize as Gavel does, by
// the proportional rate prop = Σ_w T_w·n_w / N from the table (the job's
// rate on an average GPU, full time; 1 in the agnostic view): each job's
// term is sf·eff/(w·prop) and the objective is the smallest term. With
// more GPU demand than GPUs (m·sf ≥ N) the two differ by a constant per
// job that can run on every worker type: normalized = term·w·m/N. Allocation.Terms holds the per-job terms
// of the min-max and max-min policies and Allocation.ObjectiveMeaning says
// what the objective measures.
package policy
