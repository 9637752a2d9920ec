//go:build cgo

package lp

/*
#cgo pkg-config: clp cbc
#include <stdlib.h>
#include <signal.h>
#include <Clp_C_Interface.h>
#include <Cbc_C_Interface.h>
#include "stop.h"

// CBC installs a SIGINT handler of its own around the LPs it solves (CLP's initialSolve) and
// then puts the previous one back with signal(), which drops the flags Go's handler needs
// (SA_SIGINFO, SA_ONSTACK): a later Ctrl-C could crash the process (SIGSEGV in the Go runtime).
// Go's handler is saved once, before any such solve, and put back after each. CLP solves run
// with that handler switched off (gavel_no_interrupt): its target is one static model, which
// concurrent solves overwrite, and its save and restore race with theirs; a cancelled context
// stops them instead (gavel_stop, as COIN's handler does, and the model's event handler,
// stop.cpp, which also reaches a barrier solve's internal copy of the model).
static struct sigaction gavel_go_sigint;
static void gavel_save_sigint(void) { sigaction(SIGINT, NULL, &gavel_go_sigint); }
static void gavel_restore_sigint(void) { sigaction(SIGINT, &gavel_go_sigint, NULL); }
static int gavel_sigint_has_go_flags(void) {
	struct sigaction sa;
	sigaction(SIGINT, NULL, &sa);
	return (sa.sa_flags & SA_SIGINFO) && (sa.sa_flags & SA_ONSTACK);
}
// gavel_sigint_handler is SIGINT's handler now, for tests.
static void *gavel_sigint_handler(void) {
	struct sigaction sa;
	sigaction(SIGINT, NULL, &sa);
	return (void *)sa.sa_sigaction;
}
// gavel_no_interrupt switches off initialSolve's SIGINT handler (ClpSolve special option 2).
static void gavel_no_interrupt(Clp_Solve *o) { ClpSolve_setSpecialOption(o, 2, 1, -1); }
// gavel_stop makes a running solve stop at its next iteration, as COIN's SIGINT handler does.
static void gavel_stop(Clp_Simplex *m) { Clp_setMaximumIterations(m, 0); }
*/
import "C"

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
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
	opt, lim, byDeadline, err := prepare(ctx, m, opt)
	if err != nil {
		return nil, err
	}
	var res *Result
	if m.IsMIP() {
		res, err = solveCBC(ctx, m, opt, lim)
	} else {
		res, err = solveCLP(ctx, m, opt, lim)
	}
	return res, withContext(ctx, byDeadline, err)
}

// withContext adds ctx's error to a time limit that was ctx's deadline, so that the caller
// can tell its own deadline (errors.Is context.DeadlineExceeded) from the LP's time limit:
// the deadline becomes COIN's time limit, and it was reported as ErrTimeLimit alone. COIN's
// clock can stop the solve just before ctx's timer fires; a limit the deadline set
// (byDeadline) is then still the deadline's.
func withContext(ctx context.Context, byDeadline bool, err error) error {
	if !errors.Is(err, ErrTimeLimit) {
		return err
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%w (%w)", ctxErr, err)
	}
	if byDeadline {
		return fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
	}
	return err
}

