package lp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Inf is an infinite bound.
var Inf = math.Inf(1)

// Sense is the objective direction.
type Sense int

// Objective senses.
const (
	Minimize Sense = iota
	Maximize
)

// Model is a sparse LP/MILP under construction: columns with bounds and an
// objective coefficient, rows with bounds and sparse coefficients. Row
// coefficients are kept as triplets, so memory is proportional to the
// number of nonzeros.
type Model struct {
	Sense        Sense
	obj, lb, ub  []float64
	integer      []bool
	rowLB, rowUB []float64
	tRow, tCol   []int32
	tVal         []float64
	hasInt       bool
	// byCol: some column was built with AddColumn, whose entries may come
	// before rows added earlier; with AddRow alone every column's entries
	// are in row order and csc need not sort them.
	byCol bool
}

// Reserve makes room for cols more columns, rows more rows and nz more
// nonzeros, so that building a model of known size does not regrow its
// slices. It changes nothing else.
func (m *Model) Reserve(cols, rows, nz int) {
	m.obj = slices.Grow(m.obj, cols)
	m.lb = slices.Grow(m.lb, cols)
	m.ub = slices.Grow(m.ub, cols)
	m.integer = slices.Grow(m.integer, cols)
	m.rowLB = slices.Grow(m.rowLB, rows)
	m.rowUB = slices.Grow(m.rowUB, rows)
	m.tRow = slices.Grow(m.tRow, nz)
	m.tCol = slices.Grow(m.tCol, nz)
	m.tVal = slices.Grow(m.tVal, nz)
}

// NewModel returns an empty model.
func NewModel(s Sense) *Model { return &Model{Sense: s} }

// AddCol adds a column with bounds [lb, ub] (±Inf allowed) and objective
// coefficient obj and returns its index.
func (m *Model) AddCol(lb, ub, obj float64) int {
	m.obj = append(m.obj, obj)
	m.lb = append(m.lb, lb)
	m.ub = append(m.ub, ub)
	m.integer = append(m.integer, false)
	return len(m.obj) - 1
}

// AddColumn adds a column with entries in existing rows (column-wise
// building) and returns its index.
func (m *Model) AddColumn(lb, ub, obj float64, rows []int, vals []float64) int {
	if len(rows) != len(vals) {
		panic("lp: AddColumn: len(rows) != len(vals)")
	}
	j := m.AddCol(lb, ub, obj)
	m.byCol = m.byCol || len(rows) > 0
	for k, r := range rows {
		if r < 0 || r >= len(m.rowLB) {
			panic("lp: AddColumn: row out of range")
		}
		if vals[k] == 0 {
			continue
		}
		m.tRow = append(m.tRow, int32(r))
		m.tCol = append(m.tCol, int32(j))
		m.tVal = append(m.tVal, vals[k])
	}
	return j
}

// SetInteger marks column j as integer; the model then needs a MILP solver.
func (m *Model) SetInteger(j int) {
	m.integer[j] = true
	m.hasInt = true
}

// SetObj sets column j's objective coefficient.
func (m *Model) SetObj(j int, c float64) { m.obj[j] = c }

// SetBounds sets column j's bounds.
func (m *Model) SetBounds(j int, lb, ub float64) { m.lb[j], m.ub[j] = lb, ub }

// AddRow adds lb ≤ Σ val[k]·x[idx[k]] ≤ ub and returns the row index.
// Repeated column indices are summed by the solver's loader; avoid them.
func (m *Model) AddRow(lb, ub float64, idx []int, val []float64) int {
	if len(idx) != len(val) {
		panic("lp: AddRow: len(idx) != len(val)")
	}
	r := int32(len(m.rowLB))
	m.rowLB = append(m.rowLB, lb)
	m.rowUB = append(m.rowUB, ub)
	for k, j := range idx {
		if val[k] == 0 {
			continue
		}
		m.tRow = append(m.tRow, r)
		m.tCol = append(m.tCol, int32(j))
		m.tVal = append(m.tVal, val[k])
	}
	return int(r)
}

