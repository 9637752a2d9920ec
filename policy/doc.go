// Package policy turns a scheduling policy into time fractions: given a
// throughput table, a cluster (GPUs per worker type) and a set of jobs, each
// policy solves an exact linear program (through policy/lp, a binding of
// COIN-OR CLP and CBC) and returns, for every job or co-located pair of jobs
// (a Combination), the fraction of time it should spend on each worker type.
//
// Policies are registered under Gavel's names (max_min_fairness_perf,
// fifo_packed, min_total_duration_perf, ...); New builds one by name and
// Names lists them. Compared with Gavel the LPs are exact where Gavel
// bisects (makespan), correct with mixed scale factors when packing, never
// oversubscribe a worker type, and report solver errors as typed errors
// instead of returning all-zero allocations.
package policy
