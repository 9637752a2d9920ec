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
// context.DeadlineExceeded. A context cancelled during a solve stops it at
// the end of the simplex or barrier iteration in progress, or at CBC's next
// node (or cut pass or heuristic at the root); the error wraps
// context.Canceled. What runs before a barrier's first iteration (presolve,
// the Cholesky ordering, the first factorization: about 1.5 s of CPU at
// 220,000 columns, 4-7 s at 960,000), automatic's crash phase and CBC's
// first LP and preprocessing are not interrupted.
package lp
