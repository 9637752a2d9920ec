package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/gavelkit/gavel/estimate"
	"github.com/gavelkit/gavel/table"
)

// uncTally counts, over seeds, what the estimate's uncertainties promised and what the truth
// showed.
type uncTally struct {
	// entries and inside count estimated entries scored and those inside their 80% interval,
	// per group by the entry's two jobs' fewer known entries on the worker type (see knownGroup)
	entries, inside [4]int
	above, below    int     // truths outside the interval, above and below it
	logWidth        float64 // sum of log(high/low)
	// per range of PackingWrong (wrongBins): pairs, pairs whose decision was wrong, and the sum
	// of the probabilities said
	pairs, wrong []int
	said         []float64
}

// wrongBins are the ranges of estimate.Uncertainty.PackingWrong the table groups pairs by.
func wrongBins() []float64 { return []float64{0, 0.05, 0.15, 0.3, 0.5, 1} }

// knownGroups names the groups of uncTally.entries.
func knownGroups() [4]string { return [4]string{"0", "1-2", "3-5", "6+"} }

// knownGroup is the group of an entry whose jobs' fewer known entries on the worker type is c.
func knownGroup(c int) int {
	switch {
	case c == 0:
		return 0
	case c <= 2:
		return 1
	case c <= 5:
		return 2
	}
	return 3
}

// uncertaintyTable prints, per fraction, how often the estimate's 80% intervals held the true
// normalized rate (entries scored as MAPE scores them: true rate above 0.05, feasible in truth
// and estimate, not both jobs references, unmeasured), in all and by how much is known of the
// entry's jobs, their mean width, and per range of PackingWrong the pairs' mean predicted and
// observed rate of wrong decisions (pairs predicted feasible; one infeasible in truth is wrong
// when packed). Random reveals, Gavel's protocol.
func uncertaintyTable(fracs, seedList string, refs int) error {
	ps, seeds, truth, err := setUp(fracs, seedList, refs, "; random reveals")
	if err != nil {
		return err
	}
	bins := wrongBins()
	for _, p := range ps {
		t0 := time.Now()
		tl := uncTally{pairs: make([]int, len(bins)-1), wrong: make([]int, len(bins)-1), said: make([]float64, len(bins)-1)}
		for _, seed := range seeds {
			if err := tl.add(truth, refs, p, seed); err != nil {
				return fmt.Errorf("P %v, seed %d: %w", p, seed, err)
			}
		}
		tl.print(p)
		fmt.Fprintf(os.Stderr, "  (P=%.2f: %.1fs)\n", p, time.Since(t0).Seconds())
	}
	return nil
}

func (tl *uncTally) print(p float64) {
	n, in := 0, 0
	for g := range tl.entries {
		n += tl.entries[g]
		in += tl.inside[g]
	}
	fmt.Printf("P %.2f: %d entries, %.1f%% inside their 80%% intervals (outside: %d above, %d below), mean width x%.2f (high/low)\n",
		p, n, 100*float64(in)/float64(n), tl.above, tl.below, math.Exp(tl.logWidth/float64(n)))
	fmt.Print("  inside, by the fewer known entries of the entry's jobs on the worker type:")
	for g, name := range knownGroups() {
		if tl.entries[g] > 0 {
			fmt.Printf(" %s: %.0f%% (%d);", name, 100*float64(tl.inside[g])/float64(tl.entries[g]), tl.entries[g])
		}
	}
	fmt.Println()
	fmt.Print("  packing_wrong range: pairs, said -> found wrong:")
	bins := wrongBins()
	for b := range tl.pairs {
		if tl.pairs[b] > 0 {
			fmt.Printf(" [%.2f,%.2f): %d, %.1f%% -> %.1f%%;", bins[b], bins[b+1], tl.pairs[b],
				100*tl.said[b]/float64(tl.pairs[b]), 100*float64(tl.wrong[b])/float64(tl.pairs[b]))
		}
	}
	fmt.Println()
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
	known := knownCounts(d)
	for w := range d.Workers {
		for i := range d.Jobs {
			for k := i; k < len(d.Jobs); k++ {
				if isRef[i] && isRef[k] || d.State[w][i][k] != table.Missing || d.State[w][k][i] != table.Missing ||
					truth.State[w][i][k] == table.Missing || r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
					continue
				}
				uik, uki := unc(w, i, k)
				packed := r.Norm[w][i][k]+r.Norm[w][k][i] > 1
				if truth.State[w][i][k] == table.Infeasible {
					tl.pair(uik.PackingWrong, packed)
					continue
				}
				g := knownGroup(min(known[w][i], known[w][k]))
				tl.entry(truth.Norm[w][i][k], uik, g)
				if i != k {
					tl.entry(truth.Norm[w][k][i], uki, g)
				}
				tl.pair(uik.PackingWrong, (truth.Norm[w][i][k]+truth.Norm[w][k][i] > 1) != packed)
			}
		}
	}
	return nil
}

// knownCounts is, per worker type and job, how many of its entries d knows.
func knownCounts(d *estimate.Data) [][]int {
	out := make([][]int, len(d.Workers))
	for w := range out {
		out[w] = make([]int, len(d.Jobs))
		for i := range d.Jobs {
			for k := range d.Jobs {
				if d.State[w][i][k] != table.Missing {
					out[w][i]++
				}
			}
		}
	}
	return out
}

func (tl *uncTally) entry(t float64, u estimate.Uncertainty, g int) {
	if t <= 0.05 {
		return
	}
	tl.entries[g]++
	switch {
	case t > u.NormalizedHigh:
		tl.above++
	case t < u.NormalizedLow:
		tl.below++
	default:
		tl.inside[g]++
	}
	tl.logWidth += math.Log(u.NormalizedHigh / u.NormalizedLow)
}

func (tl *uncTally) pair(p float64, wrong bool) {
	bins := wrongBins()
	for b := range tl.pairs {
		if p >= bins[b] && (p < bins[b+1] || b == len(tl.pairs)-1) {
			tl.pairs[b]++
			tl.said[b] += p
			if wrong {
				tl.wrong[b]++
			}
			return
		}
	}
}
