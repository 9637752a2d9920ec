// Package lp builds sparse linear programs (and mixed-integer programs) in
// Go and solves them through a Solver. The Solver in this package, COIN, is a
// small cgo binding of COIN-OR CLP (LPs) and CBC (MILPs) through their C
// interfaces; another backend (HiGHS) can be plugged in behind the same
// interface.
//
// Every non-optimal outcome is a *StatusError that matches ErrInfeasible,
// ErrUnbounded, ErrTimeLimit or ErrNumerical with errors.Is. C memory is
// freed before Solve returns; separate models may be solved concurrently.
package lp
