package lp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"
)

// textbook: Hillier & Lieberman's Wyndor Glass problem.
// maximize 3x + 5y  s.t.  x ≤ 4, 2y ≤ 12, 3x + 2y ≤ 18, x, y ≥ 0.
// Optimum 36 at (2, 6); shadow prices (0, 3/2, 1).
func wyndor() *Model {
	m := NewModel(Maximize)
	x := m.AddCol(0, Inf, 3)
	y := m.AddCol(0, Inf, 5)
	m.AddRow(-Inf, 4, []int{x}, []float64{1})
	m.AddRow(-Inf, 12, []int{y}, []float64{2})
	m.AddRow(-Inf, 18, []int{x, y}, []float64{3, 2})
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-7*math.Max(1, math.Abs(b)) }

func TestTextbook(t *testing.T) {
	for _, meth := range []Method{Auto, Dual, Primal, Barrier, Sprint} {
		t.Run(meth.String(), func(t *testing.T) {
			r, err := COIN{}.Solve(context.Background(), wyndor(), Options{Method: meth})
			if err != nil {
				t.Fatal(err)
			}
			if !near(r.Objective, 36) || !near(r.X[0], 2) || !near(r.X[1], 6) {
				t.Fatalf("got obj %v x %v, want 36 at (2,6)", r.Objective, r.X)
			}
			want := []float64{0, 1.5, 1}
			for i := range want {
				if !near(r.Duals[i], want[i]) {
					t.Fatalf("duals %v, want %v", r.Duals, want)
				}
			}
		})
	}
}

func TestMinimizeWithEqualityAndFreeColumn(t *testing.T) {
	// minimize x + 2y + 0·z s.t. x + y = 3, y - z ≥ 1, z free, x ≤ 2.
	// y ≥ 1 (as z can go down... z free: y ≥ 1+z, pick z→ -inf? y-z≥1 always satisfiable),
	// so minimize x+2y with x+y=3, x≤2 → x=2, y=1, objective 4.
	m := NewModel(Minimize)
	x := m.AddCol(0, 2, 1)
	y := m.AddCol(0, Inf, 2)
	z := m.AddCol(-Inf, Inf, 0)
	m.AddRow(3, 3, []int{x, y}, []float64{1, 1})
	m.AddRow(1, Inf, []int{y, z}, []float64{1, -1})
	r, err := COIN{}.Solve(context.Background(), m, Options{Method: Dual})
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Objective, 4) || !near(r.X[0], 2) || !near(r.X[1], 1) {
		t.Fatalf("got %v %v", r.Objective, r.X)
	}
}

func TestInfeasible(t *testing.T) {
	// x + y ≤ 1 and x + y ≥ 2.
	for _, meth := range []Method{Auto, Dual, Barrier} {
		m := NewModel(Maximize)
		x := m.AddCol(0, Inf, 1)
		y := m.AddCol(0, Inf, 1)
		m.AddRow(-Inf, 1, []int{x, y}, []float64{1, 1})
		m.AddRow(2, Inf, []int{x, y}, []float64{1, 1})
		_, err := COIN{}.Solve(context.Background(), m, Options{Method: meth})
		var se *StatusError
		if !errors.Is(err, ErrInfeasible) || !errors.As(err, &se) || se.Status != Infeasible {
			t.Fatalf("%v: got %v, want infeasible", meth, err)
		}
	}
}

func TestUnbounded(t *testing.T) {
	// maximize x + y s.t. x - y ≤ 1.
	for _, meth := range []Method{Auto, Dual, Primal} {
		m := NewModel(Maximize)
		x := m.AddCol(0, Inf, 1)
		y := m.AddCol(0, Inf, 1)
		m.AddRow(-Inf, 1, []int{x, y}, []float64{1, -1})
		_, err := COIN{}.Solve(context.Background(), m, Options{Method: meth})
		if !errors.Is(err, ErrUnbounded) {
			t.Fatalf("%v: got %v, want unbounded", meth, err)
		}
	}
}

