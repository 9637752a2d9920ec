package policy

import (
	"context"
	"slices"
	"time"

	"github.com/gavelkit/gavel/policy/lp"
)

// builder holds an LP over the time fractions x[c][w] with the base
// constraints of gavel-reference §2.3/§2.5 already added:
//
//	0 ≤ x_cw ≤ 1, and x_cw exists only where c can run on w
//	Σ_c sf_c·x_cw ≤ n_w              for every worker type (a pair takes sf GPUs)
//	Σ_{c∋i} Σ_w x_cw ≤ 1             for every job, over its own combinations
type builder struct {
	in  *instance
	m   *lp.Model
	col [][]int // [combo][worker] → column, -1 where c cannot run on w
	// tightRows marks max-min-shaped LPs (an epigraph column in every job's
	// row, most rows tight at the optimum), where barrier beats dual
	// simplex once the LP is wide; see solve.
	tightRows bool
	// levelRows are the rows that keep jobs at their levels (water
	// filling), which solveAtLevels may relax.
	levelRows []int
}

func (in *instance) newBuilder(sense lp.Sense) *builder {
	b := &builder{in: in, m: lp.NewModel(sense), col: make([][]int, len(in.combos))}
	// Sizes first, so that nothing below regrows: columns per worker type,
	// and those of pairs (in two jobs' rows).
	perW := make([]int, in.nw())
	ncols, pairCols := 0, 0
	for c := range in.combos {
		cb := &in.combos[c]
		for w := range in.workers {
			if cb.runnable(w) {
				perW[w]++
				ncols++
				if cb.pair() {
					pairCols++
				}
			}
		}
	}
	// The capacity and job rows here, and as many again for the caller's
	// rows over each job's throughput (and a column of its own).
	rows := in.nw() + 2*in.m() + len(in.oddSets) + len(in.covers) + len(in.roundCuts)
	b.m.Reserve(ncols+1, rows, ncols+2*(ncols+pairCols)+in.m())
	capIdx := make([][]int, in.nw())
	capVal := make([][]float64, in.nw())
	for w := range in.workers {
		capIdx[w] = make([]int, 0, perW[w])
		capVal[w] = make([]float64, 0, perW[w])
	}
	cols := make([]int, len(in.combos)*in.nw())
	for c := range in.combos {
		cb := &in.combos[c]
		b.col[c] = cols[c*in.nw() : (c+1)*in.nw() : (c+1)*in.nw()]
		for w := range in.workers {
			b.col[c][w] = -1
			if !cb.runnable(w) {
				continue
			}
			j := b.m.AddCol(0, 1, 0)
			b.col[c][w] = j
			capIdx[w] = append(capIdx[w], j)
			capVal[w] = append(capVal[w], float64(cb.sf))
		}
	}
	for w := range in.workers {
		b.m.AddRow(-lp.Inf, in.cap[w], capIdx[w], capVal[w])
	}
	var idx []int // reused: AddRow copies
	var val []float64
	for i := range in.jobs {
		idx, val = idx[:0], val[:0]
		for _, c := range in.byJob[i] {
			for _, j := range b.col[c] {
				if j >= 0 {
					idx = append(idx, j)
					val = append(val, 1)
				}
			}
		}
		b.m.AddRow(-lp.Inf, 1, idx, val)
	}
	for _, s := range in.oddSets {
		idx, val, ub := b.oddSetRow(s)
		b.addRow(nil, idx, val, ub)
	}
	for _, cv := range in.covers {
		idx, val, ub := b.coverRow(cv)
		b.addRow(nil, idx, val, ub)
	}
	b.addCliqueRows()
	for _, cut := range in.roundCuts {
		idx, val, ub := b.roundCutRow(cut)
		b.addRow(nil, idx, val, ub)
	}
	return b
}

// rateFunc gives job i's rate inside combination c on worker w.
type rateFunc func(i, c, w int) float64

// trueRates reads the table's rates.
func (in *instance) trueRates() rateFunc {
	return func(i, c, w int) float64 { return in.combos[c].rateOf(i, w) }
}

// viewRates uses view[i][w] for singles (an agnostic or reference view) and
// the true rates for pairs.
func (in *instance) viewRates(view [][]float64) rateFunc {
	return func(i, c, w int) float64 {
		if in.combos[c].pair() {
			return in.combos[c].rateOf(i, w)
		}
		return view[i][w]
	}
}

// expr returns Σ_{c∋i} Σ_w scale·rate(i,c,w)·x_cw: job i's throughput.
func (b *builder) expr(i int, rate rateFunc, scale float64) (idx []int, val []float64) {
	for _, c := range b.in.byJob[i] {
		for w, j := range b.col[c] {
			if j < 0 {
				continue
			}
			if r := rate(i, c, w) * scale; r != 0 {
				idx = append(idx, j)
				val = append(val, r)
			}
		}
	}
	return idx, val
}

// addObjective sets coef(c, w) as the objective coefficient of every column.
func (b *builder) addObjective(coef func(c, w int) float64) {
	for c := range b.col {
		for w, j := range b.col[c] {
			if j >= 0 {
				b.m.SetObj(j, coef(c, w))
			}
		}
	}
}

