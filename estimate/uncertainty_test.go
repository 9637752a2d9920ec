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

// The intervals and packing probabilities, checked against the truth they did not see: on two
// hold-outs of Gavel's table (seeds 0 and 1, not those the constants were chosen on), about
// four in five unmeasured entries' true normalized rates lie inside their intervals, and pairs
// given a high probability of a wrong packing decision are wrong far more often than those
// given a low one, about as often as said (and as many in all as expected).
func TestUncertaintiesHoldTheTruth(t *testing.T) {
	truth := gavelBlock(t)
	inside, entries := 0, 0
	var lowPairs, lowWrong, highPairs, highWrong int
	highSaid, allSaid, allWrong := 0.0, 0.0, 0
	for _, seed := range []uint64{0, 1} {
		h, err := Protocol(truth, 16, 0.2, seed)
		if err != nil {
			t.Fatal(err)
		}
		d := h.Partial
		r, err := Pairwise{Seed: seed, Bootstrap: 8, Calibrate: 5}.Estimate(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		unc, err := Uncertainties(d, r)
		if err != nil {
			t.Fatal(err)
		}
		isRef := make([]bool, len(d.Jobs))
		for _, i := range h.References {
			isRef[i] = true
		}
		for w := range d.Workers {
			for i := range d.Jobs {
				for k := i; k < len(d.Jobs); k++ {
					if isRef[i] && isRef[k] || d.State[w][i][k] != table.Missing || truth.State[w][i][k] != table.Measured ||
						truth.State[w][k][i] != table.Measured || r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
						continue
					}
					uik, uki := unc(w, i, k)
					for _, x := range []struct {
						t float64
						u Uncertainty
					}{{truth.Norm[w][i][k], uik}, {truth.Norm[w][k][i], uki}} {
						if x.t > mapeFloor {
							entries++
							if x.t >= x.u.NormalizedLow && x.t <= x.u.NormalizedHigh {
								inside++
							}
						}
					}
					wrong := (truth.Norm[w][i][k]+truth.Norm[w][k][i] > 1) != (r.Norm[w][i][k]+r.Norm[w][k][i] > 1)
					allSaid += uik.PackingWrong
					if wrong {
						allWrong++
					}
					switch p := uik.PackingWrong; {
					case p < 0.05:
						lowPairs++
						if wrong {
							lowWrong++
						}
					case p >= 0.3:
						highPairs++
						highSaid += p
						if wrong {
							highWrong++
						}
					}
				}
			}
		}
	}
	if cov := float64(inside) / float64(entries); cov < 0.72 || cov > 0.88 {
		t.Errorf("%d of %d true rates (%.1f%%) inside their 80%% intervals; want 72-88%%", inside, entries, 100*cov)
	}
	low, high := float64(lowWrong)/float64(lowPairs), float64(highWrong)/float64(highPairs)
	if high < 10*low || high < 0.25 || high > 0.55 {
		t.Errorf("packing decisions wrong: %d of %d pairs said below 0.05 (%.3f), %d of %d said 0.3 or more (%.3f, said %.3f); want the second 10x the first and about as said",
			lowWrong, lowPairs, low, highWrong, highPairs, high, highSaid/float64(highPairs))
	}
	if ratio := allSaid / float64(allWrong); ratio < 0.85 || ratio > 1.18 {
		t.Errorf("%.1f wrong packing decisions expected, %d found; want within 15%%", allSaid, allWrong)
	}
	t.Logf("coverage %d/%d; wrong %d/%d low, %d/%d high; %.1f said, %d wrong", inside, entries, lowWrong, lowPairs, highWrong, highPairs, allSaid, allWrong)
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
			!(u.PackingWrong >= 0 && u.PackingWrong <= 0.5) {
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
}

// partialOf is full's scale-factor-1 job types as Gavel's protocol (R = 16, P = 0.2) leaves
// them on seed: every pair it does not reveal deleted.
func partialOf(t *testing.T, full *table.Table, seed uint64) *table.Table {
	t.Helper()
	jobs := full.JobTypesWithScaleFactor(1)
	d, err := FromTable(full, jobs, full.WorkerTypes())
	if err != nil {
		t.Fatal(err)
	}
	h, err := Protocol(d, 16, 0.2, seed)
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
