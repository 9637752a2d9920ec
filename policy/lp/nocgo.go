//go:build !cgo

package lp

import (
	"context"
	"errors"
)

// ErrUnavailable is returned when the package is built without cgo.
var ErrUnavailable = errors.New("lp: built without cgo; COIN-OR CLP/CBC unavailable")

// COIN is unavailable without cgo.
type COIN struct{}

// Default returns the solver used by the policies.
func Default() Solver { return COIN{} }

// Solve always fails without cgo.
func (COIN) Solve(ctx context.Context, m *Model, opt Options) (*Result, error) {
	return nil, ErrUnavailable
}