// knapsack: values 10,13,7,8 weights 5,6,3,4 capacity 10. By enumeration of
// the 16 subsets the best is {1,3}: 13+8 = 21 (weight 10); {0,2} gives 17,
// {2,3} 15, {0,3} 18 (weight 9), {1,2} 20 (weight 9).
func TestMILPKnapsack(t *testing.T) {
	vals := []float64{10, 13, 7, 8}
	wts := []float64{5, 6, 3, 4}
	m := NewModel(Maximize)
	idx := make([]int, len(vals))
	for i := range vals {
		idx[i] = m.AddCol(0, 1, vals[i])
		m.SetInteger(idx[i])
	}
	m.AddRow(-Inf, 10, idx, wts)
	r, err := COIN{}.Solve(context.Background(), m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Brute force independently.
	best := 0.0
	for s := 0; s < 16; s++ {
		v, w := 0.0, 0.0
		for i := range vals {
			if s&(1<<i) != 0 {
				v += vals[i]
				w += wts[i]
			}
		}
		if w <= 10 && v > best {
			best = v
		}
	}
	if !near(r.Objective, best) || best != 21 {
		t.Fatalf("MILP %v, brute force %v", r.Objective, best)
	}
	for i, want := range []float64{0, 1, 0, 1} {
		if !near(r.X[i], want) {
			t.Fatalf("x = %v", r.X)
		}
	}
}

// Plain (branch and bound alone) and the default find the optimum of seeded
// random 0/1 programs with two knapsack rows and pairwise conflicts (x_i +
// x_j <= 1, as in a matching), checked against enumeration, and a plain
// infeasible MILP is reported infeasible.
func TestMILPPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	for c := 0; c < 40; c++ {
		n := 4 + rng.IntN(9)
		val := make([]float64, n)
		w := [2][]float64{make([]float64, n), make([]float64, n)}
		for i := range val {
			val[i] = math.Round(rng.Float64()*200-40) / 10
			w[0][i], w[1][i] = float64(1+rng.IntN(6)), float64(1+rng.IntN(6))
		}
		capacity := [2]float64{float64(3 + rng.IntN(12)), float64(3 + rng.IntN(12))}
		var conflicts [][2]int
		for k := 0; k < n/2; k++ {
			if i, j := rng.IntN(n), rng.IntN(n); i != j {
				conflicts = append(conflicts, [2]int{i, j})
			}
		}
		m := NewModel(Maximize)
		idx := make([]int, n)
		for i := range val {
			idx[i] = m.AddCol(0, 1, val[i])
			m.SetInteger(idx[i])
		}
		m.AddRow(-Inf, capacity[0], idx, w[0])
		m.AddRow(-Inf, capacity[1], idx, w[1])
		for _, cf := range conflicts {
			m.AddRow(-Inf, 1, []int{cf[0], cf[1]}, []float64{1, 1})
		}
		best := 0.0
		for s := 0; s < 1<<n; s++ {
			v, w0, w1, ok := 0.0, 0.0, 0.0, true
			for i := range val {
				if s&(1<<i) != 0 {
					v, w0, w1 = v+val[i], w0+w[0][i], w1+w[1][i]
				}
			}
			for _, cf := range conflicts {
				ok = ok && (s&(1<<cf[0]) == 0 || s&(1<<cf[1]) == 0)
			}
			if ok && w0 <= capacity[0] && w1 <= capacity[1] {
				best = max(best, v)
			}
		}
		for _, plain := range []bool{false, true} {
			r, err := COIN{}.Solve(context.Background(), m, Options{Plain: plain})
			if err != nil {
				t.Fatalf("case %d, plain %v: %v", c, plain, err)
			}
			if !near(r.Objective, best) {
				t.Fatalf("case %d, plain %v: MILP %v, enumeration %v", c, plain, r.Objective, best)
			}
		}
	}
	m := NewModel(Minimize)
	x := m.AddCol(0, 10, 1)
	m.SetInteger(x)
	m.AddRow(1, 1, []int{x}, []float64{2})
	if _, err := (COIN{}).Solve(context.Background(), m, Options{Plain: true}); !errors.Is(err, ErrInfeasible) {
		t.Fatalf("plain: got %v, want infeasible", err)
	}
}

func TestMILPInfeasible(t *testing.T) {
	// 2x = 1 with x integer.
	m := NewModel(Minimize)
	x := m.AddCol(0, 10, 1)
	m.SetInteger(x)
	m.AddRow(1, 1, []int{x}, []float64{2})
	_, err := COIN{}.Solve(context.Background(), m, Options{})
	if !errors.Is(err, ErrInfeasible) {
		t.Fatalf("got %v, want infeasible", err)
	}
}

