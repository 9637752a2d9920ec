package estimate

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// uncStats is what uncertainties promised against what the truth showed on hold-outs of Gavel's
// table: entries scored as MAPE scores them, by the fewer known entries of their jobs on the
// worker type (0-2, 3 or more); pairs predicted feasible (one infeasible in truth is wrong when
// packed).
type uncStats struct {
	entries, inside      [2]int
	lowPairs, lowWrong   int // pairs said below 0.05
	highPairs, highWrong int // pairs said 0.3 or more
	allSaid              float64
	allWrong, pairs      int
}

func uncertaintyStats(t *testing.T, p float64, seeds ...uint64) uncStats {
	t.Helper()
	truth := gavelBlock(t)
	var st uncStats
	for _, seed := range seeds {
		h, err := Protocol(truth, 16, p, seed)
		if err != nil {
			t.Fatal(err)
		}
		d := h.Partial
		r, unc := calibratedUncertainties(t, d, seed)
		count, _ := knownCounts(d)
		isRef := make([]bool, len(d.Jobs))
		for _, i := range h.References {
			isRef[i] = true
		}
		for w := range d.Workers {
			for i := range d.Jobs {
				for k := i; k < len(d.Jobs); k++ {
					if isRef[i] && isRef[k] || d.State[w][i][k] != table.Missing || truth.State[w][i][k] == table.Missing ||
						r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
						continue
					}
					uik, uki := unc(w, i, k)
					packed := r.Norm[w][i][k]+r.Norm[w][k][i] > 1
					wrong := packed
					if truth.State[w][i][k] == table.Measured {
						wrong = (truth.Norm[w][i][k]+truth.Norm[w][k][i] > 1) != packed
						g := 0
						if min(count[w][i], count[w][k]) >= 3 {
							g = 1
						}
						for _, x := range []struct {
							t float64
							u Uncertainty
						}{{truth.Norm[w][i][k], uik}, {truth.Norm[w][k][i], uki}}[:min(2, 1+k-i)] { // a self-pair is one entry
							if x.t > mapeFloor {
								st.entries[g]++
								if x.t >= x.u.NormalizedLow && x.t <= x.u.NormalizedHigh {
									st.inside[g]++
								}
							}
						}
					}
					st.pairs++
					st.allSaid += uik.PackingWrong
					if wrong {
						st.allWrong++
					}
					switch p := uik.PackingWrong; {
					case p < 0.05:
						st.lowPairs++
						if wrong {
							st.lowWrong++
						}
					case p >= 0.3:
						st.highPairs++
						if wrong {
							st.highWrong++
						}
					}
				}
			}
		}
	}
	return st
}

func (st uncStats) coverage(g int) float64 { return float64(st.inside[g]) / float64(st.entries[g]) }