// RowBounds returns row r's bounds.
func (m *Model) RowBounds(r int) (lb, ub float64) { return m.rowLB[r], m.rowUB[r] }

// SetRowBounds sets row r's bounds.
func (m *Model) SetRowBounds(r int, lb, ub float64) { m.rowLB[r], m.rowUB[r] = lb, ub }

// NumCols returns the number of columns.
func (m *Model) NumCols() int { return len(m.obj) }

// NumRows returns the number of rows.
func (m *Model) NumRows() int { return len(m.rowLB) }

// NumNonzeros returns the number of matrix nonzeros.
func (m *Model) NumNonzeros() int { return len(m.tVal) }

// IsMIP reports whether some column is integer.
func (m *Model) IsMIP() bool { return m.hasInt }

// check rejects NaN data and crossed bounds before anything reaches C.
func (m *Model) check() error {
	for j := range m.obj {
		if math.IsNaN(m.obj[j]) || math.IsInf(m.obj[j], 0) {
			return fmt.Errorf("lp: column %d: objective coefficient %v", j, m.obj[j])
		}
		if math.IsNaN(m.lb[j]) || math.IsNaN(m.ub[j]) || m.lb[j] > m.ub[j] {
			return fmt.Errorf("lp: column %d: bounds [%v, %v]", j, m.lb[j], m.ub[j])
		}
	}
	for i := range m.rowLB {
		if math.IsNaN(m.rowLB[i]) || math.IsNaN(m.rowUB[i]) || m.rowLB[i] > m.rowUB[i] {
			return fmt.Errorf("lp: row %d: bounds [%v, %v]", i, m.rowLB[i], m.rowUB[i])
		}
	}
	for k, v := range m.tVal {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("lp: row %d column %d: coefficient %v", m.tRow[k], m.tCol[k], v)
		}
		if int(m.tCol[k]) >= len(m.obj) || m.tCol[k] < 0 {
			return fmt.Errorf("lp: row %d: column %d out of range", m.tRow[k], m.tCol[k])
		}
	}
	return nil
}

// csc returns the matrix in compressed sparse column form (rows ascending
// within each column, duplicates summed), as CLP and CBC load it.
func (m *Model) csc() (start, index []int32, value []float64) {
	n := len(m.obj)
	start = make([]int32, n+1)
	for _, c := range m.tCol {
		start[c+1]++
	}
	for j := 0; j < n; j++ {
		start[j+1] += start[j]
	}
	nz := len(m.tVal)
	index = make([]int32, nz)
	value = make([]float64, nz)
	next := make([]int32, n)
	copy(next, start[:n])
	for k := 0; k < nz; k++ {
		c := m.tCol[k]
		p := next[c]
		index[p] = m.tRow[k]
		value[p] = m.tVal[k]
		next[c]++
	}
	// Rows ascending within each column. AddRow appends in row order, so this
	// only does work for columns built with AddColumn (and is skipped
	// without them).
	for j := 0; m.byCol && j < n; j++ {
		seg := colSegment{index[start[j]:start[j+1]], value[start[j]:start[j+1]]}
		if !sort.IsSorted(seg) {
			sort.Stable(seg)
		}
	}
	// Merge duplicates (same row twice in a column).
	w := int32(0)
	for j := 0; j < n; j++ {
		s, e := start[j], start[j+1]
		start[j] = w
		for p := s; p < e; p++ {
			if w > start[j] && index[w-1] == index[p] {
				value[w-1] += value[p]
				continue
			}
			index[w], value[w] = index[p], value[p]
			w++
		}
	}
	start[n] = w
	return start, index[:w], value[:w]
}

type colSegment struct {
	index []int32
	value []float64
}

func (s colSegment) Len() int           { return len(s.index) }
func (s colSegment) Less(a, b int) bool { return s.index[a] < s.index[b] }
func (s colSegment) Swap(a, b int) {
	s.index[a], s.index[b] = s.index[b], s.index[a]
	s.value[a], s.value[b] = s.value[b], s.value[a]
}

// Method selects the LP algorithm.
type Method int

