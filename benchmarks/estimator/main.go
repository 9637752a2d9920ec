// Command estimator benchmarks the throughput estimators: MAPE and packing agreement against the
// fraction of pairs revealed, with random and active measurement choice (suggest's balanced aim,
// "active", and its decisions aim, "decisions"), for every method, as
// mean ± standard deviation over seeds; then the time to estimate a large synthetic table and to
// suggest measurements for it. With -uncertainty, instead of the curves: how often the
// estimate's 80% intervals hold the truth, and how often packing decisions given each
// probability of being wrong were wrong (estimate.Uncertainty).
//
//	go run ./benchmarks/estimator
//	go run ./benchmarks/estimator -fractions 0.2 -seeds 0,1,2 -large 0
//	go run ./benchmarks/estimator -choices decisions -large 0
//	go run ./benchmarks/estimator -uncertainty -fractions 0.1,0.2,0.4 -large 0   # intervals' coverage
//	go run ./benchmarks/estimator -fractions "" -suggest=false   # estimate timing only
//	go run ./benchmarks/estimator -fractions "" -suggest=false -partial /tmp/partial.json
//	time bin/gavel-profile estimate --table /tmp/partial.json --out /tmp/full.json   # as a user runs it
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gavelkit/gavel/estimate"
	"github.com/gavelkit/gavel/table"
)

func main() {
	fractions := flag.String("fractions", "0.05,0.1,0.2,0.4", "fractions of reference pairs revealed")
	seeds := flag.String("seeds", "0,1,2", "seeds")
	refs := flag.Int("references", 16, "reference job types")
	large := flag.Int("large", 1000, "job types of the synthetic timing table (0 skips it)")
	workers := flag.Int("large-workers", 4, "worker types of the synthetic timing table")
	suggest := flag.Bool("suggest", true, "time suggest on the synthetic table too")
	partial := flag.String("partial", "", "also write the synthetic partial table to this file, to time gavel-profile estimate on it")
	choices := flag.String("choices", "random,active,decisions", "measurement choices: random, active (suggest's balanced aim), decisions (its decisions aim)")
	unc := flag.Bool("uncertainty", false, "print the coverage of the estimate's intervals and the calibration of its packing probabilities instead of the curves (random reveals)")
	flag.Parse()
	cs, err := parseChoices(*choices)
	if err != nil {
		fmt.Fprintln(os.Stderr, "estimator: -choices:", err)
		os.Exit(2)
	}
	// Checked before any curve runs (minutes each): -large-workers -1 panicked, 0 timed nothing,
	// and -large below 20 failed on the references it draws (large/20).
	switch {
	case *large != 0 && *large < 20:
		fmt.Fprintf(os.Stderr, "estimator: -large %d: want 20 job types or more (it draws one reference in 20), or 0 to skip the timing\n", *large)
		os.Exit(2)
	case *large > 0 && *workers < 1:
		fmt.Fprintf(os.Stderr, "estimator: -large-workers %d: want 1 or more\n", *workers)
		os.Exit(2)
	}
	if *unc {
		err = uncertaintyTable(*fractions, *seeds, *refs)
	} else {
		err = run(*fractions, *seeds, cs, *refs, *large, *workers, *suggest, *partial)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "estimator:", err)
		os.Exit(1)
	}
}

// choice is how the evaluation picks its measurements.
type choice struct {
	name   string
	active bool
	aim    estimate.Aim
}

func parseChoices(s string) ([]choice, error) {
	all := []choice{{"random", false, estimate.AimBalanced}, {"active", true, estimate.AimBalanced}, {"decisions", true, estimate.AimDecisions}}
	var out []choice
	for _, name := range strings.Split(s, ",") {
		x := slices.IndexFunc(all, func(c choice) bool { return c.name == strings.TrimSpace(name) })
		if x < 0 {
			return nil, fmt.Errorf("%q: want random, active or decisions", name)
		}
		out = append(out, all[x])
	}
	return out, nil
}

