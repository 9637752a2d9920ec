package table

import (
	"fmt"
	"iter"
	"maps"
	"math"
)

func mapsKeys[K comparable, V any](m map[K]V) iter.Seq[K] { return maps.Keys(m) }

// Validate checks the entries of t against each other and returns every
// problem found: rates that are negative or not finite, pairs of job types
// with different scale factors (Gavel pairs only equal-sized jobs), and, as
// warnings, pair rates above the job's isolated rate.
func (t *Table) Validate() Problems {
	var ps Problems
	for _, w := range t.WorkerTypes() {
		wt := t.workers[w]
		for _, j := range t.JobTypes() {
			if r, ok := wt.isolated[j]; ok {
				if err := checkRate(r); err != nil {
					ps = append(ps, &Problem{Worker: w, Job: j.Key(), Partner: isolatedKey, Err: err})
				}
			}
			for _, k := range t.Partners(w, j) {
				if p := t.checkPair(w, j, k); p != nil {
					ps = append(ps, p)
				}
			}
		}
	}
	return ps
}

func (t *Table) checkPair(w string, j, k JobType) *Problem {
	r := t.workers[w].pairs[j][k]
	p := &Problem{Worker: w, Job: j.Key(), Partner: k.Key()}
	for _, v := range r {
		if err := checkRate(v); err != nil {
			p.Err = err
			return p
		}
	}
	if j.ScaleFactor != k.ScaleFactor {
		p.Err = fmt.Errorf("%w: %d vs %d", ErrScaleFactorMismatch, j.ScaleFactor, k.ScaleFactor)
		return p
	}
	if iso, ok := t.Isolated(w, j); ok && r[0] > iso*(1+symmetryTolerance) {
		p.Warning = true
		p.Err = fmt.Errorf("%w: %v > %v", ErrAboveIsolated, r[0], iso)
		return p
	}
	return nil
}

func checkRate(v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return ErrNotFinite
	case v < 0:
		return fmt.Errorf("%w: %v", ErrNegativeRate, v)
	}
	return nil
}
