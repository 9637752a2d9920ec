package policy

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// allocator is the function behind a registered policy.
type allocator func(ctx context.Context, p *Problem, opt *options) (*Allocation, error)

type entry struct {
	name string // Gavel's runtime name (policy.name), e.g. MaxMinFairness_Perf
	fn   allocator
}

// registry maps Gavel's CLI names (gavel-reference §2.1) to implementations.
// It is built per call so that there is no package-level mutable state.
func registry() map[string]entry {
	return map[string]entry{
		"max_min_fairness":        {"MaxMinFairness", maxMinFairness(agnostic)},
		"max_min_fairness_perf":   {"MaxMinFairness_Perf", maxMinFairness(perf)},
		"max_min_fairness_packed": {"MaxMinFairness_Packing", maxMinFairness(packed)},

		"max_min_fairness_water_filling":        {"MaxMinFairnessWaterFilling", waterFilling(agnostic)},
		"max_min_fairness_water_filling_perf":   {"MaxMinFairnessWaterFilling_Perf", waterFilling(perf)},
		"max_min_fairness_water_filling_packed": {"MaxMinFairnessWaterFilling_Packing", waterFilling(packed)},

		"finish_time_fairness":        {"FinishTimeFairness", finishTimeFairness(agnostic, &ftfState{})},
		"finish_time_fairness_perf":   {"FinishTimeFairness_Perf", finishTimeFairness(perf, &ftfState{})},
		"finish_time_fairness_packed": {"FinishTimeFairness_Packing", finishTimeFairness(packed, &ftfState{})},

		"min_total_duration":        {"MinTotalDuration", makespan(agnostic)},
		"min_total_duration_perf":   {"MinTotalDuration_Perf", makespan(perf)},
		"min_total_duration_packed": {"MinTotalDuration_Packing", makespan(packed)},

		"max_sum_throughput_perf":                           {"ThroughputSumWithPerf", throughputSum(perf, false, false)},
		"max_sum_throughput_normalized_by_cost_perf":        {"ThroughputNormalizedByCostSum_Perf", throughputSum(perf, true, false)},
		"max_sum_throughput_normalized_by_cost_perf_SLOs":   {"ThroughputNormalizedByCostSum_PerfSLOs", throughputSum(perf, true, true)},
		"max_sum_throughput_normalized_by_cost_packed_SLOs": {"ThroughputNormalizedByCostSum_PackingSLOs", throughputSum(packed, true, true)},

		"fifo":        {"FIFO", fifo(agnostic, &fifoState{})},
		"fifo_perf":   {"FIFO_Perf", fifo(perf, &fifoState{})},
		"fifo_packed": {"FIFO_Packing", fifo(packed, &fifoState{})},

		"gandiva": {"Gandiva_Packing", func() allocator {
			st := &gandivaState{}
			return func(ctx context.Context, p *Problem, o *options) (*Allocation, error) { return gandiva(ctx, p, o, st) }
		}()},
		"allox": {"AlloX_Perf", func() allocator {
			st := &alloxState{}
			return func(ctx context.Context, p *Problem, o *options) (*Allocation, error) { return allox(ctx, p, o, st) }
		}()},

		"isolated":     {"Isolated", isolated},
		"proportional": {"Proportional", proportional},
	}
}

// Names returns the registered policy names, sorted. allox_alpha=<a> is also
// accepted by New.
func Names() []string {
	r := registry()
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// named is a registered policy.
type named struct {
	cli, runtime string
	fn           allocator
	check        func(Job) error
	opt          options
}

// jobCheck returns what the registered policy name can never take, whatever else runs (nil:
// nothing); the allocator checks the same.
func jobCheck(name string) func(Job) error {
	if name == "allox" {
		return alloxJob
	}
	return nil
}

// CheckJob reports, for callers that know their jobs ahead of time (a simulator holding a whole
// trace), whether p can ever allocate to j: an error (ErrInput) when the policy cannot take such
// a job at all, as AlloX cannot take jobs of more than one GPU; nil otherwise, and for policies
// not made by New.
func CheckJob(p Policy, j Job) error {
	if n, ok := p.(*named); ok && n.check != nil {
		if err := n.check(j); err != nil {
			return fmt.Errorf("policy %s: %w", n.cli, err)
		}
	}
	return nil
}

// Name returns the name the policy was made with (Gavel's CLI name).
func (n *named) Name() string { return n.cli }

// RuntimeName returns Gavel's policy.name for the policy (e.g. MaxMinFairness_Perf).
func (n *named) RuntimeName() string { return n.runtime }

// Allocate runs the policy; errors name it, and the allocation carries its name.
func (n *named) Allocate(ctx context.Context, p *Problem) (*Allocation, error) {
	a, err := n.fn(ctx, p, &n.opt)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", n.cli, err)
	}
	a.Policy = n.cli
	if k := a.Stats.Unsettled; k > 0 {
		a.Warnings = append(a.Warnings, fmt.Sprintf("%d LP(s) stopped unsettled (re-solves or the search capped): an odd set of 3 or 5 jobs "+
			"or a gang cover was still broken, or, on a small instance, the solution was still beyond what rounds give; "+
			"some jobs may get more time together than rounds can give them; gavel-plan rounds reports any shortfall", k))
	}
	return a, nil
}

