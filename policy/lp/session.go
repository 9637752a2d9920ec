package lp

// Session is an LP kept loaded in the backend between solves, so that it can
// be re-optimized from the previous basis after rows or columns are added
// (cutting planes, column generation) instead of being solved from scratch.
// It is COIN-specific (CLP); create one with NewSession.
//
// Solve uses opt.Method on the first solve. After that it starts from the
// last basis: dual simplex when rows were added since the last solve (the
// basis stays dual feasible), primal simplex when only columns were (it
// stays primal feasible). The results follow Solve's conventions (Result,
// *StatusError). A warm start may end at a different optimal vertex than a
// fresh solve when the optimum is not unique; the objective agrees to the
// tolerance.
//
// policy uses it for the odd-set re-solves of packed LPs (measured
// 2026-11-30, 128 jobs with every pair: max-min packed 2.08 s -> 0.38 s, the
// same objectives; the plans may differ where the optimum is not unique).
// rounds' column generation keeps its master LP in one and adds each new
// configuration's column (primal simplex from the last basis): with plain
// pricing MILPs (Options.Plain), decompositions of 73-75 targets went from
// about 5 s to under 1 s and of 126 targets from 34 s to 3 s.
//
// A Session is not safe for concurrent use; separate sessions are. Close
// frees its C memory; it is idempotent, and a closed session fails to solve.
type Session struct {
	m *Model // the session's own copy, with the rows and columns added since
	// The part of m the backend has: rows, columns, nonzeros.
	nr, nc, nz int
	rowsAdded  bool
	solved     bool
	closed     bool
	c          handle
	flag       flagHandle // raised to stop a solve of c (see stoppable)
}

// AddRow adds a row as Model.AddRow does and returns its index. The row may
// use columns added to the session.
func (s *Session) AddRow(lb, ub float64, idx []int, val []float64) int {
	s.rowsAdded = true
	return s.m.AddRow(lb, ub, idx, val)
}

// AddColumn adds a column as Model.AddColumn does and returns its index.
func (s *Session) AddColumn(lb, ub, obj float64, rows []int, vals []float64) int {
	return s.m.AddColumn(lb, ub, obj, rows, vals)
}

// NumRows returns the number of rows, added ones included.
func (s *Session) NumRows() int { return s.m.NumRows() }

// NumCols returns the number of columns, added ones included.
func (s *Session) NumCols() int { return s.m.NumCols() }

// Model returns a copy of the session's model with the added rows and
// columns, for a fresh solve to compare with.
func (s *Session) Model() *Model { return s.m.clone() }

func (m *Model) clone() *Model {
	c := *m
	c.obj = append([]float64(nil), m.obj...)
	c.lb = append([]float64(nil), m.lb...)
	c.ub = append([]float64(nil), m.ub...)
	c.integer = append([]bool(nil), m.integer...)
	c.rowLB = append([]float64(nil), m.rowLB...)
	c.rowUB = append([]float64(nil), m.rowUB...)
	c.tRow = append([]int32(nil), m.tRow...)
	c.tCol = append([]int32(nil), m.tCol...)
	c.tVal = append([]float64(nil), m.tVal...)
	return &c
}
