package completion

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// noPanic runs f and turns a panic into an error, so a test can report it as a failure of the
// case instead of dying.
func noPanic(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// Settings that Fit cannot use used to panic (a negative rank sizes a slice) or return a model
// it never fitted (a negative iteration cap gave zero iterations and a nil error); each must be
// an error wrapping ErrBadSettings that names the field.
func TestFitRejectsBadSettings(t *testing.T) {
	a, mask := planted(6, 5, 2, 0.8, 1)
	for _, tc := range []struct {
		s     Settings
		field string
	}{
		{Settings{Rank: -1}, "Rank -1"},
		{Settings{MaxIter: -5}, "MaxIter -5"},
		{Settings{Lambda: math.NaN()}, "Lambda"},
		{Settings{InitScale: math.Inf(1)}, "InitScale"},
		{Settings{Rank: -3, MaxIter: -1}, "Rank -3 is negative (0 selects 3); MaxIter -1"},
	} {
		err := noPanic(func() error {
			_, err := Fit(context.Background(), a, mask, tc.s)
			return err
		})
		if !errors.Is(err, ErrBadSettings) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Fit(%+v): err %v, want ErrBadSettings naming %q", tc.s, err, tc.field)
		}
	}
}

func TestCrossValidateRejectsBadGrid(t *testing.T) {
	a, mask := planted(6, 5, 2, 0.8, 1)
	for _, tc := range []struct {
		base  Settings
		g     CVGrid
		field string
	}{
		{Settings{}, CVGrid{Ranks: []int{-2}}, "rank -2"},
		{Settings{}, CVGrid{Ranks: []int{1, 0}}, "rank 0"},
		{Settings{}, CVGrid{Lambdas: []float64{math.NaN()}}, "lambda NaN"},
		{Settings{MaxIter: -1}, CVGrid{}, "MaxIter -1"},
		// These used to be errors that did not wrap ErrBadSettings.
		{Settings{}, CVGrid{Folds: 1}, "Folds 1: cross-validation needs at least 2 folds"},
		{Settings{}, CVGrid{Folds: -3}, "Folds -3: cross-validation needs"},
		{Settings{}, CVGrid{Ranks: []int{}}, "Ranks is empty"},
		{Settings{}, CVGrid{Lambdas: []float64{}}, "Lambdas is empty"},
		{Settings{}, CVGrid{Folds: 1, Ranks: []int{0}}, "at least 2 folds (0 selects 5); rank 0 is below 1"},
	} {
		err := noPanic(func() error {
			_, _, err := CrossValidate(context.Background(), a, mask, tc.base, tc.g)
			return err
		})
		if !errors.Is(err, ErrBadSettings) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("CrossValidate(%+v, %+v): err %v, want ErrBadSettings naming %q", tc.base, tc.g, err, tc.field)
		}
	}
}

