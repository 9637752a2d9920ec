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

type (
	handle     = struct{}
	flagHandle = struct{}
)

// NewSession always fails without cgo.
func NewSession(m *Model) (*Session, error) { return nil, ErrUnavailable }

// NewSessionOn always fails without cgo.
func NewSessionOn(m *Model) (*Session, error) { return nil, ErrUnavailable }

// Solve always fails without cgo.
func (s *Session) Solve(ctx context.Context, opt Options) (*Result, error) {
	return nil, ErrUnavailable
}

// Close does nothing without cgo.
func (s *Session) Close() {}

// sigintHasGoFlags: without cgo no COIN code touches signal handlers.
func sigintHasGoFlags() bool { return true }

// sigintHandler: without cgo there is no C handler to read.
func sigintHandler() uintptr { return 0 }
