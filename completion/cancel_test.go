package completion

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"
)

// pollCtx answers Err with nil for its first live calls and with context.Canceled from then on,
// so a test can cancel a fit at a chosen check whatever the machine's speed. Its Done channel
// never closes: the fits poll Err, which is what these tests pin down.
type pollCtx struct {
	context.Context
	live  int64
	calls atomic.Int64
}

func newPollCtx(live int64) *pollCtx { return &pollCtx{Context: context.Background(), live: live} }

func (c *pollCtx) Err() error {
	if c.calls.Add(1) > c.live {
		return context.Canceled
	}
	return nil
}

// fitCase runs one exported fit on a small problem and returns its result (nil when the fit
// returned none).
type fitCase struct {
	name string
	run  func(ctx context.Context) (any, error)
}

// orNil turns a nil model into an untyped nil, so callers can test the result against nil.
func orNil[T any](m *T, err error) (any, error) {
	if m == nil {
		return nil, err
	}
	return m, err
}

// fitCases returns every exported fit on a problem small enough to run in milliseconds but large
// enough to take several iterations.
func fitCases() []fitCase {
	a, mask := planted(20, 15, 2, 0.5, 1)
	cvA, cvMask := planted(12, 10, 1, 0.6, 2)
	obs := randomPairObs(2, 8, 0.6, 4)
	mix := make([][]JobWeight, 8)
	mix[7] = []JobWeight{{Job: 0, Weight: 0.5}, {Job: 1, Weight: 0.5}}
	ps := PairSettings{Dim: 1, Seed: 1, MaxIter: 40, Tol: 1e-12}
	return []fitCase{
		{"Fit", func(ctx context.Context) (any, error) {
			return orNil(Fit(ctx, a, mask, Settings{Rank: 2, Seed: 1, MaxIter: 50, Tol: 1e-14}))
		}},
		{"Complete", func(ctx context.Context) (any, error) {
			cm, cells := infeasibleBlock()
			return orNil(Complete(ctx, cm, cells, Settings{Rank: 1, Seed: 1, MaxIter: 20, Tol: 1e-14}))
		}},
		{"CrossValidate", func(ctx context.Context) (any, error) {
			s, scores, err := CrossValidate(ctx, cvA, cvMask, Settings{Seed: 1, MaxIter: 10, Tol: 1e-14},
				CVGrid{Ranks: []int{1, 2}, Lambdas: []float64{0.1}, Folds: 3})
			if scores == nil {
				return nil, err
			}
			return struct {
				S      Settings
				Scores []CVScore
			}{s, scores}, err
		}},
		{"FitFootprints", func(ctx context.Context) (any, error) {
			return orNil(FitFootprints(ctx, thresholdObs(), 2, 8, nil, FootprintSettings{LambdaSize: 0.01}))
		}},
		{"FitPairs", func(ctx context.Context) (any, error) {
			return orNil(FitPairs(ctx, obs, 2, 8, nil, ps))
		}},
		{"FitPairsWithPrior", func(ctx context.Context) (any, error) {
			return orNil(FitPairsWithPrior(ctx, obs, 2, 8, nil, &PairPrior{Mix: mix, Lambda: 1}, ps))
		}},
	}
}

// randomPairObs observes fraction p of a random W×n×n tensor with a planted bias structure.
func randomPairObs(W, n int, p float64, seed uint64) []PairObs {
	rng := rand.New(rand.NewPCG(seed, seed))
	a, c := grid(n, W), grid(n, W)
	for i := 0; i < n; i++ {
		for w := 0; w < W; w++ {
			a[i][w], c[i][w] = 0.3*rng.NormFloat64(), 0.3*rng.NormFloat64()
		}
	}
	var obs []PairObs
	for w := 0; w < W; w++ {
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				if rng.Float64() < p {
					obs = append(obs, PairObs{W: w, I: i, K: k, Y: -0.5 + a[i][w] + c[k][w] + 0.1*rng.NormFloat64()})
				}
			}
		}
	}
	return obs
}

// infeasibleBlock is an 8×6 matrix of ones whose top-left block is infeasible, with a few cells
// unknown.
func infeasibleBlock() (*mat.Dense, [][]Cell) {
	a := mat.NewDense(8, 6, nil)
	cells := make([][]Cell, 8)
	for i := range cells {
		cells[i] = make([]Cell, 6)
		for j := range cells[i] {
			a.Set(i, j, 1)
			cells[i][j] = Known
			if j < 3 && i < 4 {
				a.Set(i, j, 0)
				cells[i][j] = Infeasible
			}
		}
	}
	cells[4][0], cells[3][1] = Unknown, Unknown
	return a, cells
}

