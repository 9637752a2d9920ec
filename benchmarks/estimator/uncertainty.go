package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/gavelkit/gavel/estimate"
	"github.com/gavelkit/gavel/table"
)

// wrongBins are the ranges of estimate.Uncertainty.PackingWrong the calibration table groups
// pairs by.
var wrongBins = []float64{0, 0.05, 0.15, 0.3, 0.5}

// uncTally counts, over seeds, what the estimate's uncertainties promised and what the truth
// showed.
type uncTally struct {
	entries, inside int     // estimated entries scored, and those inside their 80% interval
	logWidth        float64 // sum of log(high/low)
	pairs, wrong    []int   // per wrongBins range: pairs, and those whose decision was wrong
	predicted       []float64
}

// uncertaintyTable prints, per fraction, how often the estimate's 80% intervals held the true
// normalized rate (entries scored as MAPE scores them: true rate above 0.05, feasible in truth
// and estimate, not both jobs references, unmeasured), their median width, and per range of
// PackingWrong the pairs' mean predicted and observed rate of wrong decisions (random reveals,
// Gavel's protocol).
func uncertaintyTable(fracs, seedList string, refs int) error {
	ps, seeds, err := parseLists(fracs, seedList)
	if err != nil {
		return err
	}
	truth, err := gavelTruth()
	if err != nil {
		return err
	}
	fmt.Printf("Gavel simulation table, scale factor 1: %d job types on %s; %d references; seeds %s; random reveals\n",
		len(truth.Jobs), strings.Join(truth.Workers, ","), refs, seedList)
	fmt.Printf("%-6s %-9s %-9s %-14s %s\n", "P", "entries", "inside %", "mean width", "packing_wrong range: pairs, predicted -> observed wrong %")
	for _, p := range ps {
		t0 := time.Now()
		tl := uncTally{pairs: make([]int, len(wrongBins)-1), wrong: make([]int, len(wrongBins)-1), predicted: make([]float64, len(wrongBins)-1)}
		for _, seed := range seeds {
			if err := tl.add(truth, refs, p, seed); err != nil {
				return err
			}
		}
		fmt.Printf("%-6.2f %-9d %-9.1f x%-13.2f", p, tl.entries, 100*float64(tl.inside)/float64(tl.entries), math.Exp(tl.logWidth/float64(tl.entries)))
		for b := range tl.pairs {
			if tl.pairs[b] > 0 {
				fmt.Printf(" [%.2f,%.2f): %d, %.1f -> %.1f;", wrongBins[b], wrongBins[b+1], tl.pairs[b],
					100*tl.predicted[b]/float64(tl.pairs[b]), 100*float64(tl.wrong[b])/float64(tl.pairs[b]))
			}
		}
		fmt.Println()
		fmt.Fprintf(os.Stderr, "  (P=%.2f: %.1fs)\n", p, time.Since(t0).Seconds())
	}
	fmt.Println("mean width: the geometric mean of high/low")
	return nil
}

// add scores one hold-out draw.
func (tl *uncTally) add(truth *estimate.Data, refs int, p float64, seed uint64) error {
	h, err := estimate.Protocol(truth, refs, p, seed)
	if err != nil {
		return err
	}
	d := h.Partial
	r, err := estimate.Pairwise{Seed: seed, Bootstrap: 8, Calibrate: 5}.Estimate(context.Background(), d)
	if err != nil {
		return err
	}
	unc, err := estimate.Uncertainties(d, r)
	if err != nil {
		return err
	}
	isRef := make([]bool, len(d.Jobs))
	for _, i := range h.References {
		isRef[i] = true
	}
	for w := range d.Workers {
		for i := range d.Jobs {
			for k := i; k < len(d.Jobs); k++ {
				if isRef[i] && isRef[k] || d.State[w][i][k] != table.Missing || d.State[w][k][i] != table.Missing ||
					truth.State[w][i][k] != table.Measured || truth.State[w][k][i] != table.Measured ||
					r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
					continue
				}
				uik, uki := unc(w, i, k)
				tl.entry(truth.Norm[w][i][k], uik)
				if i != k {
					tl.entry(truth.Norm[w][k][i], uki)
				}
				wrong := (truth.Norm[w][i][k]+truth.Norm[w][k][i] > 1) != (r.Norm[w][i][k]+r.Norm[w][k][i] > 1)
				tl.pair(uik.PackingWrong, wrong)
			}
		}
	}
	return nil
}

func (tl *uncTally) entry(t float64, u estimate.Uncertainty) {
	if t <= 0.05 {
		return
	}
	tl.entries++
	if t >= u.NormalizedLow && t <= u.NormalizedHigh {
		tl.inside++
	}
	tl.logWidth += math.Log(u.NormalizedHigh / u.NormalizedLow)
}

func (tl *uncTally) pair(p float64, wrong bool) {
	for b := range tl.pairs {
		if p >= wrongBins[b] && (p < wrongBins[b+1] || b == len(tl.pairs)-1) {
			tl.pairs[b]++
			tl.predicted[b] += p
			if wrong {
				tl.wrong[b]++
			}
			return
		}
	}
}
