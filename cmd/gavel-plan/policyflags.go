package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/rounds"
	"github.com/gavelkit/gavel/table"
)

// policyFlags choose and configure the policy. allocate, rounds and simulate
// share them, so that a policy takes the same flags and runs the same way
// in each.
type policyFlags struct {
	policy, prices, reference string
	seed                      int64
	maxPartners               int
	timeLimit                 time.Duration
}

func (p *policyFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&p.policy, "policy", "", "policy name (required; Gavel's, e.g. max_min_fairness_perf)")
	f.StringVar(&p.prices, "prices", "", "price per GPU-hour per worker type, e.g. v100=2.48,p100=1.46,k80=0.45 (cost policies need it)")
	f.StringVar(&p.reference, "reference", "", "worker type whose rates agnostic FTF/makespan (finish_time_fairness, min_total_duration) use (default: each job's fastest; other policies: a warning)")
	f.Int64Var(&p.seed, "seed", 0, "seed of randomized policies (fifo, gandiva)")
	f.IntVar(&p.maxPartners, "max-partners", 0, "packing policies (*_packed, gandiva): keep each job's top-k partners only (0 = all; use for hundreds of jobs; other policies: a warning)")
	f.DurationVar(&p.timeLimit, "time-limit", 0, "time limit per LP solve (0 = none)")
}

// checkReference rejects a --reference worker type that is not in table
// tbl, whether or not the policy uses it: a misspelled reference would
// otherwise pass silently with the policies that ignore it.
func (p *policyFlags) checkReference(tbl *table.Table, c *clusterFlags) error {
	if p.reference == "" {
		return nil
	}
	return c.checkWorkerType(tbl, "--reference", p.reference)
}

// warnUnused warns on w about option flags that policy pol ignores, so that
// they are not taken to have shaped its allocation. A simulation uses
// --prices whatever the policy (the cost report), and says itself when
// --seed does nothing (it also seeds Gavel's agnostic shuffle).
func (p *policyFlags) warnUnused(w io.Writer, pol policy.Policy, prices policy.Prices, cl policy.Cluster, simulation bool) {
	if !simulation && p.prices != "" && !needsPrices(p.policy) {
		fmt.Fprintf(w, "warning: --prices does nothing with policy %s (only the cost policies, *_normalized_by_cost_*, weigh throughput by price)\n", pol.Name())
	}
	if !simulation && p.seed != 0 && !policy.UsesSeed(pol) {
		fmt.Fprintf(w, "warning: --seed does nothing with policy %s (only fifo and gandiva draw random numbers)\n", pol.Name())
	}
	for _, wt := range slices.Sorted(maps.Keys(prices)) {
		if _, ok := cl[wt]; !ok {
			fmt.Fprintf(w, "warning: --prices: %s is not a worker type of the cluster (%s); its price is not used\n", wt, strings.Join(cl.WorkerTypes(), ", "))
		}
	}
	if p.reference != "" && !policy.UsesReference(pol) {
		fmt.Fprintf(w, "warning: --reference does nothing with policy %s (only finish_time_fairness and min_total_duration, "+
			"the heterogeneity-agnostic ones, plan with a reference worker type)\n", pol.Name())
	}
	if p.maxPartners > 0 && !policy.Packs(pol) {
		fmt.Fprintf(w, "warning: --max-partners does nothing with policy %s (only the packing policies, *_packed and gandiva, pack pairs)\n",
			pol.Name())
	}
}

// needsPrices reports whether the named policy weighs throughput by cost.
func needsPrices(name string) bool { return strings.Contains(name, "normalized_by_cost") }

// load checks the flags against cluster cl and returns the policy and the
// prices (nil without --prices). Every error is a usage error.
func (p *policyFlags) load(cl policy.Cluster, simulation bool) (policy.Policy, policy.Prices, error) {
	if p.policy == "" {
		return nil, nil, cli.UsageError("--policy is required; known policies: %s", strings.Join(policy.Names(), ", "))
	}
	if p.maxPartners < 0 {
		return nil, nil, cli.UsageError("--max-partners %d must be at least 0", p.maxPartners)
	}
	if p.timeLimit < 0 {
		return nil, nil, cli.UsageError("--time-limit %v must be at least 0", p.timeLimit)
	}
	pol, err := policy.New(p.policy, policy.WithSeed(p.seed), policy.WithMaxPartners(p.maxPartners),
		policy.WithReference(p.reference), policy.WithTimeLimit(p.timeLimit))
	if err != nil {
		return nil, nil, cli.UsageError("%v", err)
	}
	prices, err := p.loadPrices(cl, simulation)
	if err != nil {
		return nil, nil, err
	}
	return pol, prices, nil
}