// thresholdObs is every pair's outcome for 8 jobs of sizes 1-8 on two worker types of
// capacities 9.5 and 12.5.
func thresholdObs() []FeasObs {
	capacity := []float64{9.5, 12.5}
	var obs []FeasObs
	for w, cp := range capacity {
		for i := 0; i < 8; i++ {
			for k := i; k < 8; k++ {
				obs = append(obs, FeasObs{W: w, I: i, K: k, Infeasible: float64(i+1+k+1) > cp})
			}
		}
	}
	return obs
}

// TestFitsStopWhenContextDone gives every fit a context that is already done, cancelled or past
// its deadline: each returns no result and an error wrapping the context's.
func TestFitsStopWhenContextDone(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancelExpired()
	contexts := []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"past deadline", expired, context.DeadlineExceeded},
	}
	for _, fc := range fitCases() {
		for _, c := range contexts {
			t.Run(fc.name+"/"+c.name, func(t *testing.T) {
				res, err := fc.run(c.ctx)
				if !errors.Is(err, c.want) {
					t.Fatalf("error %v, want one wrapping %v", err, c.want)
				}
				if res != nil {
					t.Errorf("returned a result with the error")
				}
			})
		}
	}
}

// TestFitsStopWhenCancelledDuringFit lets every fit run uncancelled once, counting how often it
// checks its context, then cancels it halfway through those checks: it must stop at the first
// check that sees the cancellation, with no result and an error wrapping context.Canceled. The
// uncancelled run through a counting context must equal a run with context.Background() exactly:
// the checks change nothing else.
func TestFitsStopWhenCancelledDuringFit(t *testing.T) {
	for _, fc := range fitCases() {
		t.Run(fc.name, func(t *testing.T) {
			want, err := fc.run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			full := newPollCtx(1 << 62)
			got, err := fc.run(full)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("result through a live counting context differs from context.Background()'s")
			}
			checks := full.calls.Load()
			if checks < 4 {
				t.Fatalf("the fit checked its context %d times; the problem is too small to cancel it midway", checks)
			}
			half := newPollCtx(checks / 2)
			res, err := fc.run(half)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled after %d of %d checks: error %v, want one wrapping context.Canceled", checks/2, checks, err)
			}
			if res != nil {
				t.Errorf("returned a result with the error")
			}
			if n := half.calls.Load(); n != checks/2+1 {
				t.Errorf("checked the context %d times after it was cancelled at check %d, want to stop at once", n-checks/2, checks/2+1)
			}
		})
	}
}

// TestIterativeFitsStopBeforeIterationCap cancels Fit and FitPairs, which check their context
// once per iteration, before their third iteration, on problems where they would run to the
// cap: the error says where they stopped.
func TestIterativeFitsStopBeforeIterationCap(t *testing.T) {
	a, mask := planted(20, 15, 2, 0.5, 1)
	obs := randomPairObs(2, 8, 0.6, 4)
	const maxIter = 40 // a negative Tol is never met, so uncancelled fits run all of these
	cases := []struct {
		name string
		run  func(ctx context.Context) (iterations int, err error)
	}{
		{"Fit", func(ctx context.Context) (int, error) {
			m, err := Fit(ctx, a, mask, Settings{Rank: 2, Seed: 1, MaxIter: maxIter, Tol: -1})
			if m == nil {
				return 0, err
			}
			return m.Iterations, err
		}},
		{"FitPairs", func(ctx context.Context) (int, error) {
			m, err := FitPairs(ctx, obs, 2, 8, nil, PairSettings{Dim: 1, Seed: 1, MaxIter: maxIter, Tol: -1})
			if m == nil {
				return 0, err
			}
			return m.Iterations, err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if it, err := c.run(context.Background()); err != nil || it != maxIter {
				t.Fatalf("uncancelled: %d iterations, error %v; want the cap, %d", it, err, maxIter)
			}
			ctx := newPollCtx(2)
			_, err := c.run(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want one wrapping context.Canceled", err)
			}
			if want := "stopped before iteration 3"; !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		})
	}
}

// TestFitFootprintsStopsWithinNewtonStep cancels FitFootprints right after its first Newton
// step began: the conjugate-gradient solve inside the step, which makes most of its cost on
// large tables, sees the cancellation instead of running to the end.
func TestFitFootprintsStopsWithinNewtonStep(t *testing.T) {
	_, err := FitFootprints(newPollCtx(1), thresholdObs(), 2, 8, nil, FootprintSettings{LambdaSize: 0.01})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want one wrapping context.Canceled", err)
	}
	if want := "stopped in iteration 1"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}
