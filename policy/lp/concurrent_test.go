//go:build cgo

package lp

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// bigLP is a random dense LP that takes CLP a while (about 0.4 s on two cores at n=800).
func bigLP(n int, seed uint64) *Model {
	rng := rand.New(rand.NewPCG(seed, 1))
	m := NewModel(Maximize)
	m.Reserve(n, n, n*n)
	idx := make([]int, n)
	for j := range n {
		idx[j] = m.AddCol(0, Inf, 1+rng.Float64())
	}
	for range n {
		val := make([]float64, n)
		for j := range val {
			val[j] = rng.Float64()
		}
		m.AddRow(-Inf, 1+rng.Float64(), idx, val)
	}
	return m
}

// Concurrent CLP solves, and CBC's beside them, leave SIGINT's handler Go's: CLP's run with
// COIN's handler off (it never changes during them), CBC's are serialized and put Go's back.
func TestConcurrentSolvesKeepGoSIGINT(t *testing.T) {
	if !sigintHasGoFlags() {
		t.Skip("SIGINT's handler is not Go's (SIGINT ignored in this process)")
	}
	goHandler := sigintHandler()
	knap := knapsack(16, 61)
	stopWatch := make(chan struct{})
	changed := make(chan uintptr, 1)
	var watch sync.WaitGroup
	watch.Add(1)
	go func() { // CLP alone never installs a handler: watch while only CLP solves run
		defer watch.Done()
		for {
			select {
			case <-stopWatch:
				return
			default:
			}
			if h := sigintHandler(); h != goHandler {
				select {
				case changed <- h:
				default:
				}
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 3 {
				for _, meth := range []Method{Auto, Dual, Primal} {
					if _, err := (COIN{}).Solve(context.Background(), bigLP(60, uint64(10*g+k)), Options{Method: meth}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(stopWatch)
	watch.Wait()
	select {
	case h := <-changed:
		t.Fatalf("SIGINT's handler changed to %#x during CLP solves (Go's is %#x)", h, goHandler)
	default:
	}
	// CBC beside CLP: after all, Go's handler with its flags.
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 5 {
				m := bigLP(60, uint64(100*g+k))
				if g%2 == 1 {
					m = knap
				}
				if _, err := (COIN{}).Solve(context.Background(), m, Options{Plain: true}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !sigintHasGoFlags() || sigintHandler() != goHandler {
		t.Fatalf("after concurrent CLP and CBC solves SIGINT's handler is %#x (flags ok: %v), want Go's %#x",
			sigintHandler(), sigintHasGoFlags(), goHandler)
	}
}

// A cancelled context stops a running CLP solve at CLP's next check of its iteration limit
// (where COIN's SIGINT handler stopped it), and a session solves again afterwards. The dual
// simplex checks it less often, and may finish (its result is then returned): it is left out.
func TestCancelStopsSolve(t *testing.T) {
	m := bigLP(800, 7)
	t0 := time.Now()
	if _, err := (COIN{}).Solve(context.Background(), m, Options{Method: Auto}); err != nil {
		t.Fatal(err)
	}
	full := time.Since(t0)
	if full < 200*time.Millisecond {
		t.Skipf("the LP took only %v: too quick to cancel in the middle", full)
	}
	solvers := []struct {
		name  string
		solve func(context.Context) (*Result, error)
	}{
		{"auto", func(ctx context.Context) (*Result, error) { return COIN{}.Solve(ctx, m, Options{Method: Auto}) }},
		{"primal", func(ctx context.Context) (*Result, error) { return COIN{}.Solve(ctx, m, Options{Method: Primal}) }},
	}
	s, err := NewSession(m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	solvers = append(solvers, struct {
		name  string
		solve func(context.Context) (*Result, error)
	}{"session", func(ctx context.Context) (*Result, error) { return s.Solve(ctx, Options{Method: Primal}) }})
	for _, tc := range solvers {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(full/10, cancel)
		t0 := time.Now()
		_, err := tc.solve(ctx)
		took := time.Since(t0)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: %v, want context.Canceled", tc.name, err)
		}
		if tc.name != "auto" && took > full*3/4 { // auto's crash phase does not check the limit
			t.Errorf("%s: cancelled after %v, returned after %v (a full solve takes %v)", tc.name, full/10, took, full)
		}
	}
	if r, err := s.Solve(context.Background(), Options{}); err != nil || r.Status != Optimal {
		t.Fatalf("session after a cancelled solve: %v %v (its iteration limit was not put back?)", r, err)
	}
}