// loadPrices parses --prices; cost policies, and simulations (which report
// cost), need a price for every worker type of the cluster that has GPUs,
// checked here rather than after the jobs are read (or, in simulate, at the
// first allocation): a simulation took time on an unpriced type as free.
func (p *policyFlags) loadPrices(cl policy.Cluster, simulation bool) (policy.Prices, error) {
	if p.prices == "" {
		if needsPrices(p.policy) {
			return nil, cli.UsageError("policy %s needs --prices (price per GPU-hour for each of %s)", p.policy, strings.Join(cl.WorkerTypes(), ", "))
		}
		return nil, nil
	}
	prices, err := policy.ParsePrices(p.prices)
	if err != nil {
		return nil, cli.UsageError("--prices: %v", err)
	}
	for _, w := range cl.WorkerTypes() {
		if _, ok := prices[w]; ok || cl[w] == 0 {
			continue
		}
		switch {
		case needsPrices(p.policy):
			return nil, cli.UsageError("--prices %q: no price for worker type %q (policy %s needs one per worker type)", p.prices, w, p.policy)
		case simulation:
			return nil, cli.UsageError("--prices %q: no price for worker type %q (the cost reported needs one per worker type of the cluster)", p.prices, w)
		}
	}
	return prices, nil
}

// loadProblem builds the policy's problem on tb and cl with prices: the
// jobs of the jobs file at path (read from in when path is "-"), or, when
// path is "", defaultJobs.
func loadProblem(in io.Reader, path string, tb *table.Table, cl policy.Cluster, prices policy.Prices) (*policy.Problem, error) {
	prob := &policy.Problem{Table: tb, Cluster: cl, Prices: prices}
	if path == "" {
		prob.Jobs = defaultJobs()
		return prob, nil
	}
	var jf *policy.JobsFile
	var err error
	if path == "-" {
		jf, err = policy.ReadJobsNamed(in, cli.StdinName)
	} else {
		jf, err = policy.LoadJobs(path)
	}
	if err != nil {
		return nil, cli.UsageError("%v", err)
	}
	prob.Jobs, prob.Entities = jf.Jobs, jf.Entities
	return prob, nil
}

// inputName is how messages name the input file at path: the path, or
// cli.StdinName for "-".
func inputName(path string) string {
	if path == "-" {
		return cli.StdinName
	}
	return path
}

// oneStdin fails, as bad usage, when more than one of the input flags (flag
// name to value) is "-": standard input can be read only once.
func oneStdin(flags ...[2]string) error {
	var dash []string
	for _, f := range flags {
		if f[1] == "-" {
			dash = append(dash, f[0]+" -")
		}
	}
	if len(dash) > 1 {
		return cli.UsageError("%s: both would read standard input; give all but one of them as files", strings.Join(dash, " and "))
	}
	return nil
}

// jobSource says where jobs came from, so that bad input found by a policy
// can name the file and the entry.
type jobSource struct {
	file string
	// entry names job id's entry, "jobs[i] (id "x")" or "line n"; it is
	// searched for only when there is an error to report.
	entry func(id string) (string, bool)
}

// jobsFileSource is the source of jobs read from jobs file file, in order.
func jobsFileSource(file string, jobs []policy.Job) jobSource {
	return jobSource{file: file, entry: func(id string) (string, bool) {
		for i, j := range jobs {
			if j.ID == id {
				return fmt.Sprintf("jobs[%d] (id %q)", i, id), true
			}
		}
		return "", false
	}}
}

// traceSource is the source of jobs read by rounds.LoadTrace from file: a
// Gavel trace (lines) or a jobs file (entries).
func traceSource(file string, jobs []rounds.TraceJob) jobSource {
	return jobSource{file: file, entry: func(id string) (string, bool) {
		for i, j := range jobs {
			switch {
			case j.ID != id:
			case j.Line > 0:
				return fmt.Sprintf("line %d", j.Line), true
			default:
				return fmt.Sprintf("jobs[%d] (id %q)", i, id), true
			}
		}
		return "", false
	}}
}

// check returns err as a usage error (exit 2) when it is bad input found by
// the policy (policy.ErrInput), prefixed with the file and entry of the
// job it is about; other errors come back unchanged.
func (s jobSource) check(err error) error {
	if !errors.Is(err, policy.ErrInput) {
		return err
	}
	var ie *policy.InputError
	if s.file != "" && errors.As(err, &ie) && ie.Job != "" {
		if e, ok := s.entry(ie.Job); ok {
			return cli.UsageError("%s: %s: %v", s.file, e, err)
		}
		return cli.UsageError("%s: %v", s.file, err)
	}
	return cli.UsageError("%v", err)
}

// checkFinite rejects a float flag's value that is NaN or infinite, or not
// positive when positive is set.
func checkFinite(flag string, v float64, positive bool) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return cli.UsageError("--%s %v: want a finite number", flag, v)
	case positive && !(v > 0):
		return cli.UsageError("--%s %v: want a positive number", flag, v)
	}
	return nil
}