func run(fracs, seedList string, choices []choice, refs, large, workers int, suggest bool, partial string) error {
	ps, seeds, truth, err := setUp(fracs, seedList, refs, "")
	if err != nil {
		return err
	}
	fmt.Println("MAPE and packing agreement: mean ± std over seeds (measured entries count, exact)")
	fmt.Printf("%-7s %-9s %-13s %-17s %-17s %s\n", "P", "choice", "method", "MAPE %", "agreement %", "measurements")
	for _, p := range ps {
		for _, c := range choices {
			t0 := time.Now()
			ev, err := estimate.Evaluate(context.Background(), truth, estimate.EvalOptions{References: refs, Fraction: p, Seeds: seeds, Active: c.active, Aim: c.aim})
			if err != nil {
				return err
			}
			for _, name := range ev.Order {
				m := ev.Methods[name]
				fmt.Printf("%-7.2f %-9s %-13s %6.2f ± %-7.2f %6.2f ± %-7.2f %v\n", p, c.name, name,
					100*m.MAPE, 100*m.Std.MAPE, 100*m.PackingAgreement, 100*m.Std.PackingAgreement, ev.Measurements)
			}
			fmt.Fprintf(os.Stderr, "  (P=%.2f %s: %.1fs)\n", p, c.name, time.Since(t0).Seconds())
		}
	}
	if large > 0 {
		return timeLarge(large, workers, suggest, partial)
	}
	return nil
}

// timeLarge estimates a synthetic table of n job types on w worker types: 5% references, every
// other job measured against 10% of its reference pairs, rates drawn from a planted pairwise model,
// and pairs whose planted memory footprints exceed the worker type's capacity infeasible (a few
// percent), so the infeasibility model is timed too. A non-empty partialPath gets the partial
// table.
func timeLarge(n, W int, suggest bool, partialPath string) error {
	rng := rand.New(rand.NewPCG(1, 2))
	ws := make([]string, W)
	for w := range ws {
		ws[w] = fmt.Sprintf("gpu%d", w)
	}
	jobs := make([]table.JobType, n)
	for i := range jobs {
		jobs[i] = table.JobType{Model: fmt.Sprintf("job-%04d", i), ScaleFactor: 1}
	}
	truth := estimate.NewData(ws, jobs)
	a, c, z, mem := make([]float64, n), make([]float64, n), make([][2]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		a[i], c[i] = 0.2*rng.NormFloat64(), 0.2*rng.NormFloat64()
		z[i] = [2]float64{rng.NormFloat64(), rng.NormFloat64()}
		mem[i] = rng.Float64()
	}
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			truth.Iso[w][i] = 1 + 50*rng.Float64()
			for k := 0; k < n; k++ {
				y := -0.5 + a[i] + c[k] + 0.1*(z[i][0]*z[k][0]+z[i][1]*z[k][1])
				truth.Norm[w][i][k] = math.Min(1, math.Exp(y))
				truth.State[w][i][k] = table.Measured
				if mem[i]+mem[k] > 1.6+0.1*float64(w) {
					truth.Norm[w][i][k], truth.State[w][i][k] = 0, table.Infeasible
				}
			}
		}
	}
	h, err := estimate.Protocol(truth, n/20, 0.1, 1)
	if err != nil {
		return err
	}
	if partialPath != "" {
		if err := estimate.ToTable(h.Partial, nil).Save(partialPath); err != nil {
			return err
		}
	}
	cpu0 := cpuSeconds()
	t0 := time.Now()
	r, err := estimate.Pairwise{Seed: 1}.Estimate(context.Background(), h.Partial)
	if err != nil {
		return err
	}
	el := time.Since(t0)
	cpu := cpuSeconds() - cpu0
	m := estimate.Score(truth, r, h.References)
	fmt.Printf("\nlarge synthetic table: %d job types × %d worker types, %d references, %d pair measurements\n",
		n, W, len(h.References), h.Revealed)
	fmt.Printf("Pairwise.Estimate (the model alone) took %.2fs wall, %.2fs CPU, on %d cores, for %d missing entries; MAPE %.2f%%, infeasible precision %.3f recall %.3f\n",
		el.Seconds(), cpu, runtime.NumCPU(), h.Partial.Missing(), 100*m.MAPE, m.InfeasiblePrecision, m.InfeasibleRecall)
	if err := timeTable(h.Partial); err != nil {
		return err
	}
	if suggest {
		if err := timeSuggest(h.Partial, 100); err != nil {
			return err
		}
	}
	if l, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("load average while measuring: %s", l)
	}
	return nil
}

