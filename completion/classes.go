package completion

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Cell is the state of one matrix entry in [Complete].
type Cell uint8

// The states of a cell.
const (
	Unknown    Cell = iota // not observed: to be predicted
	Known                  // observed value
	Infeasible             // observed to be infeasible: not a value, its own class
)

// Completion is the result of [Complete].
type Completion struct {
	// Values holds observed values unchanged and predictions for Unknown cells. Cells that are
	// Infeasible, or Unknown and predicted infeasible, hold the value model's prediction anyway
	// (use Infeasible to tell them apart). Without a value model (no Known cell) every cell is
	// NaN.
	Values *mat.Dense
	// Infeasible is true for cells observed infeasible and for Unknown cells predicted infeasible.
	Infeasible [][]bool
	// InfeasibleScore is the feasibility model's estimate (about 0 feasible, 1 infeasible) for
	// every cell; nil when no cell was observed infeasible.
	InfeasibleScore *mat.Dense
	// PredictedInfeasible lists the Unknown cells predicted infeasible, row-major.
	PredictedInfeasible [][2]int
	Model               *Model // the value model, fitted to the Known cells; nil when there are none
}

// Complete fills the Unknown cells of a. The value model is fitted to Known cells only, so an
// infeasible pair is never averaged in as a zero value. If any cell is Infeasible, a second
// model of the same kind is fitted to the 0/1 indicator of infeasibility over Known and
// Infeasible cells, and an Unknown cell whose score reaches 0.5 is predicted infeasible. With
// Infeasible cells but no Known one only that model is fitted (there is no value to learn,
// but which cells are infeasible still is); with neither, the error is [ErrNoObservations].
// Both fits stop once ctx is done (see [Fit]); Complete then returns an error wrapping ctx.Err().
func Complete(ctx context.Context, a *mat.Dense, cells [][]Cell, s Settings) (*Completion, error) {
	r, c := a.Dims()
	mask, ind, indMask, anyKnown, anyInf := classMasks(cells, r, c)
	out := &Completion{Infeasible: make([][]bool, r)}
	switch {
	case anyKnown:
		m, err := Fit(ctx, a, mask, s)
		if err != nil {
			return nil, err
		}
		out.Values, out.Model = m.Dense(), m
	case anyInf:
		out.Values = mat.NewDense(r, c, nil)
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				out.Values.Set(i, j, math.NaN())
			}
		}
	default:
		return nil, ErrNoObservations
	}
	if anyInf {
		im, err := Fit(ctx, ind, indMask, s)
		if err != nil {
			return nil, err
		}
		out.InfeasibleScore = im.Dense()
	}
	out.classify(a, cells)
	return out, nil
}

// classMasks returns the mask of Known cells, the 0/1 infeasibility indicator with its mask
// (Known and Infeasible cells), and whether any cell is Known and any Infeasible. It panics if
// cells is not r×c.
func classMasks(cells [][]Cell, r, c int) (mask, ind, indMask *mat.Dense, anyKnown, anyInf bool) {
	if len(cells) != r {
		panic(fmt.Sprintf("completion: %d rows of cells for a %d×%d matrix", len(cells), r, c))
	}
	mask = mat.NewDense(r, c, nil)
	ind = mat.NewDense(r, c, nil)
	indMask = mat.NewDense(r, c, nil)
	for i := range cells {
		if len(cells[i]) != c {
			panic(fmt.Sprintf("completion: row %d of cells has %d entries, want %d", i, len(cells[i]), c))
		}
		for j, st := range cells[i] {
			switch st {
			case Known:
				mask.Set(i, j, 1)
				indMask.Set(i, j, 1)
				anyKnown = true
			case Infeasible:
				ind.Set(i, j, 1)
				indMask.Set(i, j, 1)
				anyInf = true
			}
		}
	}
	return mask, ind, indMask, anyKnown, anyInf
}

// classify puts the Known values of a back into out.Values and marks the infeasible cells:
// those observed so and the Unknown ones whose score reaches 0.5.
func (out *Completion) classify(a *mat.Dense, cells [][]Cell) {
	_, c := a.Dims()
	for i := range cells {
		out.Infeasible[i] = make([]bool, c)
		for j, st := range cells[i] {
			switch st {
			case Known:
				out.Values.Set(i, j, a.At(i, j))
			case Infeasible:
				out.Infeasible[i][j] = true
			case Unknown:
				if out.InfeasibleScore != nil && out.InfeasibleScore.At(i, j) >= 0.5 {
					out.Infeasible[i][j] = true
					out.PredictedInfeasible = append(out.PredictedInfeasible, [2]int{i, j})
				}
			}
		}
	}
}
