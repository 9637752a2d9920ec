package rounds

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// replayPolicy answers a simulation's allocations from a recording of an
// earlier run of the same simulation (which asks for them in the same order,
// with the same jobs), so that a benchmark times the simulator and the round
// mechanism alone, without the policy's LPs. It fails on any other problem.
type replayPolicy struct {
	name, runtime string
	allocs        []*policy.Allocation
	ids           [][]string // each allocation's job ids, checked on replay
	next          int
	record        policy.Policy // non-nil: solve and record
}

func (r *replayPolicy) Name() string        { return r.name }
func (r *replayPolicy) RuntimeName() string { return r.runtime }

func (r *replayPolicy) Allocate(ctx context.Context, p *policy.Problem) (*policy.Allocation, error) {
	ids := make([]string, len(p.Jobs))
	for i, j := range p.Jobs {
		ids[i] = j.ID
	}
	if r.record != nil {
		a, err := r.record.Allocate(ctx, p)
		if err == nil {
			r.allocs, r.ids = append(r.allocs, a), append(r.ids, ids)
		}
		return a, err
	}
	if r.next >= len(r.allocs) || !slices.Equal(r.ids[r.next], ids) {
		return nil, fmt.Errorf("replay: allocation %d for jobs %v was not recorded", r.next, ids)
	}
	r.next++
	return r.allocs[r.next-1], nil
}

// BenchmarkSimulateRounds times a simulation's rounds (the mechanism, the
// ledger, the simulator's bookkeeping) with the policy's allocations replayed
// from a first run, for an unpacked and a packed policy (each job's 8 best
// partners) on 120 generated jobs (multi-GPU) at 12 jobs/hour on 8 GPUs of
// each of k80, p100, v100 (4-GPU servers). The LPs, most of a packed
// simulation's time, are left out: the first run reports them as solve-s.
//
//	go test -run '^$' -bench SimulateRounds ./rounds
func BenchmarkSimulateRounds(b *testing.B) {
	tb := table.Default()
	cluster := policy.Cluster{"v100": 8, "p100": 8, "k80": 8}
	perServer := map[string]int{"v100": 4, "p100": 4, "k80": 4}
	gen, err := NewGenerator(GeneratorConfig{Table: tb, Cluster: cluster, RatePerHour: 12, MultiGPU: true, Seed: 7})
	if err != nil {
		b.Fatal(err)
	}
	jobs := gen.Jobs(120)
	for _, name := range []string{"max_min_fairness_perf", "max_min_fairness_packed"} {
		for _, compat := range []bool{false, true} {
			p, err := policy.New(name, policy.WithMaxPartners(8))
			if err != nil {
				b.Fatal(err)
			}
			// The recording run, once (b.Run calls its function more than once).
			rp := &replayPolicy{name: p.Name(), runtime: RuntimeName(p), record: p}
			cfg := Config{Table: tb, Cluster: cluster, GPUsPerServer: perServer, Policy: rp, GavelCompat: compat}
			start := time.Now()
			want, err := Simulate(context.Background(), cfg, jobs)
			if err != nil {
				b.Fatal(err)
			}
			first := time.Since(start)
			rp.record = nil
			b.Run(fmt.Sprintf("%s/compat=%v", name, compat), func(b *testing.B) {
				fastest := time.Duration(math.MaxInt64)
				for i := 0; i < b.N; i++ {
					rp.next = 0
					t0 := time.Now()
					got, err := Simulate(context.Background(), cfg, jobs)
					fastest = min(fastest, time.Since(t0))
					if err != nil {
						b.Fatal(err)
					}
					if got.Rounds != want.Rounds || got.AvgJCT != want.AvgJCT {
						b.Fatalf("replay: %d rounds, avg JCT %v; the recorded run: %d, %v", got.Rounds, got.AvgJCT, want.Rounds, want.AvgJCT)
					}
				}
				b.ReportMetric(float64(want.Rounds), "rounds")
				b.ReportMetric(float64(want.Allocations), "solves")
				b.ReportMetric(want.SolveSeconds, "solve-s")
				b.ReportMetric(first.Seconds(), "first-run-s")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(max(1, want.Rounds)), "µs/round")
				// On a shared machine the mean wanders; the fastest run is steadier.
				b.ReportMetric(float64(fastest.Microseconds())/1000, "fastest-ms")
			})
		}
	}
}