func TestBadModel(t *testing.T) {
	m := NewModel(Minimize)
	m.AddCol(1, 0, 1)
	if _, err := (COIN{}).Solve(context.Background(), m, Options{}); err == nil {
		t.Fatal("crossed bounds accepted")
	}
	m = NewModel(Minimize)
	c := m.AddCol(0, 1, 1)
	m.AddRow(0, 1, []int{c}, []float64{math.NaN()})
	if _, err := (COIN{}).Solve(context.Background(), m, Options{}); err == nil {
		t.Fatal("NaN accepted")
	}
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (COIN{}).Solve(ctx, wyndor(), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

func TestEmptyModel(t *testing.T) {
	r, err := COIN{}.Solve(context.Background(), NewModel(Minimize), Options{})
	if err != nil || r.Objective != 0 {
		t.Fatalf("%v %v", r, err)
	}
}

func TestDuplicateEntriesSummed(t *testing.T) {
	// max x s.t. x + x ≤ 4 (given as two entries) → x = 2.
	m := NewModel(Maximize)
	x := m.AddCol(0, Inf, 1)
	m.AddRow(-Inf, 4, []int{x, x}, []float64{1, 1})
	r, err := COIN{}.Solve(context.Background(), m, Options{Method: Dual})
	if err != nil || !near(r.X[0], 2) {
		t.Fatalf("%v %v", r, err)
	}
}

// Separate models solve concurrently (run with -race too).
func TestConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			// maximize Σ x_i s.t. x_i ≤ i+1, Σ x_i ≤ K: optimum min(K, Σ(i+1)).
			n := 20 + g
			m := NewModel(Maximize)
			idx := make([]int, n)
			ones := make([]float64, n)
			total := 0.0
			for i := 0; i < n; i++ {
				idx[i] = m.AddCol(0, float64(i+1), 1)
				ones[i] = 1
				total += float64(i + 1)
			}
			k := float64(100 + g)
			m.AddRow(-Inf, k, idx, ones)
			if g%2 == 1 {
				m.SetInteger(0)
			}
			r, err := COIN{}.Solve(context.Background(), m, Options{TimeLimit: time.Minute})
			if err != nil {
				errs <- err
				return
			}
			if !near(r.Objective, math.Min(k, total)) {
				errs <- fmt.Errorf("model %d: %v", g, r.Objective)
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A time limit too short for the LP gives ErrTimeLimit, not a wrong answer.
func TestTimeLimit(t *testing.T) {
	// A dense-ish assignment LP with 200×200 columns.
	n := 200
	m := NewModel(Maximize)
	cols := make([][]int, n)
	for i := 0; i < n; i++ {
		cols[i] = make([]int, n)
		for j := 0; j < n; j++ {
			cols[i][j] = m.AddCol(0, 1, float64((i*37+j*91)%101))
		}
	}
	ones := make([]float64, n)
	for i := range ones {
		ones[i] = 1
	}
	for i := 0; i < n; i++ {
		m.AddRow(-Inf, 1, cols[i], ones)
		col := make([]int, n)
		for j := 0; j < n; j++ {
			col[j] = cols[j][i]
		}
		m.AddRow(-Inf, 1, col, ones)
	}
	_, err := COIN{}.Solve(context.Background(), m, Options{Method: Primal, TimeLimit: time.Nanosecond})
	if !errors.Is(err, ErrTimeLimit) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want time limit", err)
	}
	// A context deadline that passes during the solve (it becomes COIN's time limit) is the
	// context's: it was ErrTimeLimit alone, which callers could not tell from their option.
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if _, err := (COIN{}).Solve(ctx, m, Options{Method: Primal}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline during the solve: %v, want context.DeadlineExceeded", err)
	}
	// COIN's clock can stop the solve just before the context's timer fires (ctx.Err still
	// nil); the limit was still the deadline's.
	lagging := lagCtx{context.Background(), time.Millisecond}
	if _, err := (COIN{}).Solve(lagging, m, Options{Method: Primal}); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrTimeLimit) {
		t.Fatalf("deadline whose timer has not fired: %v, want context.DeadlineExceeded and ErrTimeLimit", err)
	}
	r, err := COIN{}.Solve(context.Background(), m, Options{Method: Dual})
	if err != nil || r.Objective <= 0 {
		t.Fatalf("without limit: %v %v", r, err)
	}
}

// lagCtx has a deadline always ahead by the time the solve's limit becomes, whose timer never
// fires: Err stays nil past it. (A fixed deadline 1 ms ahead passed before the solve began on a
// slow run, under -race: the model's checks and loading take longer.)
type lagCtx struct {
	context.Context
	ahead time.Duration
}

func (c lagCtx) Deadline() (time.Time, bool) { return time.Now().Add(c.ahead), true }

// The Wyndor LP built column by column, rows first, gives the same optimum.
func TestColumnWise(t *testing.T) {
	m := NewModel(Maximize)
	r0 := m.AddRow(-Inf, 4, nil, nil)
	r1 := m.AddRow(-Inf, 12, nil, nil)
	r2 := m.AddRow(-Inf, 18, nil, nil)
	m.AddColumn(0, Inf, 3, []int{r2, r0}, []float64{3, 1}) // rows out of order on purpose
	m.AddColumn(0, Inf, 5, []int{r2, r1}, []float64{2, 2})
	r, err := COIN{}.Solve(context.Background(), m, Options{Method: Dual})
	if err != nil || !near(r.Objective, 36) || !near(r.X[0], 2) || !near(r.X[1], 6) {
		t.Fatalf("%v %v", r, err)
	}
}

// After a solve, Ctrl-C reaches Go's handler: COIN put it back with signal(), without the
// flags it needs, and a later SIGINT could crash the process or be lost.
func TestSIGINTAfterSolve(t *testing.T) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT)
	defer signal.Stop(ch)
	m := NewModel(Maximize)
	x := m.AddCol(0, 1, 1)
	m.AddRow(-Inf, 1, []int{x}, []float64{1})
	if !sigintHasGoFlags() {
		t.Skip("SIGINT's handler is not Go's (SIGINT ignored in this process)")
	}
	for _, meth := range []Method{Dual, Primal, Auto} {
		if _, err := (COIN{}).Solve(context.Background(), m, Options{Method: meth}); err != nil {
			t.Fatal(err)
		}
		if !sigintHasGoFlags() {
			t.Fatalf("after a %v solve, SIGINT's handler lacks SA_SIGINFO or SA_ONSTACK (COIN's signal() put it back)", meth)
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("SIGINT after a solve never reached Go's handler")
	}
}

