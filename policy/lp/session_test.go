//go:build cgo

package lp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// randomLP returns a feasible, bounded LP: columns in [0, ub] and sparse
// nonnegative ≤ rows with positive right-hand sides (0 is feasible).
func randomLP(rng *rand.Rand, sense Sense, rows, cols int) *Model {
	m := NewModel(sense)
	for j := 0; j < cols; j++ {
		m.AddCol(0, 1+4*rng.Float64(), rng.Float64()*2-0.5)
	}
	for i := 0; i < rows; i++ {
		idx, val := randomVec(rng, cols)
		m.AddRow(-Inf, 1+5*rng.Float64(), idx, val)
	}
	return m
}

func randomVec(rng *rand.Rand, n int) ([]int, []float64) {
	var idx []int
	var val []float64
	for j := 0; j < n; j++ {
		if rng.Float64() < 0.4 {
			idx = append(idx, j)
			val = append(val, 0.1+rng.Float64())
		}
	}
	return idx, val
}

// lagrangian is the objective the duals certify: Σ_i y_i·(the row bound
// y_i prices) + Σ_j d_j·(the column bound d_j prices), d = c - yᵀA. With
// duals in Result.Duals's convention (d objective / d row bound, in the
// model's sense) it equals the optimum.
func lagrangian(m *Model, res *Result) float64 {
	d := append([]float64(nil), m.obj...)
	for k, v := range m.tVal {
		d[m.tCol[k]] -= res.Duals[m.tRow[k]] * v
	}
	pick := func(y, lb, ub float64) float64 {
		if math.Abs(y) < 1e-9 {
			return 0
		}
		up := y > 0
		if m.Sense == Minimize {
			up = !up
		}
		if up {
			return y * ub
		}
		return y * lb
	}
	s := 0.0
	for i, y := range res.Duals {
		s += pick(y, m.rowLB[i], m.rowUB[i])
	}
	for j, dj := range d {
		s += pick(dj, m.lb[j], m.ub[j])
	}
	return s
}