// prepare checks m and returns opt with its default tolerance and the time
// limit in seconds (0 = none) from opt and ctx's deadline; byDeadline says the deadline
// set it.
func prepare(ctx context.Context, m *Model, opt Options) (_ Options, lim float64, byDeadline bool, err error) {
	if err := m.check(); err != nil {
		return opt, 0, false, err
	}
	lim, byDeadline, err = timeLimit(ctx, opt)
	if err != nil {
		return opt, 0, false, err
	}
	if opt.Tolerance == 0 {
		opt.Tolerance = 1e-9
	}
	return opt, lim, byDeadline, nil
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

func solveCLP(ctx context.Context, m *Model, opt Options, lim float64) (*Result, error) {
	t0 := time.Now()
	model, flag := newCLP(m)
	defer freeCLP(model, flag)
	setLimits(model, opt, lim)
	stopped := runMethod(ctx, model, flag, opt.Method)
	return clpResult(model, flag, m.NumCols(), m.NumRows(), t0, stopped)
}

// newCLP loads m into a new CLP model, with the flag that stops its solves (see stoppable)
// watched by its event handler. freeCLP frees both.
func newCLP(m *Model) (unsafe.Pointer, *C.gavel_flag) {
	model := C.Clp_newModel()
	flag := C.gavel_flag_new()
	C.gavel_clp_watch(model, flag)
	C.Clp_setLogLevel(model, 0)
	l := load(m)
	ncols, nrows := C.int(m.NumCols()), C.int(m.NumRows())
	C.Clp_loadProblem(model, ncols, nrows, (*C.CoinBigIndex)(unsafe.Pointer(&l.start[0])), iptr(l.index),
		dptr(l.value), dptr(l.lb), dptr(l.ub), dptr(l.obj), dptr(l.rowLB), dptr(l.rowUB))
	if m.Sense == Maximize {
		C.Clp_setObjSense(model, -1)
	}
	return model, flag
}

// freeCLP frees a model newCLP made, then its flag (which the model's event handlers point to).
func freeCLP(model unsafe.Pointer, flag *C.gavel_flag) {
	C.Clp_deleteModel(model)
	C.gavel_flag_free(flag)
}

// setLimits sets the tolerances and the time limit (lim seconds; 0 = none).
func setLimits(model unsafe.Pointer, opt Options, lim float64) {
	C.Clp_setPrimalTolerance(model, C.double(opt.Tolerance))
	C.Clp_setDualTolerance(model, C.double(opt.Tolerance))
	if lim > 0 {
		C.Clp_setMaximumSeconds(model, C.double(lim))
	} else {
		C.Clp_setMaximumSeconds(model, -1)
	}
}

// saveSIGINT keeps Go's SIGINT handler, before CBC first replaces it.
var saveSIGINT = sync.OnceFunc(func() { C.gavel_save_sigint() })

// cbcCall runs a CBC solve (in its turn, cbcTurn) and puts Go's SIGINT handler back after it.
// Only CBC's solves touch SIGINT's handler (CLP's run with COIN's switched off), and cbcTurn
// serializes them, so no two saves and restores interleave: the handler is COIN's only while
// CBC solves, and Go's, with its flags, before and after.
func cbcCall(solve func()) {
	saveSIGINT()
	defer C.gavel_restore_sigint()
	solve()
}

// sigintHasGoFlags reports whether SIGINT's handler has the flags Go installs it with (for tests).
func sigintHasGoFlags() bool { return C.gavel_sigint_has_go_flags() != 0 }

// sigintHandler is SIGINT's handler now (for tests).
func sigintHandler() uintptr { return uintptr(C.gavel_sigint_handler()) }

// stoppable runs solve, a CLP solve of model, and stops it at the end of its current
// iteration once ctx is done: a SIGINT (through the caller's signal.NotifyContext), a
// sibling's error, a deadline. It raises flag, which model's event handler watches (stop.cpp:
// its copies reach the internal models of a barrier solve and of presolve, which the
// iteration limit does not), and sets model's iteration limit to 0 (gavel_stop, as COIN's
// SIGINT handler did). It returns ctx's error if ctx stopped it, after putting model's
// iteration limit back (a session's next solve starts from it). The stop is waited for, so
// that it never reaches a model already freed.
func stoppable(ctx context.Context, model unsafe.Pointer, flag *C.gavel_flag, solve func()) (stopped error) {
	maxIt := C.maximumIterations(model)
	stopped = watch(ctx, flag, func() { C.gavel_stop(model) }, solve)
	if stopped != nil {
		C.Clp_setMaximumIterations(model, maxIt)
	}
	return stopped
}

// watch runs solve, with flag lowered, and raises it (and calls also) once ctx is done. It
// returns ctx's error if flag was raised before solve returned; the raise is waited for.
func watch(ctx context.Context, flag *C.gavel_flag, also func(), solve func()) (stopped error) {
	C.gavel_flag_reset(flag)
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		C.gavel_flag_raise(flag)
		if also != nil {
			also()
		}
	})
	solve()
	if stop() {
		return nil
	}
	<-done
	return ctx.Err()
}