// knapsack returns a 0/1 knapsack of n items, item i worth 2i+3 and weighing 2i+2, under an
// odd capacity: the even weights never fill it exactly, so its relaxation is fractional
// everywhere and branch and bound needs many nodes without cuts and heuristics.
func knapsack(n int, capacity float64) *Model {
	m := NewModel(Maximize)
	var idx []int
	var w []float64
	for i := range n {
		idx = append(idx, m.AddCol(0, 1, float64(2*i+3)))
		m.SetInteger(idx[i])
		w = append(w, float64(2*i+2))
	}
	m.AddRow(-Inf, capacity, idx, w)
	return m
}

// A node cap stops branch and bound where it is reached, on any machine: a knapsack whose
// relaxation is fractional everywhere needs many nodes without cuts and heuristics; capped
// below that count the solve fails with ErrNodeLimit, and capped above it is optimal.
func TestMILPMaxNodes(t *testing.T) {
	m := knapsack(24, 101)
	r, err := COIN{}.Solve(context.Background(), m, Options{Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Nodes < 3 {
		t.Fatalf("%d nodes: the test needs a MILP that branches", r.Nodes)
	}
	if _, err := (COIN{}).Solve(context.Background(), m, Options{Plain: true, MaxNodes: 1}); !errors.Is(err, ErrNodeLimit) {
		t.Errorf("capped at 1 of %d nodes: %v, want ErrNodeLimit", r.Nodes, err)
	}
	again, err := COIN{}.Solve(context.Background(), m, Options{Plain: true, MaxNodes: r.Nodes + 10})
	if err != nil || !near(again.Objective, r.Objective) {
		t.Errorf("capped above its %d nodes: %v (objective %v), want %v", r.Nodes, err, again, r.Objective)
	}
}