func relNear(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func checkAgainstFresh(t *testing.T, step string, s *Session, res *Result, err error) {
	t.Helper()
	m := s.Model()
	want, werr := COIN{}.Solve(context.Background(), m, Options{Method: Dual})
	var se, wse *StatusError
	if werr != nil {
		if !errors.As(err, &se) || !errors.As(werr, &wse) || se.Status != wse.Status {
			t.Fatalf("%s: session %v, fresh %v", step, err, werr)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: session %v, fresh optimal %v", step, err, want.Objective)
	}
	if res.Status != want.Status || !relNear(res.Objective, want.Objective, 1e-8) {
		t.Fatalf("%s: session %v %.12g, fresh %v %.12g", step, res.Status, res.Objective, want.Status, want.Objective)
	}
	if len(res.X) != m.NumCols() || len(res.Duals) != m.NumRows() {
		t.Fatalf("%s: %d values, %d duals for %d columns, %d rows", step, len(res.X), len(res.Duals), m.NumCols(), m.NumRows())
	}
	for _, r := range []*Result{res, want} {
		if l := lagrangian(m, r); !relNear(l, r.Objective, 1e-7) {
			t.Fatalf("%s: duals certify %.12g, objective %.12g", step, l, r.Objective)
		}
	}
	// Degenerate optima may have other duals than the fresh solve's; both
	// must certify the objective (above) and have the sense's sign: a row
	// with only an upper bound raises a maximum (lowers a minimum) as it
	// loosens, one with only a lower bound the opposite.
	for _, r := range []*Result{res, want} {
		for i, y := range r.Duals {
			up := math.IsInf(m.rowLB[i], -1)
			if !up && !math.IsInf(m.rowUB[i], 1) {
				continue
			}
			if (m.Sense == Maximize) != up {
				y = -y
			}
			if y < -1e-9 {
				t.Fatalf("%s: row %d [%v, %v]: dual %v has the wrong sign", step, i, m.rowLB[i], m.rowUB[i], r.Duals[i])
			}
		}
	}
}

func TestSessionRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	steps, stopped := 0, 0
	for c := 0; c < 60; c++ {
		sense := Sense(c % 2)
		nr, nc := 3+rng.IntN(15), 3+rng.IntN(20)
		m := randomLP(rng, sense, nr, nc)
		s, err := NewSession(m)
		if err != nil {
			t.Fatal(err)
		}
		meth := []Method{Auto, Dual, Primal, Barrier}[c%4]
		res, err := s.Solve(ctx, Options{Method: meth})
		checkAgainstFresh(t, "first", s, res, err)
		for step := 0; step < 8; step++ {
			kind := rng.IntN(3) // 0 rows, 1 columns, 2 both
			if kind != 1 {
				for k := 1 + rng.IntN(3); k > 0; k-- {
					idx, val := randomVec(rng, s.NumCols())
					if rng.IntN(2) == 0 { // a cut through the current optimum
						s.AddRow(-Inf, 0.8*value(res, idx, val), idx, val)
					} else { // a ≥ row the optimum may break
						s.AddRow(0.3*rng.Float64(), Inf, idx, val)
					}
				}
			}
			if kind != 0 {
				for k := 1 + rng.IntN(3); k > 0; k-- {
					rows, vals := randomVec(rng, s.NumRows())
					s.AddColumn(0, 1+rng.Float64(), rng.Float64()*3-0.5, rows, vals)
				}
			}
			if kind == 2 && rng.IntN(2) == 0 { // a row over the new columns too
				idx, val := randomVec(rng, s.NumCols())
				s.AddRow(-Inf, 2, idx, val)
			}
			var err error
			res, err = s.Solve(ctx, Options{Method: meth})
			checkAgainstFresh(t, "step", s, res, err)
			steps++
			if err != nil {
				stopped++
				break
			}
		}
		s.Close()
	}
	t.Logf("%d warm solves, %d of them infeasible", steps, stopped)
}

func value(res *Result, idx []int, val []float64) float64 {
	v := 0.0
	for k, j := range idx {
		v += val[k] * res.X[j]
	}
	return v
}

func TestSessionInfeasibleAfterRow(t *testing.T) {
	s, err := NewSession(wyndor())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if r, err := s.Solve(ctx, Options{}); err != nil || !near(r.Objective, 36) {
		t.Fatalf("got %v, %v; want 36", r, err)
	}
	// x ≥ 5 contradicts x ≤ 4.
	s.AddRow(5, Inf, []int{0}, []float64{1})
	_, err = s.Solve(ctx, Options{})
	var se *StatusError
	if !errors.Is(err, ErrInfeasible) || !errors.As(err, &se) || se.Status != Infeasible {
		t.Fatalf("got %v, want *StatusError infeasible", err)
	}
	if _, ferr := (COIN{}).Solve(ctx, s.Model(), Options{}); !errors.Is(ferr, ErrInfeasible) {
		t.Fatalf("fresh solve: %v", ferr)
	}
}

func TestSessionColumnAndClose(t *testing.T) {
	s, err := NewSession(wyndor())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Solve(ctx, Options{Method: Dual}); err != nil {
		t.Fatal(err)
	}
	// A third product z worth 6 using 1 of row 1 and 1 of row 3.
	s.AddColumn(0, Inf, 6, []int{0, 2}, []float64{1, 1})
	res, err := s.Solve(ctx, Options{})
	checkAgainstFresh(t, "column", s, res, err)
	if !(res.Objective > 36) {
		t.Fatalf("objective %v: the new column should help", res.Objective)
	}
	s.Close()
	s.Close()
	if _, err := s.Solve(ctx, Options{}); err == nil {
		t.Fatal("Solve after Close succeeded")
	}
}

func TestSessionRejectsMIP(t *testing.T) {
	m := wyndor()
	m.SetInteger(0)
	if _, err := NewSession(m); err == nil {
		t.Fatal("NewSession accepted a MILP")
	}
}

// NewSessionOn keeps the caller's model: a row added through the session is the model's, and
// the warm-started solve agrees with a fresh solve of that model. A MIP is refused, as
// NewSession refuses one.
func TestSessionOnSharesTheModel(t *testing.T) {
	m := wyndor()
	s, err := NewSessionOn(m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if r, err := s.Solve(ctx, Options{}); err != nil || !near(r.Objective, 36) {
		t.Fatalf("got %v, %v; want 36", r, err)
	}
	s.AddRow(-Inf, 5, []int{0, 1}, []float64{1, 1}) // x + y ≤ 5: y = 5 (5 a unit beats 3) gives 25
	if m.NumRows() != 4 {
		t.Fatalf("the model has %d rows after the session added its fourth", m.NumRows())
	}
	r, err := s.Solve(ctx, Options{})
	fresh, ferr := COIN{}.Solve(ctx, m, Options{})
	if err != nil || ferr != nil || !near(r.Objective, 25) || !near(fresh.Objective, 25) {
		t.Fatalf("session %v, %v; fresh %v, %v; want 25", r, err, fresh, ferr)
	}
	mip := wyndor()
	mip.SetInteger(0)
	if _, err := NewSessionOn(mip); err == nil {
		t.Error("NewSessionOn took a model with integer columns")
	}
}