// timeTable times what `gavel-profile estimate` does with partial: estimate.Table (laying the
// table out, the estimate, and writing every estimated entry into the completed table and the
// report), the public entry point the target (≤ 10 s for 1,000 × 4) is about; then
// saving the completed table, which the command does next.
func timeTable(partial *estimate.Data) error {
	t := estimate.ToTable(partial, nil)
	cpu0 := cpuSeconds()
	t0 := time.Now()
	full, rep, err := estimate.Table(context.Background(), t, estimate.Options{Seed: 1})
	if err != nil {
		return err
	}
	fmt.Printf("estimate.Table (what gavel-profile estimate runs) took %.2fs wall, %.2fs CPU, for %d estimated entries (target ≤ 10 s)\n",
		time.Since(t0).Seconds(), cpuSeconds()-cpu0, rep.Estimated)
	dir, err := os.MkdirTemp("", "estimator")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cpu0 = cpuSeconds()
	t0 = time.Now()
	if err := full.Save(filepath.Join(dir, "full.json")); err != nil {
		return err
	}
	fmt.Printf("saving the completed table (table.Save) took %.2fs wall, %.2fs CPU\n", time.Since(t0).Seconds(), cpuSeconds()-cpu0)
	return nil
}

// timeSuggest times what `gavel-profile suggest --budget budget` does with partial: the
// calibrated estimate (ensemble, bootstrap fits and cross-validation folds) and the picks.
func timeSuggest(partial *estimate.Data, budget int) error {
	t := estimate.ToTable(partial, nil)
	cpu0 := cpuSeconds()
	t0 := time.Now()
	ms, _, err := estimate.SuggestTable(context.Background(), t, budget, estimate.Options{Seed: 1})
	if err != nil {
		return err
	}
	fmt.Printf("suggest --budget %d took %.2fs wall, %.2fs CPU (%d picks; no target)\n",
		budget, time.Since(t0).Seconds(), cpuSeconds()-cpu0, len(ms))
	return nil
}

// cpuSeconds is the CPU time this process has used (user + system), so a timing can be read
// apart from other load on a shared machine.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// parseLists parses -fractions (empty: none, timing only) and -seeds.
func parseLists(fracs, seedList string) ([]float64, []uint64, error) {
	var ps []float64
	for _, f := range strings.Split(fracs, ",") {
		if strings.TrimSpace(fracs) == "" {
			break // -fractions "": timing only
		}
		p, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(p > 0 && p <= 1) {
			return nil, nil, fmt.Errorf("-fractions %q: want probabilities in (0, 1]", f)
		}
		ps = append(ps, p)
	}
	var seeds []uint64
	for _, s := range strings.Split(seedList, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("-seeds: %v", err)
		}
		seeds = append(seeds, v)
	}
	return ps, seeds, nil
}

// gavelTruth is the scale-factor-1 block of Gavel's published table.
func gavelTruth() (*estimate.Data, error) {
	blocks, _, err := estimate.Blocks(table.Default(), nil, true)
	if err != nil {
		return nil, err
	}
	return blocks[0], nil
}

// setUp parses -fractions and -seeds, loads the truth and prints what a table below is about
// (with more, when not empty, at the end of the line).
func setUp(fracs, seedList string, refs int, more string) ([]float64, []uint64, *estimate.Data, error) {
	ps, seeds, err := parseLists(fracs, seedList)
	if err != nil {
		return nil, nil, nil, err
	}
	truth, err := gavelTruth()
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Printf("Gavel simulation table, scale factor 1: %d job types on %s; %d references; seeds %s%s\n",
		len(truth.Jobs), strings.Join(truth.Workers, ","), refs, seedList, more)
	return ps, seeds, truth, nil
}