// solve runs the LP with the method the options ask for, or (automatic)
// barrier with presolve for wide space-sharing LPs (many columns, few rows)
// of max-min shape (tightRows), and dual simplex otherwise. Measured
// (benchmarks/policy/RESULTS.md, 128-256 jobs, 23,000-91,000 columns):
// barrier is 1.4-5x faster than dual on LAS, water filling and FTF, but
// dual is 8-28x faster on makespan, whose rows are mostly slack at the
// optimum, and 2x faster on throughput sums.
//
// A packed LP is solved again with the odd-set rows its solution violates
// (see oddsets.go), and an LP with jobs of several GPUs with the cover rows
// (covers.go), until it violates none, at most oddSetRounds times; the
// rows stay with the instance, so its later LPs start with them. With the
// default solver (COIN) those re-solves are warm started (an lp.Session:
// dual simplex from the last basis after the rows are added).
func (b *builder) solve(ctx context.Context, opt *options, st *SolveStats) (*lp.Result, error) {
	packed, gangs := len(b.in.combos) > b.in.m(), b.in.hasGangs()
	var sess *lp.Session
	if _, ok := opt.solver().(lp.COIN); ok && (packed || gangs) && !b.m.IsMIP() {
		// The session keeps b.m itself (no copy): until it closes, rows
		// reach b.m only through it (addRow).
		if s, err := lp.NewSessionOn(b.m); err == nil {
			sess = s
			defer sess.Close()
		}
	}
	res, err := b.solveOnce(ctx, opt, st, sess)
	if err != nil || !(packed || gangs) {
		return res, err
	}
	limit := opt.oddSetRounds
	switch {
	case limit == 0 && b.in.separable():
		limit = separateRounds
	case limit == 0:
		limit = oddSetRounds
	}
	for round := 0; ; round++ {
		x := b.fractions(res)
		var sets [][]int
		complete := true
		if packed {
			sets, complete = b.in.violatedOddSets(x)
			sets = slices.DeleteFunc(sets, b.in.hasOddSet)
		}
		var covers []cover
		if gangs {
			covers = slices.DeleteFunc(b.in.violatedCovers(x), b.in.hasCover)
		}
		var cut *roundCut
		decided := false
		if len(sets)+len(covers) == 0 {
			if cut, decided, err = b.in.separate(ctx, x, opt, st); err != nil {
				return nil, err
			}
			complete = complete || decided
		}
		if len(sets)+len(covers) == 0 && cut == nil || round >= limit {
			if len(sets)+len(covers) > 0 || cut != nil || !complete {
				st.Unsettled++
			}
			if cut != nil || !decided {
				b.in.separationOff = true
			}
			return res, nil
		}
		if cut != nil {
			b.in.roundCuts = append(b.in.roundCuts, *cut)
			idx, val, ub := b.roundCutRow(*cut)
			b.addRow(sess, idx, val, ub)
		}
		for _, s := range sets {
			b.in.addOddSet(s)
			idx, val, ub := b.oddSetRow(s)
			b.addRow(sess, idx, val, ub)
		}
		for _, cv := range covers {
			b.in.addCover(cv)
			idx, val, ub := b.coverRow(cv)
			b.addRow(sess, idx, val, ub)
		}
		if res, err = b.solveOnce(ctx, opt, st, sess); err != nil {
			return res, err
		}
	}
}

// addRow adds Σ idx·val ≤ ub to the model, through sess when it is not nil
// (the session's model is b.m).
func (b *builder) addRow(sess *lp.Session, idx []int, val []float64, ub float64) {
	if len(idx) == 0 {
		return
	}
	if sess != nil {
		sess.AddRow(-lp.Inf, ub, idx, val)
		return
	}
	b.m.AddRow(-lp.Inf, ub, idx, val)
}

// solveOnce solves b.m, through sess when it is not nil.
func (b *builder) solveOnce(ctx context.Context, opt *options, st *SolveStats, sess *lp.Session) (*lp.Result, error) {
	o := lp.Options{TimeLimit: opt.timeLimit, Tolerance: 1e-9, Method: b.method(opt)}
	t0 := time.Now()
	res, err := solveModel(ctx, opt.solver(), b.m, sess, o)
	iters := 0
	if res != nil {
		iters = res.Iterations
	}
	st.add(b.m.NumRows(), b.m.NumCols(), iters, time.Since(t0))
	return res, err
}

// solveModel solves m through sess when it is not nil (m loaded there),
// else with s.
func solveModel(ctx context.Context, s lp.Solver, m *lp.Model, sess *lp.Session, o lp.Options) (*lp.Result, error) {
	if sess != nil {
		return sess.Solve(ctx, o)
	}
	return s.Solve(ctx, m, o)
}

// method is the LP method solve uses (see solve).
func (b *builder) method(opt *options) lp.Method {
	switch opt.method {
	case MethodDual:
		return lp.Dual
	case MethodBarrier:
		return lp.Barrier
	case MethodSprint:
		return lp.Sprint
	}
	if b.tightRows && len(b.in.combos) > b.in.m() && b.m.NumCols() > 20000 {
		return lp.Barrier
	}
	return lp.Dual
}

// fractions reads x[c][w] from a solution.
func (b *builder) fractions(res *lp.Result) [][]float64 {
	x := make([][]float64, len(b.col))
	n := 0
	for c := range b.col {
		n += len(b.col[c])
	}
	all := make([]float64, n) // one allocation; each x[c] is capped at its own part
	for c := range b.col {
		k := len(b.col[c])
		x[c], all = all[:k:k], all[k:]
		for w, j := range b.col[c] {
			if j >= 0 {
				x[c][w] = res.X[j]
			}
		}
	}
	return x
}

// value evaluates an expression at a solution.
func value(res *lp.Result, idx []int, val []float64) float64 {
	s := 0.0
	for k, j := range idx {
		s += val[k] * res.X[j]
	}
	return s
}