// The intervals and packing probabilities, checked against the truth they did not see: on two
// hold-outs of Gavel's table (seeds 0 and 1, not those the constants were chosen on), about
// four in five unmeasured entries' true normalized rates lie inside their intervals, both for
// entries of jobs little known on the worker type and for the others, and pairs given a high
// probability of a wrong packing decision are wrong far more often than those given a low
// one, about as many in all as said. With only a few pairs measured (P = 0.02, where the
// cross-validation has little to go on and the prior counts) the intervals still hold most.
func TestUncertaintiesHoldTheTruth(t *testing.T) {
	st := uncertaintyStats(t, 0.2, 0, 1)
	for g, name := range []string{"jobs with at most 2 known entries", "the others"} {
		if cov := st.coverage(g); cov < 0.70 || cov > 0.82 {
			t.Errorf("%s: %d of %d true rates (%.1f%%) inside their 80%% intervals; want 70-82%%", name, st.inside[g], st.entries[g], 100*cov)
		}
	}
	low, high := float64(st.lowWrong)/float64(st.lowPairs), float64(st.highWrong)/float64(st.highPairs)
	if high < 10*low || high < 0.25 || high > 0.55 {
		t.Errorf("packing decisions wrong: %d of %d pairs said below 0.05 (%.3f), %d of %d said 0.3 or more (%.3f); want the second 10x the first, 0.25-0.55",
			st.lowWrong, st.lowPairs, low, st.highWrong, st.highPairs, high)
	}
	if ratio := st.allSaid / float64(st.allWrong); ratio < 0.9 || ratio > 1.1 {
		t.Errorf("%.1f wrong packing decisions expected, %d found; want within 10%%", st.allSaid, st.allWrong)
	}
	t.Logf("P 0.2: coverage %v/%v; wrong %d/%d low, %d/%d high; %.1f said, %d wrong of %d", st.inside, st.entries,
		st.lowWrong, st.lowPairs, st.highWrong, st.highPairs, st.allSaid, st.allWrong, st.pairs)
	few := uncertaintyStats(t, 0.02, 0, 1)
	if cov := few.coverage(0); cov < 0.68 || cov > 0.82 {
		t.Errorf("P 0.02: %d of %d true rates (%.1f%%) inside their 80%% intervals; want 68-82%%", few.inside[0], few.entries[0], 100*cov)
	}
	t.Logf("P 0.02: coverage %v/%v", few.inside, few.entries)
	// References only: the sum error is its prior, far below the truth; the entries' own
	// uncertainty keeps the packing probabilities from saying half as many wrong as there are
	// (they still say fewer: 0.73 of those found on these seeds, 0.88 on seeds 10-15).
	none := uncertaintyStats(t, 0.001, 0, 1)
	if ratio := none.allSaid / float64(none.allWrong); ratio < 0.65 || ratio > 1.35 {
		t.Errorf("references only: %.1f wrong packing decisions expected, %d found; want within 35%%", none.allSaid, none.allWrong)
	}
	t.Logf("P 0.001: %.1f said, %d wrong of %d", none.allSaid, none.allWrong, none.pairs)
}

