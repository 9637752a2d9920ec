package rounds

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gavelkit/gavel/policy"
)

// Packed allocations can be realized through a decomposition
// (Options.Decompose). With pairs, a round is a matching of the jobs (each
// in one combination) within every worker type's GPUs, and keeping each
// (combination, worker type) near its target one entry at a time can drift:
// on a max-min packed allocation of 14 jobs the walk's largest shortfall
// did not shrink with the rounds (0.17 after 100, 0.14 after 400;
// packed_test.go), and on random realizable packed allocations it averaged
// 0.012 after 100 rounds (worst 0.11). So the allocation's targets are written as a convex
// combination of configurations, each a feasible round (decompose), and
// every round runs the configuration furthest behind its weight, which
// keeps each configuration within about a round of its share (see next):
// 0.018 after 100 rounds and 0.002 after 400; mean 0.0034, worst 0.023. On max-min packed allocations with about one job a
// GPU it stays within 0.005-0.021 where the walk falls 0.02-0.11 behind. It
// is not better everywhere: with about as many configurations as targets
// an entry can still drift by a few rounds, and with 4-5 jobs a GPU the walk
// does better (0.008-0.017 against 0.016-0.028 after 100 rounds;
// TestPackedPolicyRegimes), which is why RunRounds plans both and keeps the
// better.
//
// Allocations with jobs of several GPUs (gangs) are decomposed too: the
// walk is PD² only for single-GPU jobs, and with gangs its largest
// shortfall on realizable allocations had a long tail (Gavel-table jobs of
// 1, 2 and 4 GPUs on 4-16 GPUs of each of k80, p100, v100, 9-40 jobs: up to
// 0.34 after 200 rounds under finish-time fairness, 0.376 after 800 on one
// of them; with the decomposition kept where better, at most 0.019).
// Allocations no rounds realize (the LP policies' on more than 8 jobs,
// often: 3-76 of 100 per size for four LP policies) follow the nearest rounds
// (policy.DecomposeNearest, each job's rate as the weight: the largest
// fraction of a job's promised throughput lost is least). On those same
// instances the walk alone left the worst job 4-15% (mean per policy and
// size) below the throughput the allocation promised it; with the nearest
// rounds kept where they lose it less (RunRounds), 1-7%.

// followSchedule takes this round's configuration of an allocation with
// pairs or gangs into w and reports whether it did: not without
// Options.Decompose, not with single-GPU jobs alone (the walk serves
// them), not with more than policy.DecomposeMaxTargets targets, not when
// the decomposition failed (the walk then serves the targets alone). For
// unrealizable targets it follows the nearest combination of rounds.
// selectEntries never calls it in compat mode.
//
// The schedule counts the round as planned; planning the round that starts
// at the same time again (a plan discarded, or asked for twice) takes the
// earlier count back, so Plan may be called more than once a round.
func (s *State) followSchedule(w *walk, es []*entry, now float64) bool {
	cs := s.scheduleFor(es)
	if cs == nil {
		return false
	}
	if cs.planned && cs.lastStart == now {
		cs.unrun(cs.last)
	}
	q := cs.next()
	cs.run(q)
	cs.planned, cs.lastStart, cs.last = true, now, q
	if q < 0 {
		return true
	}
	byKey := map[entryKey]*entry{}
	for _, e := range es {
		if e.target > 0 {
			byKey[entryKey{e.c, e.w}] = e
		}
	}
	for _, k := range cs.confs[q] {
		if e := byKey[cs.keys[k]]; e != nil {
			w.try(e)
		}
	}
	return true
}