// New returns a fresh policy by Gavel's CLI name.
func New(name string, opts ...Option) (Policy, error) {
	cli := name
	var o options
	o.defaults()
	if a, ok := strings.CutPrefix(name, "allox_alpha="); ok {
		v, err := strconv.ParseFloat(a, 64)
		if err != nil || !validAlpha(v) {
			return nil, fmt.Errorf("policy %q: alpha %q is not a finite non-negative number", name, a)
		}
		o.alloxAlpha = v
		name = "allox"
	}
	e, ok := registry()[name]
	if !ok {
		return nil, &UnknownPolicyError{Name: cli}
	}
	for _, f := range opts {
		f(&o)
	}
	switch {
	case !validAlpha(o.alloxAlpha):
		return nil, fmt.Errorf("policy %q: AlloX alpha %v is not a finite non-negative number", cli, o.alloxAlpha)
	case o.timeLimit < 0:
		return nil, fmt.Errorf("policy %q: time limit %v is negative (0 means none)", cli, o.timeLimit)
	case o.maxPartners < 0:
		return nil, fmt.Errorf("policy %q: max partners %d is negative (0 means all)", cli, o.maxPartners)
	case o.method < MethodAuto || o.method > MethodSprint:
		return nil, fmt.Errorf("policy %q: unknown LP method %v", cli, o.method)
	}
	return &named{cli: cli, runtime: e.name, fn: e.fn, check: jobCheck(name), opt: o}, nil
}

// validAlpha reports whether a is a usable AlloX alpha: the fraction of
// waiting jobs AlloX considers, which must be a finite number ≥ 0.
func validAlpha(a float64) bool { return a >= 0 && !math.IsInf(a, 0) }

// UnknownPolicyError is returned by New for a name that is not registered.
type UnknownPolicyError struct{ Name string }

// Error lists the known policies, so that a user can correct the name.
func (e *UnknownPolicyError) Error() string {
	return fmt.Sprintf("unknown policy %q; known policies: %s", e.Name, strings.Join(Names(), ", "))
}

// GavelName returns Gavel's runtime policy.name for a policy made by New
// (e.g. "MaxMinFairness_Perf", "FIFO_Packing"), from which Gavel's mechanism
// derives its behaviour: "Packing" turns on pairs, FIFO names stop jobs with
// zero priority, names with neither "Perf" nor "Packing" shuffle worker
// types (gavel-reference §2.1). It returns "" for other policies.
func GavelName(p Policy) string {
	if n, ok := p.(*named); ok {
		return n.runtime
	}
	return ""
}

// Packs reports whether p, made by New, allocates to co-located pairs (Gavel's
// "Packing" policies: *_packed, max_sum_throughput_normalized_by_cost_packed_SLOs
// and gandiva), the only ones WithMaxPartners shapes.
func Packs(p Policy) bool { return strings.Contains(GavelName(p), "Packing") }

// UsesSeed reports whether p, made by New, draws random numbers, the only policies WithSeed
// shapes: heterogeneity-agnostic FIFO (a random worker type with room) and gandiva.
func UsesSeed(p Policy) bool {
	n := GavelName(p)
	return n == "FIFO" || n == "Gandiva_Packing"
}

// UsesReference reports whether p, made by New, plans with a reference worker
// type's rates, the only policies WithReference shapes: the
// heterogeneity-agnostic finish-time fairness and makespan
// (finish_time_fairness, min_total_duration).
func UsesReference(p Policy) bool {
	n := GavelName(p)
	return n == "FinishTimeFairness" || n == "MinTotalDuration"
}
