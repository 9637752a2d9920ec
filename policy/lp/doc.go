// Package lp builds sparse linear programs (and mixed-integer programs) in
// Go and solves them through a Solver. The Solver in this package, COIN, is a
// small cgo binding of COIN-OR CLP (LPs) and CBC (MILPs) through their C
// interfaces; another backend (HiGHS) can be plugged in behind the same
// interface.
//
// Every non-optimal outcome is a *StatusError that matches ErrInfeasible,
// ErrUnbounded, ErrTimeLimit or ErrNumerical with errors.Is. C memory is
// freed before Solve returns; separate models may be solved concurrently.
//
// A context's deadline bounds a solve: it becomes COIN's time limit, and a
// solve it stops returns an error matching both ErrTimeLimit and
// context.DeadlineExceeded. Cancelling a context is seen before a solve
// starts, not during one (COIN cannot be interrupted from outside).
package lp
