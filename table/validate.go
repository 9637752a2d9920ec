package table

import (
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
)

func mapsKeys[K comparable, V any](m map[K]V) iter.Seq[K] { return maps.Keys(m) }

// Validate checks the entries of t against each other and returns every
// problem found: rates that are negative or not finite, pairs of job types
// with different scale factors (Gavel pairs only equal-sized jobs), and, as
// warnings, pair rates above the job's isolated rate and self-pairs (two copies
// of one job type) with two different rates.
func (t *Table) Validate() Problems {
	var ps Problems
	for _, w := range t.WorkerTypes() {
		ps = append(ps, t.validateWorker(w)...)
	}
	return ps
}

// validateWorker checks the entries of worker type w in map order; sortedProblems then puts
// what it found in the order of job types, a job's isolated rate before its partners.
func (t *Table) validateWorker(w string) Problems {
	wt := t.workers[w]
	var found []keyedProblem
	for j, r := range wt.isolated {
		if err := checkRate(r); err != nil {
			found = append(found, keyedProblem{job: j, isolated: true, err: err})
		}
	}
	for j, row := range wt.pairs {
		for k := range row {
			if warning, err := t.checkPair(w, j, k); err != nil {
				found = append(found, keyedProblem{job: j, partner: k, warning: warning, err: err})
			}
		}
	}
	return sortedProblems(w, found)
}

// checkPair returns whether what is wrong with the pair (j, k) on w is a warning, and what it is.
func (t *Table) checkPair(w string, j, k JobType) (warning bool, err error) {
	r := t.workers[w].pairs[j][k]
	for _, v := range r {
		if err := checkRate(v); err != nil {
			return false, err
		}
	}
	if j.ScaleFactor != k.ScaleFactor {
		return false, fmt.Errorf("%w: %d vs %d", ErrScaleFactorMismatch, j.ScaleFactor, k.ScaleFactor)
	}
	if iso, ok := t.Isolated(w, j); ok && r[0] > iso*(1+symmetryTolerance) {
		return true, fmt.Errorf("%w: %v > %v", ErrAboveIsolated, r[0], iso)
	}
	if j == k && !near(r[0], r[1]) {
		// Two copies of one job type are interchangeable: planners give one copy each
		// rate, the estimator reads the first for both.
		return true, fmt.Errorf("%w: [%v, %v]; two copies of one job type have no order, so one rate is expected (Gavel's profiler stores their mean in both slots)", ErrSelfPairUneven, r[0], r[1])
	}
	return false, nil
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

// A keyedProblem is a problem found while ranging over a worker type's maps, with the job
// type and partner it is sorted by; the Problem itself, with its formatted keys, is made
// only for what is found.
type keyedProblem struct {
	job, partner      JobType
	isolated, warning bool // isolated: about the job's isolated rate, not a partner
	err               error
}

// compareEntries orders a worker type's entries as problems and conflicts are listed: by job,
// the job's isolated rate before its pairs, then by partner.
func compareEntries(jobX JobType, isolatedX bool, partnerX JobType, jobY JobType, isolatedY bool, partnerY JobType) int {
	if c := compareJobTypes(jobX, jobY); c != 0 {
		return c
	}
	if isolatedX != isolatedY {
		if isolatedX {
			return -1
		}
		return 1
	}
	return compareJobTypes(partnerX, partnerY)
}

// sortedProblems orders found by job type, then isolated rate first, then partner. Ranging
// over sorted keys instead cost n² log n comparisons for a table of n job types.
func sortedProblems(w string, found []keyedProblem) Problems {
	slices.SortFunc(found, func(x, y keyedProblem) int {
		return compareEntries(x.job, x.isolated, x.partner, y.job, y.isolated, y.partner)
	})
	ps := make(Problems, len(found))
	for i, f := range found {
		partner := isolatedKey
		if !f.isolated {
			partner = f.partner.Key()
		}
		ps[i] = &Problem{Worker: w, Job: f.job.Key(), Partner: partner, Warning: f.warning, Err: f.err}
	}
	return ps
}
