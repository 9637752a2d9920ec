package rounds

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

func smallContinuous() ContinuousConfig {
	return ContinuousConfig{Table: table.Default(), Cluster: policy.Cluster{"v100": 2, "p100": 2, "k80": 2},
		Policies: []string{"max_min_fairness_perf", "max_min_fairness"}, Rates: []float64{0.2, 0.5},
		Seeds: []uint64{0, 1}, WindowStart: 0, WindowEnd: 6}
}

// Parallel runs give the sequential run's points, in its order (solve_seconds, a timing,
// aside), and call Progress once per simulation, never two at once.
func TestContinuousParallelSamePoints(t *testing.T) {
	run := func(t *testing.T, parallel int) []ContinuousPoint {
		cfg := smallContinuous()
		cfg.Parallel = parallel
		var inside, calls, overlaps atomic.Int32
		cfg.Progress = func(string, float64, uint64, *Result) {
			if inside.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(time.Millisecond)
			calls.Add(1)
			inside.Add(-1)
		}
		pts, err := Continuous(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(cfg.Policies) * len(cfg.Rates) * len(cfg.Seeds); int(calls.Load()) != n || overlaps.Load() != 0 {
			t.Errorf("parallel %d: %d Progress calls (want %d), %d of them overlapping", parallel, calls.Load(), n, overlaps.Load())
		}
		for i := range pts {
			pts[i].SolveSecs = 0
		}
		return pts
	}
	want := run(t, 1)
	if len(want) != 4 || want[0].Policy != "max_min_fairness_perf" || want[1].Rate != 0.2 || want[2].Rate != 0.5 {
		t.Fatalf("sequential points %+v", want)
	}
	for _, parallel := range []int{2, 3} {
		if got := run(t, parallel); !reflect.DeepEqual(got, want) {
			t.Errorf("parallel %d:\n got %+v\nwant %+v", parallel, got, want)
		}
	}
}

// A cancelled context stops every running simulation promptly (the second rate overloads
// the cluster and would run on without --timeout); the error is context.Canceled, with the
// points that finished.
func TestContinuousCancel(t *testing.T) {
	for _, parallel := range []int{1, 2} {
		cfg := smallContinuous()
		cfg.Policies = cfg.Policies[:1]
		cfg.Rates, cfg.Seeds, cfg.WindowStart, cfg.WindowEnd = []float64{0.05, 30, 40}, []uint64{0}, 0, 5
		cfg.Parallel = parallel
		ctx, cancel := context.WithCancel(context.Background())
		var firstDone atomic.Bool
		cfg.Progress = func(_ string, rate float64, _ uint64, _ *Result) {
			if rate == 0.05 && firstDone.CompareAndSwap(false, true) {
				time.AfterFunc(200*time.Millisecond, cancel)
			}
		}
		t0 := time.Now()
		_, err := Continuous(ctx, cfg)
		took := time.Since(t0)
		cancel()
		var partial *ContinuousPartialError
		if !errors.Is(err, context.Canceled) || !errors.As(err, &partial) {
			t.Fatalf("parallel %d: %v, want context.Canceled in a *ContinuousPartialError", parallel, err)
		}
		if len(partial.Points) != 3 || partial.Points[0] == nil || partial.Points[0].AvgJCT <= 0 ||
			partial.Points[1] != nil || partial.Points[2] != nil {
			t.Errorf("parallel %d: partial points %v, want the first only", parallel, partial.Points)
		}
		if took > 20*time.Second {
			t.Errorf("parallel %d: returned %v after starting", parallel, took)
		}
	}
}

// A context cancelled before the start: no simulation runs.
func TestContinuousCancelledBefore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := smallContinuous()
	cfg.Parallel = 2
	_, err := Continuous(ctx, cfg)
	var partial *ContinuousPartialError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &partial) || len(partial.Points) != 4 || partial.Points[0] != nil {
		t.Fatalf("%v, want context.Canceled and no points", err)
	}
}

// An error stops the simulations after it; the one returned is the first in the order of
// the points, whatever the parallelism, and the points before it are kept.
func TestContinuousErrorOrder(t *testing.T) {
	for _, parallel := range []int{1, 2, 4} {
		cfg := smallContinuous()
		cfg.Policies = []string{"max_min_fairness_perf", "no_such_policy"}
		cfg.Seeds = []uint64{0}
		cfg.Parallel = parallel
		_, err := Continuous(context.Background(), cfg)
		var partial *ContinuousPartialError
		if err == nil || !strings.HasPrefix(err.Error(), "no_such_policy at 0.2 jobs/hour, seed 0: ") || !errors.As(err, &partial) {
			t.Fatalf("parallel %d: %v, want no_such_policy's error at the first rate", parallel, err)
		}
		if partial.Points[0] == nil || partial.Points[1] != nil {
			t.Errorf("parallel %d: points %v, want the first (before the error) and not the second", parallel, partial.Points)
		}
	}
}
