// Command rounds benchmarks the round mechanism and the simulator and prints
// a table: one round decision at scale (target ≤ 100 ms), and a continuous
// trace simulated end to end (target: 1,000 jobs on 108 GPUs with max-min
// fairness in ≤ 60 s).
//
//	go run ./benchmarks/rounds
//	go run ./benchmarks/rounds -jobs 1000 -cluster v100=36,p100=36,k80=36 -rate 4 -policies max_min_fairness,max_min_fairness_perf
//	go run ./benchmarks/rounds -jobs 200 -cluster v100=8,p100=8,k80=8 -rate 12 -policies max_min_fairness_packed -max-partners 8
//
// "solve (s)" is the time in the policy's allocations (their LPs), the rest
// of "total (s)" the simulator and the round mechanism.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/rounds"
	"github.com/gavelkit/gavel/table"
)

func main() {
	jobs := flag.Int("jobs", 1000, "jobs in the continuous trace")
	clusterFlag := flag.String("cluster", "v100=36,p100=36,k80=36", "cluster of the trace simulation")
	rate := flag.Float64("rate", 4, "arrival rate, jobs per hour")
	policies := flag.String("policies", "max_min_fairness,max_min_fairness_perf", "policies to simulate")
	seed := flag.Uint64("seed", 0, "generator seed")
	planJobs := flag.Int("plan-jobs", 10000, "jobs in the round-decision benchmark")
	planGPUs := flag.Int("plan-gpus", 8000, "GPUs in the round-decision benchmark")
	maxPartners := flag.Int("max-partners", 0, "packing policies: keep each job's top-k partners only (0 = all)")
	flag.Parse()
	// The generator reads a limit of 0 as none: -jobs 0 simulated forever.
	if *jobs < 1 {
		fmt.Fprintf(os.Stderr, "Error: -jobs %d: want at least 1\n", *jobs)
		os.Exit(2)
	}
	if *maxPartners < 0 {
		fmt.Fprintf(os.Stderr, "Error: -max-partners %d: want at least 0\n", *maxPartners)
		os.Exit(2)
	}
	if !(*rate > 0) || math.IsInf(*rate, 0) {
		fmt.Fprintf(os.Stderr, "Error: -rate %v: want a positive, finite number of jobs per hour\n", *rate)
		os.Exit(2)
	}
	if err := run(*jobs, *clusterFlag, *rate, strings.Split(*policies, ","), *seed, *planJobs, *planGPUs, *maxPartners); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func run(jobs int, clusterFlag string, rate float64, policies []string, seed uint64, planJobs, planGPUs, maxPartners int) error {
	tw := cli.NewTableWriter(os.Stdout, "benchmark", "size", "rounds", "solves", "solve (s)", "total (s)", "per round (ms)", "target", "ok")
	d, err := planBench(planJobs, planGPUs)
	if err != nil {
		return err
	}
	tgt, ok := target(planJobs == 10000 && planGPUs == 8000, "≤ 100 ms", d <= 100*time.Millisecond)
	tw.Append([]string{"one round decision (Plan)", fmt.Sprintf("%d jobs, %d GPUs", planJobs, planGPUs), "1", "-", "-",
		fmt.Sprintf("%.3f", d.Seconds()), fmt.Sprintf("%.1f", float64(d.Microseconds())/1000), tgt, ok})
	cluster, err := policy.ParseCluster(clusterFlag)
	if err != nil {
		return err
	}
	tbl := table.Default()
	for _, name := range policies {
		var opts []policy.Option
		if maxPartners > 0 {
			opts = append(opts, policy.WithMaxPartners(maxPartners))
		}
		p, err := policy.New(strings.TrimSpace(name), opts...)
		if err != nil {
			return err
		}
		gen, err := rounds.NewGenerator(rounds.GeneratorConfig{Table: tbl, Cluster: cluster, RatePerHour: rate, Seed: seed, Limit: jobs})
		if err != nil {
			return err
		}
		start := time.Now()
		res, err := rounds.SimulateSource(context.Background(), rounds.Config{Table: tbl, Cluster: cluster, Policy: p}, gen)
		if err != nil {
			return err
		}
		total := time.Since(start)
		if len(res.Jobs) != jobs {
			return fmt.Errorf("%s: %d of %d jobs finished", name, len(res.Jobs), jobs)
		}
		tgt, ok := target(jobs == 1000 && cluster.Total() == 108, "≤ 60 s", total <= 60*time.Second)
		label := "simulate " + name
		if maxPartners > 0 && strings.Contains(rounds.RuntimeName(p), "Packing") {
			label += fmt.Sprintf(" (%d partners)", maxPartners)
		}
		tw.Append([]string{label, fmt.Sprintf("%d jobs at %g/h, %d GPUs", jobs, rate, cluster.Total()),
			strconv.Itoa(res.Rounds), strconv.Itoa(res.Allocations), fmt.Sprintf("%.2f", res.SolveSeconds),
			fmt.Sprintf("%.2f", total.Seconds()), fmt.Sprintf("%.2f", 1000*total.Seconds()/float64(max(1, res.Rounds))), tgt, ok})
	}
	return tw.Render()
}

// target returns the target and ok cells: the target holds only at the size it was set for
// (10,000 jobs on 8,000 GPUs; 1,000 jobs on 108 GPUs), so at another size both are "-".
func target(atSize bool, text string, ok bool) (string, string) {
	if !atSize {
		return "-", "-"
	}
	return text, okStr(ok)
}

func okStr(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// planBench times one Plan for nJobs jobs on nGPUs GPUs (rounds.SteadyWorld)
// after three warm-up rounds; it reports the fastest of five decisions.
func planBench(nJobs, nGPUs int) (time.Duration, error) {
	w, err := rounds.NewSteadyWorld(nJobs, nGPUs, 1)
	if err != nil {
		return 0, err
	}
	best := time.Duration(1 << 62)
	for r := 0; r < 8; r++ {
		start := time.Now()
		p := w.Plan()
		if d := time.Since(start); r >= 3 && d < best {
			best = d
		}
		w.Commit(p)
	}
	return best, nil
}
