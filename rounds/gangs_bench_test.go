package rounds

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// BenchmarkGangFidelity prints the README's table of allocations with gangs
// on Gavel's table: per policy and size (100 instances of gangInstance,
// seeds 1000·lo + i), how many allocations no rounds give, and for those the
// worst-served job's share of its allocated throughput lost
// (RoundsResult.MaxThroughputLoss) and the largest time shortfall after 200
// rounds, with the walk alone and with the plan RunRounds keeps, and the
// least loss any rounds leave before back-fill (Check); for the realizable
// ones the largest time shortfall, walk and kept. It runs once (about 5
// minutes on 2 cores):
//
//	go test -run '^$' -bench GangFidelity -benchtime 1x ./rounds
func BenchmarkGangFidelity(b *testing.B) {
	tb := table.Default()
	policies := []string{"max_min_fairness_perf", "max_min_fairness_packed", "finish_time_fairness_perf",
		"max_sum_throughput_perf", "min_total_duration_perf", "fifo_perf"}
	var out strings.Builder
	fmt.Fprintf(&out, "\n%-26s %-5s %7s | %-23s %-23s %-11s | %-23s | %s\n", "policy", "jobs", "unreal",
		"loss walk mean/max", "loss kept mean/max", "least mean", "time short walk / kept", "realizable: time short walk / kept (max)")
	for _, size := range [][2]int{{9, 12}, {13, 20}, {21, 40}} {
		probs := make([]*policy.Problem, 100)
		for i := range probs {
			probs[i] = gangInstance(tb, size[0], size[1], uint64(1000*size[0]+i))
		}
		for _, name := range policies {
			rows := make([]gangRow, len(probs))
			var wg sync.WaitGroup
			for w := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < len(probs); i += 2 {
						rows[i] = measureGang(b, name, probs[i])
					}
				}()
			}
			wg.Wait()
			fmt.Fprintln(&out, summarizeGangs(name, fmt.Sprintf("%d-%d", size[0], size[1]), rows))
		}
	}
	fmt.Print(out.String()) // b.Log cuts a benchmark's log at 10 lines
}

// gangRow is one allocation's outcome.
type gangRow struct {
	unrealizable         bool
	least                float64 // Check's NearestLoss (unrealizable only)
	walkLoss, keptLoss   float64
	walkShort, keptShort float64
}

// measureGang runs in the benchmark's worker goroutines: errors are
// reported with b.Error (b.Fatal must not be called there).
func measureGang(b *testing.B, name string, p *policy.Problem) gangRow {
	cfg, walk, kept, err := planGangs(name, p)
	if err != nil {
		b.Error(name, err)
		return gangRow{}
	}
	chk := Check(context.Background(), cfg)
	r := gangRow{unrealizable: chk.Realizable != nil && !*chk.Realizable, walkLoss: walk.MaxThroughputLoss,
		keptLoss: kept.MaxThroughputLoss, walkShort: walk.MaxDeviationAllocated, keptShort: kept.MaxDeviationAllocated}
	if chk.NearestLoss != nil {
		r.least = *chk.NearestLoss
	}
	return r
}

func summarizeGangs(name, size string, rows []gangRow) string {
	var n int
	var wl, kl, ll, ws, ks, wlMax, klMax, rw, rk float64
	for _, r := range rows {
		if !r.unrealizable {
			rw, rk = math.Max(rw, r.walkShort), math.Max(rk, r.keptShort)
			continue
		}
		n++
		wl, kl, ll, ws, ks = wl+r.walkLoss, kl+r.keptLoss, ll+r.least, ws+r.walkShort, ks+r.keptShort
		wlMax, klMax = math.Max(wlMax, r.walkLoss), math.Max(klMax, r.keptLoss)
	}
	if n == 0 {
		return fmt.Sprintf("%-26s %-5s %3d/%-3d | %-23s %-23s %-11s | %-23s | %.3f / %.3f", name, size, 0, len(rows), "-", "-", "-", "-", rw, rk)
	}
	m := float64(n)
	return fmt.Sprintf("%-26s %-5s %3d/%-3d | %-23s %-23s %-11.3f | %-23s | %.3f / %.3f", name, size, n, len(rows),
		fmt.Sprintf("%.3f / %.3f", wl/m, wlMax), fmt.Sprintf("%.3f / %.3f", kl/m, klMax), ll/m,
		fmt.Sprintf("%.3f / %.3f", ws/m, ks/m), rw, rk)
}
