package rounds_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/rounds"
	"github.com/gavelkit/gavel/table"
)

// Three jobs share two GPUs equally: each runs in two of every three rounds,
// keeping its GPU when it runs again.
func ExamplePlan() {
	topo, _ := rounds.NewTopology(policy.Cluster{"gpu": 2}, nil)
	jobs := map[string]*rounds.Job{}
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
	for i, id := range []string{"a", "b", "c"} {
		jobs[id] = &rounds.Job{ID: id, ScaleFactor: 1, Order: i, Rates: map[string]float64{"gpu": 1}}
		alloc.Fractions[policy.Single(id)] = map[string]float64{"gpu": 2.0 / 3}
	}
	ledger := rounds.NewLedger(360)
	state := &rounds.State{Topology: topo, Jobs: jobs, History: ledger}
	for r := 0; r < 3; r++ {
		plan := rounds.Plan(state, alloc, float64(r)*360)
		var busy []rounds.Busy
		var ran []string
		for _, a := range plan.Assignments {
			busy = append(busy, rounds.Busy{Combination: a.Combination, WorkerType: a.WorkerType, Seconds: 360})
			ran = append(ran, fmt.Sprintf("%s@%v", a.Combination, a.GPUs))
		}
		ledger.Record(alloc, func(string) bool { return true }, 360, busy)
		state.Previous = plan.Placement()
		fmt.Println("round", r, strings.Join(ran, " "))
	}
	// Output:
	// round 0 a@[0] b@[1]
	// round 1 a@[0] c@[1]
	// round 2 b@[0] c@[1]
}

// Gavel's worked example (gavel-reference §5.12) in compat mode.
func ExampleSimulate() {
	f, _ := os.Open("testdata/worked_example.trace")
	defer f.Close()
	trace, _ := rounds.ParseTrace(f, "worked_example.trace")
	tbl := table.Default()
	cluster := policy.Cluster{"v100": 2, "p100": 2, "k80": 2}
	jobs, _ := rounds.Prepare(tbl, cluster, trace)
	p, _ := policy.New("fifo_perf")
	res, err := rounds.Simulate(context.Background(), rounds.Config{Table: tbl, Cluster: cluster, Policy: p, GavelCompat: true}, jobs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("average JCT %.3f s, end %.3f s, utilization %.4f\n", res.AvgJCT, res.End, res.Utilization)
	// Output:
	// average JCT 3344.721 s, end 8164.014 s, utilization 0.3795
}

// One job allocated a quarter of a GPU that nothing else wants: it runs in
// round 0 towards its target and in rounds 1-3 only because the GPU would
// idle, so the fidelity report counts those three rounds as back-fill.
func ExampleRunRounds() {
	tbl := table.New()
	jt := table.JobType{Model: "m", ScaleFactor: 1}
	tbl.SetIsolated("gpu", jt, 1)
	topo, _ := rounds.NewTopology(policy.Cluster{"gpu": 1}, nil)
	alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{
		policy.Single("a"): {"gpu": 0.25}}}
	res, err := rounds.RunRounds(context.Background(), rounds.RoundsConfig{Topology: topo, Table: tbl,
		Jobs: []policy.Job{{ID: "a", Type: jt}}, Allocation: alloc, Rounds: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	f := res.Fidelity["a"]["gpu"]
	fmt.Printf("target %.2f received %.2f backfill %.2f\n", f.Target, f.Received, f.BackFill)
	fmt.Printf("max deviation %.2f, allocated %.2f\n", res.MaxDeviation, res.MaxDeviationAllocated)
	// Output:
	// target 0.25 received 1.00 backfill 0.75
	// max deviation 0.75, allocated 0.00
}

// A live scheduler's round: an a100 server of 4 GPUs and one with a GPU out of service (3),
// a 4-GPU job and three single-GPU jobs. The policy allocates on the cluster the topology
// gives, State.Check vets the state built from live input, and Plan puts the gang on the
// server that has room.
func ExampleNewTopologyOfServers() {
	topo, err := rounds.NewTopologyOfServers(map[string][]int{"a100": {4, 3}})
	if err != nil {
		fmt.Println(err)
		return
	}
	tbl := table.New()
	big, small := table.JobType{Model: "llm", ScaleFactor: 4}, table.JobType{Model: "resnet", ScaleFactor: 1}
	tbl.SetIsolated("a100", big, 8)
	tbl.SetIsolated("a100", small, 2)
	jobs := []policy.Job{{ID: "llm", Type: big, TotalSteps: 1e5}}
	for _, id := range []string{"r1", "r2", "r3"} {
		jobs = append(jobs, policy.Job{ID: id, Type: small, TotalSteps: 1e4})
	}
	pol, _ := policy.New("max_min_fairness_perf")
	alloc, err := pol.Allocate(context.Background(), &policy.Problem{Table: tbl, Cluster: topo.Cluster(), Jobs: jobs})
	if err != nil {
		fmt.Println(err)
		return
	}
	state := &rounds.State{Topology: topo, Jobs: rounds.JobsFromTable(tbl, topo.WorkerTypes(), jobs), History: rounds.NewLedger(360)}
	if err := state.Check(alloc); err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range rounds.Plan(state, alloc, 0).Assignments {
		fmt.Printf("%s on GPUs %v (server %d)\n", a.Combination, a.GPUs, topo.Server(a.GPUs[0]))
	}
	// Output:
	// llm on GPUs [0 1 2 3] (server 0)
	// r1 on GPUs [4] (server 1)
	// r2 on GPUs [5] (server 1)
	// r3 on GPUs [6] (server 1)
}