// runMethod solves a loaded model from scratch with meth; stopped as stoppable's.
func runMethod(ctx context.Context, model unsafe.Pointer, flag *C.gavel_flag, meth Method) (stopped error) {
	switch meth {
	case Dual:
		return stoppable(ctx, model, flag, func() { C.Clp_dual(model, 0) })
	case Primal:
		return stoppable(ctx, model, flag, func() { C.Clp_primal(model, 0) })
	}
	o := C.ClpSolve_new()
	defer C.ClpSolve_delete(o)
	switch meth {
	case Barrier:
		C.ClpSolve_setSolveType(o, 3, -1)
	case Sprint:
		C.ClpSolve_setSolveType(o, 2, -1)
	default:
		C.ClpSolve_setSolveType(o, 5, -1)
	}
	C.ClpSolve_setPresolveType(o, 0, -1)
	C.gavel_no_interrupt(o)
	return stoppable(ctx, model, flag, func() { C.Clp_initialSolveWithOptions(model, o) })
}

// clpResult reads a solved model's outcome: a Result when optimal, else a
// *StatusError, or stopped (runMethod's) wrapped when that stopped the solve: CLP's
// status is then 3 (the iteration limit) or 5 (stopped by the event handler, flag's),
// or anything else but optimal after the event handler stopped an inner solve (a
// barrier's, presolve's), whose outcome is then not the LP's.
func clpResult(model unsafe.Pointer, flag *C.gavel_flag, n, r int, t0 time.Time, stopped error) (*Result, error) {
	st := int(C.Clp_status(model))
	sec := int(C.Clp_secondaryStatus(model))
	res := &Result{Iterations: int(C.Clp_numberIterations(model))}
	if stopped != nil && st != 0 && (st == 3 || st == 5 || C.gavel_flag_acted(flag) != 0) {
		detail := fmt.Sprintf("clp status %d, secondary %d, after %.3gs", st, sec, time.Since(t0).Seconds())
		return nil, stoppedError(detail, stopped)
	}
	switch st {
	case 0:
		res.Status = Optimal
	case 1:
		return nil, &StatusError{Status: Infeasible, Detail: fmt.Sprintf("clp status 1, secondary %d", sec)}
	case 2:
		return nil, &StatusError{Status: Unbounded, Detail: fmt.Sprintf("clp status 2, secondary %d", sec)}
	case 3: // COIN's clock (withContext adds ctx's deadline when it set it)
		detail := fmt.Sprintf("clp status 3, secondary %d, after %.3gs", sec, time.Since(t0).Seconds())
		return nil, &StatusError{Status: TimeLimit, Detail: detail}
	default:
		return nil, &StatusError{Status: Numerical, Detail: fmt.Sprintf("clp status %d, secondary %d", st, sec)}
	}
	res.Objective = float64(C.Clp_objectiveValue(model))
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

// stoppedError is the error of a solve that ctx's error stopped: a cancellation wrapped,
// with detail (the backend's status); a deadline as a time limit, which withContext
// marks as ctx's.
func stoppedError(detail string, stopped error) error {
	if errors.Is(stopped, context.DeadlineExceeded) {
		return &StatusError{Status: TimeLimit, Detail: detail}
	}
	return fmt.Errorf("lp: solve stopped (%s): %w", detail, stopped)
}

type (
	handle     = unsafe.Pointer
	flagHandle = *C.gavel_flag
)

// NewSession loads a copy of the LP m into CLP for warm-started re-solves
// (see Session). It fails for MILPs and for models Solve would reject. Call
// Close when done.
func NewSession(m *Model) (*Session, error) {
	if m.IsMIP() {
		return nil, errors.New("lp: NewSession: the model has integer columns")
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return newSession(m.clone()), nil
}

// NewSessionOn is NewSession without the copy: the session keeps m itself
// and adds the rows and columns given to it there, so m must be changed
// only through the session while it is open (its copy in CLP would not
// follow). It spares copying a large model that the caller would otherwise
// build on in step with the session.
func NewSessionOn(m *Model) (*Session, error) {
	if m.IsMIP() {
		return nil, errors.New("lp: NewSessionOn: the model has integer columns")
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return newSession(m), nil
}

func newSession(m *Model) *Session {
	s := &Session{m: m}
	s.c, s.flag = newCLP(s.m)
	s.nr, s.nc, s.nz = s.m.NumRows(), s.m.NumCols(), s.m.NumNonzeros()
	runtime.SetFinalizer(s, (*Session).Close)
	return s
}

// Solve optimizes the session's LP: with opt.Method the first time, then
// from the last basis (see Session).
func (s *Session) Solve(ctx context.Context, opt Options) (*Result, error) {
	if s.closed {
		return nil, errors.New("lp: Session.Solve after Close")
	}
	opt, lim, byDeadline, err := prepare(ctx, s.m, opt)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	first := !s.solved
	rows := s.rowsAdded
	s.push()
	setLimits(s.c, opt, lim)
	var stopped error
	switch {
	case first:
		stopped = runMethod(ctx, s.c, s.flag, opt.Method)
	case rows:
		stopped = stoppable(ctx, s.c, s.flag, func() { C.Clp_dual(s.c, 0) })
	default: // columns only, or nothing new
		stopped = stoppable(ctx, s.c, s.flag, func() { C.Clp_primal(s.c, 0) })
	}
	s.solved = true
	res, err := clpResult(s.c, s.flag, s.m.NumCols(), s.m.NumRows(), t0, stopped)
	// Until the result is read: a caller that drops s after Solve would
	// otherwise let the finalizer free the model while clpResult reads it.
	runtime.KeepAlive(s)
	return res, withContext(ctx, byDeadline, err)
}

// push hands the rows and columns added since the last solve to CLP:
// first the new columns with their entries in the old rows, then the new
// rows with all their entries (new columns included).
func (s *Session) push() {
	m := s.m
	nr, nc := m.NumRows(), m.NumCols()
	if nc > s.nc {
		k := nc - s.nc
		byCol := make([][]entry, k)
		for p := s.nz; p < len(m.tVal); p++ {
			if int(m.tRow[p]) < s.nr {
				j := int(m.tCol[p]) - s.nc
				byCol[j] = append(byCol[j], entry{m.tRow[p], m.tVal[p]})
			}
		}
		start, index, value := packed(byCol)
		lb, ub, obj := cbounds(m.lb[s.nc:]), cbounds(m.ub[s.nc:]), m.obj[s.nc:]
		C.Clp_addColumns(s.c, C.int(k), dptr(lb), dptr(ub), dptr(obj),
			(*C.CoinBigIndex)(unsafe.Pointer(&start[0])), iptr(index), dptr(value))
	}
	if nr > s.nr {
		k := nr - s.nr
		byRow := make([][]entry, k)
		for p := s.nz; p < len(m.tVal); p++ {
			if i := int(m.tRow[p]) - s.nr; i >= 0 {
				byRow[i] = append(byRow[i], entry{m.tCol[p], m.tVal[p]})
			}
		}
		start, index, value := packed(byRow)
		lb, ub := cbounds(m.rowLB[s.nr:]), cbounds(m.rowUB[s.nr:])
		C.Clp_addRows(s.c, C.int(k), dptr(lb), dptr(ub),
			(*C.CoinBigIndex)(unsafe.Pointer(&start[0])), iptr(index), dptr(value))
	}
	s.nr, s.nc, s.nz = nr, nc, len(m.tVal)
	s.rowsAdded = false
}

// entry is one coefficient of a row (at a column) or column (at a row).
type entry struct {
	at  int32
	val float64
}

// packed lays vectors out as starts, indices and values, indices ascending
// and duplicates summed, with a dummy element where COIN would read element
// 0 of an empty array.
func packed(vecs [][]entry) (start, index []int32, value []float64) {
	start = make([]int32, len(vecs)+1)
	for v, es := range vecs {
		slices.SortStableFunc(es, func(a, b entry) int { return cmp.Compare(a.at, b.at) })
		for p, e := range es {
			if p > 0 && es[p-1].at == e.at {
				value[len(value)-1] += e.val
				continue
			}
			index = append(index, e.at)
			value = append(value, e.val)
		}
		start[v+1] = int32(len(index))
	}
	if len(index) == 0 {
		index, value = make([]int32, 1), make([]float64, 1)
	}
	return start, index, value
}

// Close frees the session's C memory. It is idempotent.
func (s *Session) Close() {
	if s.closed {
		return
	}
	s.closed = true
	runtime.SetFinalizer(s, nil)
	freeCLP(s.c, s.flag)
	s.c, s.flag = nil, nil
}

// cbcTurn serializes CBC: Cbc_solve runs CBC's command-line driver, whose
// parameter tables are static, so two concurrent solves corrupt each other
// (observed: status -1 from one of several goroutines). CLP models are
// independent and run concurrently. It is a channel, not a mutex, so that a
// solve waiting for its turn gives up when its context is done.
var cbcTurn = make(chan struct{}, 1)

// cbcSet sets one of CBC's command-line parameters.
func cbcSet(model unsafe.Pointer, name, value string) {
	n, v := C.CString(name), C.CString(value)
	defer C.free(unsafe.Pointer(n))
	defer C.free(unsafe.Pointer(v))
	C.Cbc_setParameter(model, n, v)
}

// solveCBC solves the MILP m with CBC. Once ctx is done, CBC's event handler (stop.cpp)
// stops its branch and bound at the next node; the solve then fails with ctx's error
// (stoppedError), whatever CBC says of its stopped search.
func solveCBC(ctx context.Context, m *Model, opt Options, lim float64) (*Result, error) {
	select {
	case cbcTurn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-cbcTurn }()
	if err := ctx.Err(); err != nil { // done while waiting, as prepare would say
		return nil, err
	}
	t0 := time.Now()
	flag := C.gavel_flag_new()
	defer C.gavel_flag_free(flag) // after the model, whose event handler points to it
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
	if opt.MaxNodes > 0 {
		C.Cbc_setMaximumNodes(model, C.int(opt.MaxNodes))
	}
	if opt.Plain {
		for _, name := range []string{"preprocess", "cuts", "heuristics"} {
			cbcSet(model, name, "off")
		}
	}
	C.gavel_cbc_watch(model, flag)
	var stopped error
	cbcCall(func() { stopped = watch(ctx, flag, nil, func() { C.Cbc_solve(model) }) })
	st, sec := int(C.Cbc_status(model)), int(C.Cbc_secondaryStatus(model))
	nodes := int(C.Cbc_getNodeCount(model))
	detail := fmt.Sprintf("cbc status %d, secondary %d, %d nodes", st, sec, nodes)
	if stopped != nil && C.gavel_flag_acted(flag) != 0 {
		return nil, stoppedError(detail, stopped)
	}
	switch {
	case C.Cbc_isProvenOptimal(model) != 0:
	case C.Cbc_isProvenInfeasible(model) != 0 || sec == 1:
		return nil, &StatusError{Status: Infeasible, Detail: detail}
	case C.Cbc_isContinuousUnbounded(model) != 0 || sec == 7:
		return nil, &StatusError{Status: Unbounded, Detail: detail}
	case C.Cbc_isSecondsLimitReached(model) != 0 || sec == 4:
		return nil, &StatusError{Status: TimeLimit, Detail: detail}
	case C.Cbc_isNodeLimitReached(model) != 0 || sec == 3:
		return nil, &StatusError{Status: NodeLimit, Detail: detail}
	default:
		return nil, &StatusError{Status: Numerical, Detail: detail}
	}
	res := &Result{Status: Optimal, Objective: float64(C.Cbc_getObjValue(model)),
		Iterations: int(C.Cbc_getIterationCount(model)), Nodes: nodes}
	n := m.NumCols()
	res.X = make([]float64, n)
	if n > 0 {
		copy(res.X, unsafe.Slice((*float64)(unsafe.Pointer(C.Cbc_getColSolution(model))), n))
	}
	res.Seconds = time.Since(t0).Seconds()
	return res, nil
}