// With every observed cell infeasible there is no value to fit but there is infeasibility to
// predict: the indicator model sees only ones, so its mean is 1, its biases and factors have
// nothing to explain, and every unknown cell scores about 1, infeasible. There is no value
// model, so Values is NaN in every cell.
func TestCompleteAllObservedInfeasible(t *testing.T) {
	a := mat.NewDense(3, 4, nil)
	cells := [][]Cell{
		{Infeasible, Unknown, Infeasible, Unknown},
		{Unknown, Infeasible, Unknown, Unknown},
		{Infeasible, Unknown, Unknown, Infeasible},
	}
	res, err := Complete(context.Background(), a, cells, Settings{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Model != nil {
		t.Errorf("value model %+v, want nil: nothing observed to fit it to", res.Model)
	}
	unknown := 0
	for i := range cells {
		for j, st := range cells[i] {
			if st == Unknown {
				unknown++
			}
			if s := res.InfeasibleScore.At(i, j); math.Abs(s-1) > 0.05 {
				t.Errorf("cell (%d, %d): infeasible score %.3f, want about 1", i, j, s)
			}
			if !res.Infeasible[i][j] {
				t.Errorf("cell (%d, %d) %v: not infeasible", i, j, st)
			}
			if v := res.Values.At(i, j); !math.IsNaN(v) {
				t.Errorf("cell (%d, %d): value %v, want NaN (no value model)", i, j, v)
			}
		}
	}
	if len(res.PredictedInfeasible) != unknown {
		t.Errorf("%d cells predicted infeasible, want the %d unknown ones", len(res.PredictedInfeasible), unknown)
	}
}

// Nothing observed at all is still ErrNoObservations.
func TestCompleteNothingObserved(t *testing.T) {
	cells := [][]Cell{{Unknown, Unknown}, {Unknown, Unknown}}
	if _, err := Complete(context.Background(), mat.NewDense(2, 2, nil), cells, Settings{}); !errors.Is(err, ErrNoObservations) {
		t.Errorf("err %v, want ErrNoObservations", err)
	}
}

// FitPairs and FitFootprints took any settings: a negative MaxIter returned the unfitted start
// with a nil error, a NaN penalty NaN predictions (pairs) or an all-zero model marked converged
// (footprints), an infinite one was accepted. Each must be an error wrapping ErrBadSettings that
// names the field, while a finite negative penalty keeps its documented meaning, none.
func TestPairAndFootprintFitsRejectBadSettings(t *testing.T) {
	pobs := randomPairObs(2, 8, 0.5, 1)
	mix := make([][]JobWeight, 8)
	mix[3] = []JobWeight{{Job: 1, Weight: 1}}
	pairs := func(s PairSettings, prior *PairPrior) func() error {
		return func() error {
			_, err := FitPairsWithPrior(context.Background(), pobs, 2, 8, nil, prior, s)
			return err
		}
	}
	fobs := thresholdObs()
	footprints := func(s FootprintSettings) func() error {
		return func() error {
			_, err := FitFootprints(context.Background(), fobs, 2, 8, nil, s)
			return err
		}
	}
	for _, tc := range []struct {
		name  string
		fit   func() error
		field string // "" when the settings are usable
	}{
		{"pairs MaxIter", pairs(PairSettings{MaxIter: -1}, nil), "MaxIter -1 is negative (0 selects 300)"},
		{"pairs LambdaEmbed NaN", pairs(PairSettings{LambdaEmbed: math.NaN()}, nil), "LambdaEmbed NaN"},
		{"pairs LambdaBias +Inf", pairs(PairSettings{LambdaBias: math.Inf(1)}, nil), "LambdaBias +Inf"},
		{"pairs LambdaShare -Inf", pairs(PairSettings{LambdaShare: math.Inf(-1)}, nil), "LambdaShare -Inf"},
		{"pairs LambdaGlobal NaN", pairs(PairSettings{LambdaGlobal: math.NaN()}, nil), "LambdaGlobal NaN"},
		{"pairs LambdaWorker NaN", pairs(PairSettings{LambdaWorker: math.NaN()}, nil), "LambdaWorker NaN"},
		{"prior Lambda NaN", pairs(PairSettings{}, &PairPrior{Mix: mix, Lambda: math.NaN()}), "prior Lambda NaN"},
		{"prior Lambda +Inf", pairs(PairSettings{}, &PairPrior{Mix: mix, Lambda: math.Inf(1)}), "prior Lambda +Inf"},
		{"pairs every bad field", pairs(PairSettings{MaxIter: -2, LambdaEmbed: math.NaN()}, nil), "MaxIter -2 is negative (0 selects 300); LambdaEmbed NaN"},
		{"pairs negative penalties", pairs(PairSettings{LambdaBias: -1, LambdaShare: -1, LambdaEmbed: -1, LambdaWorker: -1}, nil), ""},
		{"footprints MaxIter", footprints(FootprintSettings{MaxIter: -1}), "MaxIter -1 is negative (0 selects 100)"},
		{"footprints LambdaSize NaN", footprints(FootprintSettings{LambdaSize: math.NaN()}), "LambdaSize NaN"},
		{"footprints LambdaDev +Inf", footprints(FootprintSettings{LambdaDev: math.Inf(1)}), "LambdaDev +Inf"},
		{"footprints LambdaFeature NaN", footprints(FootprintSettings{LambdaFeature: math.NaN()}), "LambdaFeature NaN"},
		{"footprints LambdaCapacity -Inf", footprints(FootprintSettings{LambdaCapacity: math.Inf(-1)}), "LambdaCapacity -Inf"},
		{"footprints InfeasibleWeight NaN", footprints(FootprintSettings{InfeasibleWeight: math.NaN()}), "InfeasibleWeight NaN"},
		{"footprints negative penalties", footprints(FootprintSettings{LambdaDev: -1, LambdaFeature: -1, InfeasibleWeight: -1}), ""},
	} {
		err := noPanic(tc.fit)
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v, want a fit", tc.name, err)
		case tc.field != "" && (!errors.Is(err, ErrBadSettings) || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%s: err %v, want ErrBadSettings naming %q", tc.name, err, tc.field)
		}
	}
}
