// Command policy measures the policy LPs on the embedded Gavel table: LP
// size, solve time and objective of max-min fairness with and without space
// sharing, for growing numbers of jobs, and the effect of capping partners.
//
//	go run ./benchmarks/policy [-n 32,64,128,256] [-k 0,8] [-policies max_min_fairness_perf,max_min_fairness_packed]
//
// Jobs are drawn deterministically (job type i·7 mod #types, scale factor 1)
// and the cluster has 0.28·n GPUs of each of k80, p100, v100, as in
// solver-and-library-notes.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

func main() {
	ns := flag.String("n", "32,64,128", "job counts")
	ks := flag.String("k", "0,8", "partner caps for packed policies (0 = all pairs)")
	methods := flag.String("methods", "auto", "LP methods to compare: auto, dual, barrier, sprint")
	pols := flag.String("policies", "max_min_fairness_perf,max_min_fairness_packed,max_min_fairness_water_filling_perf,min_total_duration_packed", "policies")
	flag.Parse()
	tb := table.Default()
	types := tb.JobTypesWithScaleFactor(1)
	out := tablewriter.NewTable(os.Stdout, tablewriter.WithHeaderAutoFormat(tw.Off))
	out.Header("policy", "method", "jobs", "max partners", "LPs", "rows", "columns", "seconds", "objective", "heap MiB")
	for _, nStr := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(nStr)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bad -n %q: want job counts of 1 or more\n", nStr)
			os.Exit(2)
		}
		per := max(4, (36*n+64)/128)
		p := &policy.Problem{Table: tb, Cluster: policy.Cluster{"k80": per, "p100": per, "v100": per},
			Prices: policy.Prices{"k80": 0.45, "p100": 1.46, "v100": 2.48}} // AWS on-demand prices, for the cost policies
		for i := 0; i < n; i++ {
			p.Jobs = append(p.Jobs, policy.Job{ID: fmt.Sprintf("j%04d", i), Type: types[(i*7)%len(types)], TotalSteps: float64(1000 * (1 + i%5))})
		}
		for _, name := range strings.Split(*pols, ",") {
			caps := []string{"0"}
			if strings.Contains(name, "packed") {
				caps = strings.Split(*ks, ",")
			}
			for _, kStr := range caps {
				for _, mStr := range strings.Split(*methods, ",") {
					k, err := strconv.Atoi(kStr)
					if err != nil {
						fmt.Fprintf(os.Stderr, "bad -k %q: want whole numbers of partners (0 = all)\n", kStr)
						os.Exit(2)
					}
					method, err := policy.ParseMethod(mStr)
					if err != nil {
						fmt.Fprintln(os.Stderr, "bad -methods:", mStr)
						os.Exit(2)
					}
					row, err := measure(p, name, k, method)
					if err != nil {
						fmt.Fprintln(os.Stderr, name, n, err)
						os.Exit(1)
					}
					_ = out.Append(append([]string{name, mStr, strconv.Itoa(n), kStr}, row...))
				}
			}
		}
	}
	_ = out.Render()
}

// measure allocates p once and returns the LP count, size, wall time,
// objective and heap in use.
func measure(p *policy.Problem, name string, k int, method policy.Method) ([]string, error) {
	pol, err := policy.New(name, policy.WithMaxPartners(k), policy.WithMethod(method))
	if err != nil {
		return nil, err
	}
	runtime.GC()
	t0 := time.Now()
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		return nil, err
	}
	sec := time.Since(t0).Seconds()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return []string{strconv.Itoa(a.Stats.LPs), strconv.Itoa(a.Stats.Rows), strconv.Itoa(a.Stats.Cols),
		fmt.Sprintf("%.3f", sec), fmt.Sprintf("%.6f", a.Objective), fmt.Sprintf("%.1f", float64(ms.HeapAlloc)/(1<<20))}, nil
}
