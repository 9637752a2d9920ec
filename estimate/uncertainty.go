package estimate

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gavelkit/gavel/table"
)

// Uncertainty is how far an estimated entry may be off, as far as the table's measurements
// tell: from cross-validation on the measured pairs and the disagreement of bootstrap fits,
// scaled on hold-outs of Gavel's published table (see intervalZ and flipScale).
type Uncertainty struct {
	// NormalizedLow and NormalizedHigh bound an interval meant to hold the entry's true
	// normalized rate four times in five, when the pair can share a GPU at all; RateLow and
	// RateHigh are the same interval in steps/s. The estimate is lowered a little for caution
	// (Pairwise.Caution) and the interval is centered on it, so a truth outside it is more
	// often above than below.
	NormalizedLow  float64 `json:"normalized_low"`
	NormalizedHigh float64 `json:"normalized_high"`
	RateLow        float64 `json:"rate_low"`
	RateHigh       float64 `json:"rate_high"`
	// PackingWrong is the probability that the pair's packing decision is the wrong one: that
	// it is packed (its two normalized rates sum to more than 1) and cannot share a GPU after
	// all or gains nothing, or is not packed and would have gained. The same for both entries.
	PackingWrong float64 `json:"packing_wrong"`
}

// intervalZ widens an entry's log-rate uncertainty σ into the interval of Uncertainty: σ combines
// its worker type's cross-validated entry error, times the pair's scarcity relative to the
// measured pairs' (see evidencePower) to the power scarcityPower, with the entry's bootstrap
// spread. On hold-out seeds 10-15 of Gavel's table (R = 16, P = 0.2; 5,873 estimated entries
// whose true normalized rate is above 0.05), 80% were within 0.79σ of the truth: the errors have
// heavier tails than a normal's, so the interval is not ±1.28σ. Of the σs tried (bootstrap
// spread alone, the entry error alone, with the spread, scaled by scarcity to the power 0, 1/4
// or 1/2) this one held about 80% in every group of entries by how much is known of their jobs
// on the worker type (81%, 81%, 80%, 76% for 0, 1-2, 3-5, 6 or more known entries; unscaled:
// 63%, 78%, 83%, 84%; power 1/2: 98%, 83%, 77%, 68%), where the narrowest intervals overall
// (unscaled) held only 42-64% of the entries of jobs measured next to nobody.
const (
	intervalZ     = 0.79
	scarcityPower = 0.25
)

// flipScale scales the sum uncertainty behind PackingWrong: the larger of suggest's (sumSigma)
// and the one its two entries' scaled cross-validated errors imply (√(n_ik² + n_ki²) times it). On hold-out seeds 10-15 (3,068 pairs predicted
// feasible, 430 decisions wrong, those of pairs infeasible in truth that would be packed
// included), the likelihood of the decisions found wrong was largest at 0.70 (−972.4, 462
// predicted wrong); with sumSigma alone −973.8 at best (0.725), and without the infeasibility
// score folded in (see uncertainty) −1,011. With references only (P = 0.001) the larger σ
// gave −1,882 against −2,276 (690 predicted wrong against 398, 785 found), at P = 0.02
// −1,596 against −1,643 (measured before withMeanForNone, which widens such pairs further).
const flipScale = 0.7

// Uncertainties returns the Uncertainty of d's missing pairs as r estimates them: a function of
// a pair (w, i, k) that gives that of entry (i, k) and of (k, i) (meaningful where r predicts the
// pair feasible). r must carry calibrated errors (Result.SumError and EntryError: [Pairwise]
// with Calibrate > 0 on a block with a pair measured feasible; its Bootstrap fits' spread
// sharpens them); [Table] with Options.Uncertainty does this for a table.
func Uncertainties(d *Data, r *Result) (func(w, i, k int) (ik, ki Uncertainty), error) {
	if err := sameShape(d, r); err != nil {
		return nil, fmt.Errorf("uncertainties: %w", err)
	}
	if r.SumError == nil || r.EntryError == nil {
		return nil, errors.New("uncertainties: the estimate has no calibrated errors (Pairwise with Calibrate > 0 on a block with a pair measured feasible gives them)")
	}
	return uncertainty(d, r), nil
}

// uncertainty is Uncertainties for a calibrated r. A pair predicted feasible with infeasibility
// score s is packed wrongly with probability s + (1−s)·flip, left unpacked wrongly with
// (1−s)·flip, flip being the chance its sum is on the other side of 1.
func uncertainty(d *Data, r *Result) func(w, i, k int) (ik, ki Uncertainty) {
	count, _ := knownCounts(d)
	ms := withMeanForNone(measuredScarcity(d, count))
	return func(w, i, k int) (ik, ki Uncertainty) {
		ratio := scarcityRatio(count, ms, w, i, k)
		nik, nki := r.Norm[w][i][k], r.Norm[w][k][i]
		errLog := r.EntryError[w] * math.Pow(ratio, scarcityPower)
		// The sum is at least as uncertain as its two entries: where the cross-validation has
		// little to go on, the sum error (suggest's, from a prior of 0.05) says far less.
		sigma := math.Max(sumSigma(r, w, i, k, ratio), math.Hypot(nik, nki)*errLog)
		s := infeasibleScore(r, w, i, k)
		wrong := (1 - s) * normalCDF(-math.Abs(nik+nki-1)/(flipScale*sigma))
		if nik+nki > 1 {
			wrong += s
		}
		return entryInterval(d, r, w, i, k, errLog, wrong), entryInterval(d, r, w, k, i, errLog, wrong)
	}
}

// withMeanForNone returns ms with each 0 (a worker type with no pair measured outside the
// references) replaced by the mean of the others: its pairs are then widened by their scarcity
// against what the others measured, rather than not at all (a reviewer's GPU type measured in
// its reference block only held 39-58% of its true rates).
func withMeanForNone(ms []float64) []float64 {
	sum, n := 0.0, 0
	for _, v := range ms {
		if v > 0 {
			sum += v
			n++
		}
	}
	out := slices.Clone(ms)
	for w, v := range out {
		if v == 0 && n > 0 {
			out[w] = sum / float64(n)
		}
	}
	return out
}

// entryInterval is the Uncertainty of entry (i, k) on w, whose scaled cross-validated log error
// is errLog and whose pair's decision is wrong with probability wrong. A measured entry (the
// other of the pair missing) is exact.
func entryInterval(d *Data, r *Result, w, i, k int, errLog, wrong float64) Uncertainty {
	n := r.Norm[w][i][k]
	lo, hi := n, n
	if d.State[w][i][k] == table.Missing {
		s := intervalZ * math.Hypot(errLog, entrySpread(r, w, i, k))
		lo, hi = n*math.Exp(-s), n*math.Exp(s)
	}
	iso := d.Iso[w][i]
	return Uncertainty{NormalizedLow: lo, NormalizedHigh: hi, RateLow: lo * iso, RateHigh: hi * iso, PackingWrong: wrong}
}
