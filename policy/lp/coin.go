//go:build cgo

package lp

/*
#cgo pkg-config: clp cbc
#include <stdlib.h>
#include <Clp_C_Interface.h>
#include <Cbc_C_Interface.h>
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"
)

// COIN solves LPs with CLP and MILPs with CBC. The zero value is ready.
type COIN struct{}

// Default returns the solver used by the policies: COIN.
func Default() Solver { return COIN{} }

// Solve solves m. On any non-optimal outcome it returns a *StatusError.
func (COIN) Solve(ctx context.Context, m *Model, opt Options) (*Result, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	lim, err := timeLimit(ctx, opt)
	if err != nil {
		return nil, err
	}
	if opt.Tolerance == 0 {
		opt.Tolerance = 1e-9
	}
	if m.IsMIP() {
		return solveCBC(m, opt, lim)
	}
	return solveCLP(m, opt, lim)
}

// cbounds converts ±Inf to the ±DBL_MAX that COIN reads as infinite.
func cbounds(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		switch {
		case math.IsInf(x, 1):
			out[i] = math.MaxFloat64
		case math.IsInf(x, -1):
			out[i] = -math.MaxFloat64
		default:
			out[i] = x
		}
	}
	return out
}

type loaded struct {
	start, index       []int32
	value, lb, ub, obj []float64
	rowLB, rowUB       []float64
}

func load(m *Model) *loaded {
	l := &loaded{lb: cbounds(m.lb), ub: cbounds(m.ub), obj: m.obj, rowLB: cbounds(m.rowLB), rowUB: cbounds(m.rowUB)}
	l.start, l.index, l.value = m.csc()
	// COIN reads element 0 of every array even when it is empty.
	for _, p := range []*[]float64{&l.value, &l.lb, &l.ub, &l.obj, &l.rowLB, &l.rowUB} {
		if len(*p) == 0 {
			*p = make([]float64, 1)
		}
	}
	if len(l.index) == 0 {
		l.index = make([]int32, 1)
	}
	return l
}

func dptr(v []float64) *C.double { return (*C.double)(unsafe.Pointer(&v[0])) }
func iptr(v []int32) *C.int      { return (*C.int)(unsafe.Pointer(&v[0])) }

func solveCLP(m *Model, opt Options, lim float64) (*Result, error) {
	t0 := time.Now()
	model := C.Clp_newModel()
	defer C.Clp_deleteModel(model)
	C.Clp_setLogLevel(model, 0)
	l := load(m)
	ncols, nrows := C.int(m.NumCols()), C.int(m.NumRows())
	C.Clp_loadProblem(model, ncols, nrows, (*C.CoinBigIndex)(unsafe.Pointer(&l.start[0])), iptr(l.index),
		dptr(l.value), dptr(l.lb), dptr(l.ub), dptr(l.obj), dptr(l.rowLB), dptr(l.rowUB))
	if m.Sense == Maximize {
		C.Clp_setObjSense(model, -1)
	}
	C.Clp_setPrimalTolerance(model, C.double(opt.Tolerance))
	C.Clp_setDualTolerance(model, C.double(opt.Tolerance))
	if lim > 0 {
		C.Clp_setMaximumSeconds(model, C.double(lim))
	}
	switch opt.Method {
	case Dual:
		C.Clp_dual(model, 0)
	case Primal:
		C.Clp_primal(model, 0)
	default:
		o := C.ClpSolve_new()
		switch opt.Method {
		case Barrier:
			C.ClpSolve_setSolveType(o, 3, -1)
		case Sprint:
			C.ClpSolve_setSolveType(o, 2, -1)
		default:
			C.ClpSolve_setSolveType(o, 5, -1)
		}
		C.ClpSolve_setPresolveType(o, 0, -1)
		C.Clp_initialSolveWithOptions(model, o)
		C.ClpSolve_delete(o)
	}
	st := int(C.Clp_status(model))
	sec := int(C.Clp_secondaryStatus(model))
	res := &Result{Iterations: int(C.Clp_numberIterations(model))}
	switch st {
	case 0:
		res.Status = Optimal
	case 1:
		return nil, &StatusError{Status: Infeasible, Detail: fmt.Sprintf("clp status 1, secondary %d", sec)}
	case 2:
		return nil, &StatusError{Status: Unbounded, Detail: fmt.Sprintf("clp status 2, secondary %d", sec)}
	case 3:
		if C.Clp_hitMaximumIterations(model) == 0 || lim > 0 {
			return nil, &StatusError{Status: TimeLimit, Detail: fmt.Sprintf("clp status 3, secondary %d, after %.3gs", sec, time.Since(t0).Seconds())}
		}
		return nil, &StatusError{Status: Numerical, Detail: "clp hit its iteration limit"}
	default:
		return nil, &StatusError{Status: Numerical, Detail: fmt.Sprintf("clp status %d, secondary %d", st, sec)}
	}
	res.Objective = float64(C.Clp_objectiveValue(model))
	n, r := m.NumCols(), m.NumRows()
	res.X = make([]float64, n)
	if n > 0 {
		copy(res.X, unsafe.Slice((*float64)(unsafe.Pointer(C.Clp_getColSolution(model))), n))
	}
	res.Duals = make([]float64, r)
	if r > 0 {
		copy(res.Duals, unsafe.Slice((*float64)(unsafe.Pointer(C.Clp_getRowPrice(model))), r))
	}
	res.Seconds = time.Since(t0).Seconds()
	return res, nil
}

// cbcMu serializes CBC: Cbc_solve runs CBC's command-line driver, whose
// parameter tables are static, so two concurrent solves corrupt each other
// (observed: status -1 from one of several goroutines). CLP models are
// independent and run concurrently.
var cbcMu sync.Mutex

func solveCBC(m *Model, opt Options, lim float64) (*Result, error) {
	cbcMu.Lock()
	defer cbcMu.Unlock()
	t0 := time.Now()
	model := C.Cbc_newModel()
	defer C.Cbc_deleteModel(model)
	C.Cbc_setLogLevel(model, 0)
	l := load(m)
	C.Cbc_loadProblem(model, C.int(m.NumCols()), C.int(m.NumRows()), (*C.CoinBigIndex)(unsafe.Pointer(&l.start[0])),
		iptr(l.index), dptr(l.value), dptr(l.lb), dptr(l.ub), dptr(l.obj), dptr(l.rowLB), dptr(l.rowUB))
	if m.Sense == Maximize {
		C.Cbc_setObjSense(model, -1)
	}
	for j, isInt := range m.integer {
		if isInt {
			C.Cbc_setInteger(model, C.int(j))
		}
	}
	if lim > 0 {
		C.Cbc_setMaximumSeconds(model, C.double(lim))
	}
	C.Cbc_solve(model)
	st, sec := int(C.Cbc_status(model)), int(C.Cbc_secondaryStatus(model))
	detail := fmt.Sprintf("cbc status %d, secondary %d", st, sec)
	switch {
	case C.Cbc_isProvenOptimal(model) != 0:
	case C.Cbc_isProvenInfeasible(model) != 0 || sec == 1:
		return nil, &StatusError{Status: Infeasible, Detail: detail}
	case C.Cbc_isContinuousUnbounded(model) != 0 || sec == 7:
		return nil, &StatusError{Status: Unbounded, Detail: detail}
	case C.Cbc_isSecondsLimitReached(model) != 0 || sec == 4:
		return nil, &StatusError{Status: TimeLimit, Detail: detail}
	default:
		return nil, &StatusError{Status: Numerical, Detail: detail}
	}
	res := &Result{Status: Optimal, Objective: float64(C.Cbc_getObjValue(model)),
		Iterations: int(C.Cbc_getIterationCount(model))}
	n := m.NumCols()
	res.X = make([]float64, n)
	if n > 0 {
		copy(res.X, unsafe.Slice((*float64)(unsafe.Pointer(C.Cbc_getColSolution(model))), n))
	}
	res.Seconds = time.Since(t0).Seconds()
	return res, nil
}