// Table with Options.Uncertainty fills the same table and reports the same estimates, each
// entry predicted feasible with an interval around its estimate (in rates, the interval times
// the job's isolated rate) and one packing probability per pair; without it, and on entries
// predicted infeasible, there is none.
func TestTableUncertainty(t *testing.T) {
	full := gavel3()
	partial := partialOf(t, full, 3)
	ctx := context.Background()
	plain, repPlain, err := Table(ctx, partial, Options{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	withU, rep, err := Table(ctx, partial, Options{Seed: 3, Uncertainty: true})
	if err != nil {
		t.Fatal(err)
	}
	if !tablesEqual(plain, withU) {
		t.Fatal("the table filled with uncertainty differs from the one without")
	}
	if len(rep.Entries) != len(repPlain.Entries) || rep.Estimated == 0 {
		t.Fatalf("%d entries with uncertainty, %d without", len(rep.Entries), len(repPlain.Entries))
	}
	type key struct{ w, a, b string }
	wrong := map[key]float64{}
	for x, e := range rep.Entries {
		p := repPlain.Entries[x]
		if p.Uncertainty != nil {
			t.Fatalf("entry %+v has an uncertainty without Options.Uncertainty", p)
		}
		if p.Normalized != e.Normalized || p.Rate != e.Rate || p.Infeasible != e.Infeasible {
			t.Fatalf("entry %d: %+v with uncertainty, %+v without", x, e, p)
		}
		u := e.Uncertainty
		if e.Infeasible {
			if u != nil {
				t.Errorf("infeasible entry %+v has an uncertainty %+v", e, *u)
			}
			continue
		}
		if u == nil {
			t.Fatalf("feasible entry %+v has no uncertainty", e)
		}
		iso := e.Rate / e.Normalized
		if !(u.NormalizedLow < e.Normalized && e.Normalized < u.NormalizedHigh) ||
			math.Abs(u.RateLow-u.NormalizedLow*iso) > 1e-9*iso || math.Abs(u.RateHigh-u.NormalizedHigh*iso) > 1e-9*iso ||
			!(u.PackingWrong >= 0 && u.PackingWrong < 1) {
			t.Errorf("entry %+v: uncertainty %+v", e, *u)
		}
		other := key{e.WorkerType, e.Partner, e.Job}
		if pw, ok := wrong[other]; ok && pw != u.PackingWrong {
			t.Errorf("pair %v: packing probabilities %v and %v", other, pw, u.PackingWrong)
		}
		wrong[key{e.WorkerType, e.Job, e.Partner}] = u.PackingWrong
	}
	js, err := json.Marshal(repPlain.Entries[0])
	if err != nil || strings.Contains(string(js), "uncertainty") {
		t.Errorf("entry without uncertainty: %s, %v", js, err)
	}
}

// A block whose every pair is predicted infeasible has no entry to give an interval to: no note
// says it has none.
func TestTableUncertaintyNoNoteWithoutFeasiblePairs(t *testing.T) {
	_, rep, err := Table(context.Background(), withInfeasibleBlock(t), Options{Seed: 1, Uncertainty: true})
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(rep.Notes, "\n"); strings.Contains(notes, "no uncertainty") {
		t.Errorf("notes:\n%s", notes)
	}
}

// A method without calibrated errors gets a note, not an interval from nothing.
func TestTableUncertaintyNeedsCalibration(t *testing.T) {
	partial := partialOf(t, gavel3(), 3)
	_, rep, err := Table(context.Background(), partial, Options{Method: PartnerMean{}, Uncertainty: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "no uncertainty") {
		t.Errorf("notes %q: want one saying there is no uncertainty", rep.Notes)
	}
	for _, e := range rep.Entries {
		if e.Uncertainty != nil {
			t.Fatalf("entry %+v has an uncertainty", e)
		}
	}
	if _, err := Uncertainties(NewData(nil, nil), &Result{}); err == nil {
		t.Error("Uncertainties of an uncalibrated estimate: no error")
	}
	// An estimate of another block (here of more job types) gave NaN rates or panicked.
	full := gavelBlock(t)
	r, err := Pairwise{Seed: 1, Calibrate: 3}.Estimate(context.Background(), full)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Uncertainties(NewData(full.Workers[:1], full.Jobs[:3]), r); err == nil || !strings.Contains(err.Error(), "not of this block") {
		t.Errorf("Uncertainties of another block's estimate: err %v", err)
	}
}

// partialOf is full's scale-factor-1 job types as Gavel's protocol (R = 16, P = 0.2) leaves
// them on seed: every pair it does not reveal deleted.
func partialOf(t *testing.T, full *table.Table, seed uint64) *table.Table {
	t.Helper()
	return partialAt(t, full, 0.2, seed)
}

// partialAt is partialOf with P = fraction.
func partialAt(t *testing.T, full *table.Table, fraction float64, seed uint64) *table.Table {
	t.Helper()
	jobs := full.JobTypesWithScaleFactor(1)
	d, err := FromTable(full, jobs, full.WorkerTypes())
	if err != nil {
		t.Fatal(err)
	}
	h, err := Protocol(d, 16, fraction, seed)
	if err != nil {
		t.Fatal(err)
	}
	out := full.Select(jobs, full.WorkerTypes())
	for w, wt := range d.Workers {
		for i := range jobs {
			for k := i; k < len(jobs); k++ {
				if h.Partial.State[w][i][k] == table.Missing {
					out.DeletePair(wt, jobs[i], jobs[k])
				}
			}
		}
	}
	return out
}

// tablesEqual compares two tables as written.
func tablesEqual(a, b *table.Table) bool {
	var x, y bytes.Buffer
	return a.Write(&x) == nil && b.Write(&y) == nil && bytes.Equal(x.Bytes(), y.Bytes())
}

// A pair predicted feasible but with infeasibility score s is packed wrongly at least with
// probability s (it may not share at all), and one left unpacked is wrong only if it can share.
func TestPackingWrongCountsFeasibility(t *testing.T) {
	h, r := onTheLine(t)
	r.SumError = []float64{0.05, 0.05, 0.05}
	r.EntryError = []float64{0.1, 0.1, 0.1}
	i, k := 20, 21
	for w, sum := range []float64{1.6, 0.4, 1.6} {
		r.Norm[w][i][k], r.Norm[w][k][i] = sum/2, sum/2 // far from 1: flip about 0
		r.InfeasibleScore[w][i][k], r.InfeasibleScore[w][k][i] = 0.3, 0.1
	}
	r.InfeasibleScore[2][i][k], r.InfeasibleScore[2][k][i] = 0, 0
	unc, err := Uncertainties(h.Partial, r)
	if err != nil {
		t.Fatal(err)
	}
	for w, want := range []float64{0.3, 0, 0} {
		if u, _ := unc(w, i, k); math.Abs(u.PackingWrong-want) > 1e-6 {
			t.Errorf("worker %d: packing wrong %v, want %v", w, u.PackingWrong, want)
		}
	}
}

// With nothing measured outside the references the uncertainties rest on priors: a note says so.
func TestTableUncertaintyNotesPriors(t *testing.T) {
	partial := partialAt(t, gavel3(), 0.001, 0)
	for _, withU := range []bool{false, true} {
		_, rep, err := Table(context.Background(), partial, Options{Uncertainty: withU})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(strings.Join(rep.Notes, "\n"), "rest mostly on priors"); got != withU {
			t.Errorf("uncertainty %v: note on priors %v; notes %q", withU, got, rep.Notes)
		}
	}
}

// A worker type measured in its reference block only (a new GPU type after `run
// --reference-block`): its pairs are widened by their scarcity against what the other types
// measured, so its intervals still hold most true rates (39-58% on seeds 0-2 when they were
// not), and Table notes that its uncertainties rest on priors.
func TestUncertaintyWorkerTypeWithReferencesOnly(t *testing.T) {
	truth := gavelBlock(t)
	const w = 2 // v100
	in, n := 0, 0
	for _, seed := range []uint64{0, 1} {
		h, err := Protocol(truth, 16, 0.2, seed)
		if err != nil {
			t.Fatal(err)
		}
		d := h.Partial
		isRef := make([]bool, len(d.Jobs))
		for _, i := range h.References {
			isRef[i] = true
		}
		for i := range d.Jobs {
			for k := range d.Jobs {
				if !(isRef[i] && isRef[k]) {
					d.State[w][i][k] = table.Missing
				}
			}
		}
		r, unc := calibratedUncertainties(t, d, seed)
		for i := range d.Jobs {
			for k := range d.Jobs {
				if isRef[i] && isRef[k] || truth.State[w][i][k] != table.Measured || r.Infeasible[w][i][k] || r.Infeasible[w][k][i] || truth.Norm[w][i][k] <= mapeFloor {
					continue
				}
				u, _ := unc(w, i, k)
				n++
				if tv := truth.Norm[w][i][k]; tv >= u.NormalizedLow && tv <= u.NormalizedHigh {
					in++
				}
			}
		}
		if seed == 0 {
			partial := partialOf(t, gavel3(), 0)
			jobs := partial.JobTypesWithScaleFactor(1)
			for i := range jobs {
				for k := range jobs {
					if !(isRef[i] && isRef[k]) {
						partial.DeletePair("v100", jobs[i], jobs[k])
					}
				}
			}
			_, rep, err := Table(context.Background(), partial, Options{Uncertainty: true})
			if err != nil {
				t.Fatal(err)
			}
			if notes := strings.Join(rep.Notes, "\n"); !strings.Contains(notes, "worker type v100: fewer than 5 pairs measured outside the references") {
				t.Errorf("no note on v100's priors:\n%s", notes)
			}
		}
	}
	if cov := float64(in) / float64(n); cov < 0.6 {
		t.Errorf("v100, measured in its reference block only: %d of %d true rates (%.0f%%) inside the 80%% intervals; want 60%% or more", in, n, 100*cov)
	}
}

// calibratedUncertainties is the calibrated estimate of d (as Options.Uncertainty fits it) and
// its uncertainties.
func calibratedUncertainties(t *testing.T, d *Data, seed uint64) (*Result, func(w, i, k int) (Uncertainty, Uncertainty)) {
	t.Helper()
	r, err := Pairwise{Seed: seed, Bootstrap: 8, Calibrate: 5}.Estimate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	unc, err := Uncertainties(d, r)
	if err != nil {
		t.Fatal(err)
	}
	return r, unc
}
