// Package rounds realizes an allocation in time: Gavel's round-based
// mechanism, round plans, and a trace simulator.
//
// Vocabulary:
//
//   - round: a fixed stretch of wall-clock time (DefaultRoundSeconds, 360 s)
//     for which every GPU runs one combination or idles; decisions are made
//     only at round boundaries (in compat mode a round ends when its slowest
//     job ends, as in Gavel).
//   - combination: what one set of GPUs runs in a round, a single job or a
//     co-located pair of jobs (policy.Combination); a job with scale factor
//     k needs k GPUs of one worker type.
//   - lease: a combination's claim to the GPUs it held last round; it is
//     extended (Assignment.Extended) when the combination runs again on the
//     same GPUs, which spares a restart.
//   - ledger: the history of time owed (the allocation's target fraction ×
//     elapsed time) and received per combination and worker type (Ledger);
//     Plan ranks entries by how far received lags owed.
//   - fidelity: how close the time fraction a job received on each worker
//     type is to its target (Fidelity, RunRounds).
//   - back-fill: running a combination on GPUs that would otherwise idle,
//     because it has no target on that type or is already a round ahead of
//     it (Assignment.BackFill). Fidelity reports the time a job received
//     beyond its target, max(0, received − target), as back-fill, apart
//     from the time that counts towards the target.
//   - compat mode (Config.GavelCompat): Gavel's own simulator semantics,
//     so results compare one to one with Gavel's; see the last paragraphs.
//
// A policy (package policy) says what fraction of wall-clock time each job, or
// co-located pair of jobs (a combination), should spend on each worker type.
// The mechanism turns that into rounds of a fixed length (360 s by default):
// before each round, Plan picks the combinations to run on every GPU.
//
//	cluster (Topology) ─┐
//	jobs, history ──────┼─> Plan(state, allocation, now) ─> RoundPlan (GPU → job or pair)
//	allocation ─────────┘
//
// Plan is a pure function of its inputs (with Options.Decompose it also
// keeps, in the State, a packed allocation's decomposition and the rounds
// planned with each of its parts). It ranks every (combination, worker
// type) entry by how far the time it received lags its target (Ledger: target
// fraction vs fraction received, turned into Pfair pseudo-deadlines with PD²'s
// tie-breaks, so that every combination stays within a round of its target;
// jobs that are due as a whole go before the choice of their worker type),
// breaks ties by target, the combination's arrival order and the worker type
// name, and walks that one global queue: entries due this round first, then the rest
// in order; an entry is taken when its worker type still has enough free
// GPUs and none of its jobs is already placed, so no job runs in two
// combinations and no GPU is booked twice. A single-GPU job whose most urgent
// type is full gets a GPU there along an augmenting path (jobs placed earlier
// move to another type where they are also behind), which keeps split
// targets on track far better than the plain walk. Idle GPUs are back-filled
// with jobs that have no allocation there (except for FIFO policies).
// Placement puts multi-GPU combinations on as few servers as possible (best
// fit, largest first) and keeps a combination on the GPUs it had last round
// when they are still free. NewTopology builds servers of equal size (the
// last may be smaller); NewTopologyOfServers takes each server's size, as a
// live scheduler needs when a GPU of a middle server is out of service.
//
// An allocation with pairs or with jobs of several GPUs is different: a
// round is then a matching of the jobs, or a packing of gangs, and the walk
// above, which keeps each entry near its target on its own, can fall
// further behind the longer it runs. With Options.Decompose the allocation
// is first written as a convex combination of feasible rounds by column
// generation (an LP and a MILP through policy/lp), and each round runs the
// one furthest behind its weight; the walk fills what is left. Where no
// such combination exists it follows the nearest one
// (policy.DecomposeNearest: the largest share of a job's promised
// throughput lost is least). Neither that nor the walk is better on every
// allocation, so RunRounds plans both and keeps the plan with the smaller
// largest shortfall (for an allocation no rounds give, the one that loses
// the worst-served job less throughput); the simulator, whose allocation changes every few
// rounds, uses the walk. The same decomposition tells whether any rounds
// give an allocation exactly (Realizable): when not, part of any shortfall
// is the allocation's.
//
// The simulator (Simulate) replays a trace on a virtual clock: arrivals join
// at the next round boundary, jobs finish mid-round, and the allocation is
// recomputed once per round in which anything arrived or finished (events in
// the same round coalesce into one solve). Config.GavelCompat switches to
// Gavel's own simulator semantics (gavel-reference §5): per-worker-type queues
// walked in Gavel's order, priorities measured since the last reset with the
// half-round initialization, recomputation only ≥ 1920 s after the last reset,
// integer step counts and rounds that end when their slowest job ends, so
// results compare one to one with Gavel's. Two of Gavel's bugs are fixed even
// there: a multi-GPU job whose last remainder is smaller than its scale factor
// completes (§11.3), and SLO violations compare the completion time with
// arrival + deadline (§11.9).
//
// ParseTrace reads Gavel's tab-separated traces; Generator draws Gavel-like
// synthetic jobs (§1.5) from a seeded Go RNG. Continuous and Hierarchical run
// the paper's two experiments.
package rounds