// scheduleFor returns the decomposition of es's targets (cached in s while
// they, the GPUs and the jobs' rates there stay the same), or nil where the
// walk serves them alone.
func (s *State) scheduleFor(es []*entry) *configSchedule {
	if !s.Decompose {
		return nil // before the sort: a simulation plans every round without it
	}
	targets := sortedTargets(es)
	if len(targets) > policy.DecomposeMaxTargets || !slices.ContainsFunc(targets, pairOrGang) {
		return nil
	}
	caps := gpuCounts(s.Topology)
	rate := s.rate(targets)
	// The nearest rounds of unrealizable targets weigh them by rate.
	sig := scheduleSignature(targets, caps) + rateSignature(targets, rate)
	if s.schedule == nil || s.schedule.sig != sig {
		ctx := s.decomposeCtx
		if ctx == nil {
			ctx = context.Background()
		}
		cs, err := decompose(ctx, targets, sig, caps, rate)
		if err != nil {
			cs = &configSchedule{sig: sig, err: err}
		}
		s.schedule = cs
	}
	if s.schedule.err != nil {
		return nil
	}
	return s.schedule
}

// config is one feasible round: entries (indices into a configSchedule's
// keys) that share no job and fit every worker type's GPUs.
type config []int

// entryKey names a (combination, worker type) target.
type entryKey struct {
	c policy.Combination
	w string
}

// configSchedule decomposes one allocation's targets (for one set of jobs)
// and remembers how often each configuration ran since.
type configSchedule struct {
	sig    string // the targets it decomposes and the GPUs, see scheduleSignature
	keys   []entryKey
	confs  []config
	weight []float64 // each configuration's share of the rounds
	ran    []float64 // rounds each configuration ran
	rounds float64   // rounds planned with this schedule
	err    error     // why the decomposition failed (the walk serves the targets), or nil
	// nearest says the targets are unrealizable and the configurations are
	// the nearest combination (policy.DecomposeNearest), which loses a job
	// at most short of its promised throughput.
	nearest bool
	short   float64
	// The last round planned: its start and configuration.
	planned   bool
	lastStart float64
	last      int
}

// decompose writes the targets (sortedTargets, identified by sig) as a
// convex combination of configurations (policy.Decompose), or, given the
// jobs' rates, unrealizable targets as the nearest such combination
// (policy.DecomposeNearest: the least largest share of a job's promised
// throughput lost, then the least sum). Where it fails the walk serves the
// targets alone: a partial decomposition is worse than none (its uncovered
// targets, served by the walk after it, came out 0.06 behind at 126
// targets against the walk's 0.047 alone). Decompose's own answer for unrealizable targets,
// least total shortfall, is not followed: it can put the whole shortfall
// on one job (0.51 short against the walk's 0.25 on two 4-GPU gangs
// sharing 6 GPUs), which the nearest combination spreads (0.25 each).
func decompose(ctx context.Context, targets []*entry, sig string, caps map[string]int, rate func(string, int) float64) (*configSchedule, error) {
	cs := &configSchedule{sig: sig}
	slots := make([]policy.Slot, len(targets))
	target := make([]float64, len(targets))
	for k, e := range targets {
		cs.keys = append(cs.keys, entryKey{e.c, e.w})
		slots[k] = policy.Slot{Combination: e.c, Worker: e.w, GPUs: e.sf}
		target[k] = e.target
	}
	var d *policy.Decomposition
	var err error
	if rate != nil {
		d, err = policy.DecomposeNearest(ctx, slots, target, caps, rate)
	} else {
		d, err = policy.Decompose(ctx, slots, target, caps)
	}
	cs.nearest = rate != nil && d != nil && errors.Is(err, policy.ErrUnrealizable)
	if err != nil && !cs.nearest {
		return nil, err
	}
	for _, q := range d.Rounds {
		cs.confs = append(cs.confs, q)
	}
	cs.weight, cs.short = d.Weights, d.Short
	cs.ran = make([]float64, len(cs.confs))
	return cs, nil
}