// Methods. Auto lets the backend choose; Barrier uses presolve and an
// interior-point method with crossover (best for LPs with many columns and
// few rows, such as space-sharing LPs); Dual is dual simplex (best for the
// rest); Sprint is CLP's sprint (column generation over the simplex).
const (
	Auto Method = iota
	Dual
	Primal
	Barrier
	Sprint
)

// String returns the method's name, for logs and errors.
func (m Method) String() string {
	switch m {
	case Auto:
		return "auto"
	case Dual:
		return "dual"
	case Primal:
		return "primal"
	case Barrier:
		return "barrier"
	case Sprint:
		return "sprint"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Options control a solve.
type Options struct {
	Method    Method
	TimeLimit time.Duration // 0 = none (the context deadline also applies)
	Tolerance float64       // primal and dual feasibility tolerance; 0 = 1e-9
	// Plain asks a MILP to be solved by branch and bound alone, without the
	// backend's preprocessing, cutting planes and primal heuristics. For
	// small MILPs solved many times (column generation's pricing) their
	// set-up costs more than the search saves: CBC took about 20 ms for an
	// 80-column matching MILP with them, 3 ms without. The result is
	// optimal either way. LPs ignore it.
	Plain bool
	// MaxNodes caps a MILP's branch-and-bound nodes (0 = none): a solve that reaches it
	// without proving a solution optimal fails with ErrNodeLimit. Unlike a time limit it
	// stops at the same point on any machine, however loaded. LPs ignore it.
	MaxNodes int
}

// Status is a solve outcome.
type Status int

// Statuses.
const (
	Optimal Status = iota
	Infeasible
	Unbounded
	TimeLimit
	Numerical
	NodeLimit
)

// String returns the status's name, for errors.
func (s Status) String() string {
	switch s {
	case Optimal:
		return "optimal"
	case Infeasible:
		return "infeasible"
	case Unbounded:
		return "unbounded"
	case TimeLimit:
		return "time limit"
	case Numerical:
		return "numerical trouble"
	case NodeLimit:
		return "node limit"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Sentinel errors matched by *StatusError.
var (
	ErrInfeasible = errors.New("infeasible")
	ErrUnbounded  = errors.New("unbounded")
	ErrTimeLimit  = errors.New("time limit reached")
	ErrNumerical  = errors.New("numerical trouble")
	ErrNodeLimit  = errors.New("node limit reached")
)

// StatusError is returned for every non-optimal outcome.
type StatusError struct {
	Status Status
	Detail string // the backend's own status, for diagnosis
}

// Error names the status and, when known, the solver's detail.
func (e *StatusError) Error() string {
	if e.Detail == "" {
		return "lp: " + e.Status.String()
	}
	return "lp: " + e.Status.String() + " (" + e.Detail + ")"
}

// Unwrap maps the status to its sentinel error.
func (e *StatusError) Unwrap() error {
	switch e.Status {
	case Infeasible:
		return ErrInfeasible
	case Unbounded:
		return ErrUnbounded
	case TimeLimit:
		return ErrTimeLimit
	case NodeLimit:
		return ErrNodeLimit
	default:
		return ErrNumerical
	}
}

// Result is an optimal solution.
type Result struct {
	Status     Status
	Objective  float64   // in the model's sense
	X          []float64 // primal values per column
	Duals      []float64 // row duals: d(objective)/d(row bound), in the model's sense (nil for MILPs)
	Iterations int
	Nodes      int // branch-and-bound nodes of a MILP
	Seconds    float64
}

// Solver solves models.
type Solver interface {
	Solve(ctx context.Context, m *Model, opt Options) (*Result, error)
}

// timeLimit combines the option and the context deadline; 0 = none. byDeadline says the
// deadline set it.
func timeLimit(ctx context.Context, opt Options) (lim float64, byDeadline bool, err error) {
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	lim = opt.TimeLimit.Seconds()
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl).Seconds()
		if left <= 0 {
			return 0, false, context.DeadlineExceeded
		}
		if lim == 0 || left < lim {
			lim, byDeadline = left, true
		}
	}
	return lim, byDeadline, nil
}
