package rounds

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/gavelkit/gavel/policy"
)

// SteadyWorld is a random steady job set for benchmarking Plan at scale:
// single jobs (scale factors 1, 2, 4, 8 drawn 7:1:1:1) on three worker types
// "a", "b", "c" in 4-GPU servers, each job with random rates and a random
// target on every type (at most 0.8 in all), and rounds that run whole.
type SteadyWorld struct {
	State        *State
	Allocation   *policy.Allocation
	RoundSeconds float64
	ledger       *Ledger
	rounds       int
}

// NewSteadyWorld draws nJobs jobs on nGPUs GPUs (split evenly over the three
// types) from seed.
func NewSteadyWorld(nJobs, nGPUs int, seed uint64) (*SteadyWorld, error) {
	if nJobs < 1 || nGPUs < 3 {
		return nil, fmt.Errorf("steady world: %d jobs on %d GPUs, want at least 1 job and 3 GPUs", nJobs, nGPUs)
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	per := nGPUs / 3
	cluster := policy.Cluster{"a": nGPUs - 2*per, "b": per, "c": per}
	topo, err := NewTopology(cluster, map[string]int{"a": 4, "b": 4, "c": 4})
	if err != nil {
		return nil, err
	}
	jobs := make(map[string]*Job, nJobs)
	alloc := &policy.Allocation{Fractions: make(map[policy.Combination]map[string]float64, nJobs)}
	sfs := []int{1, 1, 1, 1, 1, 1, 1, 2, 4, 8}
	for i := 0; i < nJobs; i++ {
		id := strconv.Itoa(i)
		j := &Job{ID: id, ScaleFactor: sfs[rng.IntN(len(sfs))], Order: i, Rates: map[string]float64{}}
		x := map[string]float64{}
		for _, w := range cluster.WorkerTypes() {
			j.Rates[w] = 1 + 10*rng.Float64()
			x[w] = 0.8 * rng.Float64() / 3
		}
		jobs[id] = j
		alloc.Fractions[policy.Single(id)] = x
	}
	ledger := NewLedger(DefaultRoundSeconds)
	return &SteadyWorld{State: &State{Topology: topo, Jobs: jobs, History: ledger}, Allocation: alloc,
		RoundSeconds: DefaultRoundSeconds, ledger: ledger}, nil
}

// Plan plans the next round.
func (w *SteadyWorld) Plan() *RoundPlan {
	return Plan(w.State, w.Allocation, float64(w.rounds)*w.RoundSeconds)
}

// Commit runs p for a whole round: its time goes into the history and its
// placement becomes the previous one.
func (w *SteadyWorld) Commit(p *RoundPlan) {
	commitRound(w.State, w.ledger, w.Allocation, p, w.RoundSeconds)
	w.rounds++
}

// commitRound records a round in which every assignment of p ran for the
// whole round and makes p's placement the previous one.
func commitRound(s *State, l *Ledger, alloc *policy.Allocation, p *RoundPlan, seconds float64) {
	busy := make([]Busy, len(p.Assignments))
	for k, a := range p.Assignments {
		busy[k] = Busy{a.Combination, a.WorkerType, seconds}
	}
	l.Record(alloc, func(string) bool { return true }, seconds, busy)
	s.Previous = p.Placement()
}