// next returns the configuration to run this round: the one whose runs
// fall furthest behind its weight by the end of the round (the lowest index
// on ties), or -1 when the idle share (1 - Σ weight) is further behind than
// any (such a round is not left idle: followSchedule's caller fills it as
// the walk finishes a round, targets first, then back-fill). It is not PD²: a configuration can fall slightly more than a round
// behind (1.10 rounds at worst in a review's 6,000 random weightings of
// 400 rounds). Earliest pseudo-deadline first, which keeps every one within
// a round, measured worse where it matters, on the entries, which sum
// several configurations: on TestFidelityPackedSample a mean largest
// shortfall of 0.0042 (worst 0.040) against 0.0034 (0.023), and behind in
// 12 of the 15 allocations of TestPackedPolicyRegimes. Its runs may fall
// anywhere in their windows; the largest lag keeps each configuration near
// its share at every round.
func (cs *configSchedule) next() int {
	end := cs.rounds + 1
	best, lag := -1, 0.0
	idle := 1.0 // the idle share's lag: end·(1 - Σ weight) - (rounds - Σ ran)
	for q, w := range cs.weight {
		idle -= w * end
		idle += cs.ran[q]
		if l := w*end - cs.ran[q]; w > 0 && (best < 0 || l > lag+1e-12) {
			best, lag = q, l
		}
	}
	if best < 0 || idle > lag+1e-12 {
		return -1
	}
	return best
}

// run records that configuration q (-1: none) runs this round.
func (cs *configSchedule) run(q int) {
	if q >= 0 {
		cs.ran[q]++
	}
	cs.rounds++
}

// unrun takes back run(q).
func (cs *configSchedule) unrun(q int) {
	if q >= 0 {
		cs.ran[q]--
	}
	cs.rounds--
}

// rate returns the rate of a job in targets[k] (its isolated rate there,
// or its rate in the pair), for policy.DecomposeNearest.
func (s *State) rate(targets []*entry) func(string, int) float64 {
	return func(id string, k int) float64 {
		e := targets[k]
		if !e.c.IsPair() {
			if j := s.Jobs[id]; j != nil {
				return j.Rates[e.w]
			}
			return 0
		}
		a, b := s.Jobs[e.c.A], s.Jobs[e.c.B]
		if s.PairRates == nil || a == nil || b == nil {
			return 0
		}
		ra, rb := s.PairRates(e.w, a, b)
		if id == e.c.A {
			return ra
		}
		return rb
	}
}

// rateSignature writes the rate of each job of each target, in targets'
// order.
func rateSignature(targets []*entry, rate func(string, int) float64) string {
	var b strings.Builder
	for k, e := range targets {
		for _, id := range members(e.c) {
			b.WriteString(strconv.FormatFloat(rate(id, k), 'g', -1, 64))
			b.WriteByte(';')
		}
	}
	return b.String()
}

// pairOrGang reports whether e's combination is a pair or takes several
// GPUs: the walk alone serves allocations of neither (single-GPU jobs,
// which its augmenting paths keep on track).
func pairOrGang(e *entry) bool { return e.c.IsPair() || e.sf > 1 }

// scheduleSignature identifies targets (from sortedTargets) and the GPUs
// of each type they were decomposed for: the cluster may change under an
// allocation, and a configuration for more GPUs would then be counted as
// run while part of it cannot.
func scheduleSignature(targets []*entry, caps map[string]int) string {
	var b strings.Builder
	for _, w := range slices.Sorted(maps.Keys(caps)) {
		b.WriteString(w)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(caps[w]))
		b.WriteByte(';')
	}
	for _, e := range targets {
		b.WriteString(e.c.String())
		b.WriteByte('@')
		b.WriteString(e.w)
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(e.target, 'g', -1, 64))
		b.WriteByte(';')
	}
	return b.String()
}

// sortedTargets returns es's entries with positive targets in a fixed
// order (combination, then worker type), so the decomposition does not
// depend on the queue's order.
func sortedTargets(es []*entry) []*entry {
	var out []*entry
	for _, e := range es {
		if e.target > 0 {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *entry) int {
		if c := compareCombinations(a.c, b.c); c != 0 {
			return c
		}
		return cmp.Compare(a.w, b.w)
	})
	return out
}
