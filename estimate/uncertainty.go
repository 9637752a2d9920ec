package estimate

import (
	"errors"
	"math"

	"github.com/gavelkit/gavel/table"
)

// Uncertainty is how far an estimated entry may be off, as far as the table's measurements
// tell: from cross-validation on the measured pairs and the disagreement of bootstrap fits,
// calibrated on hold-outs of Gavel's published table (see intervalZ and flipScale).
type Uncertainty struct {
	// NormalizedLow and NormalizedHigh bound an interval meant to hold the entry's true
	// normalized rate four times in five, when the pair can share a GPU at all; RateLow and
	// RateHigh are the same interval in steps/s.
	NormalizedLow  float64 `json:"normalized_low"`
	NormalizedHigh float64 `json:"normalized_high"`
	RateLow        float64 `json:"rate_low"`
	RateHigh       float64 `json:"rate_high"`
	// PackingWrong is the probability that the pair's packing decision (do its two normalized
	// rates sum to more than 1?) is the wrong one; the same for both entries of a pair.
	PackingWrong float64 `json:"packing_wrong"`
}

// intervalZ widens an entry's log-rate uncertainty (its worker type's cross-validated entry
// error combined with its bootstrap spread) into the interval of Uncertainty. On hold-out seeds
// 10-15 of Gavel's table (R = 16, P = 0.2; 5,873 estimated entries whose true normalized rate
// is above 0.05), 80% of the entries were within 0.89 of that uncertainty of the truth: the
// errors have heavier tails than a normal's (90% within 1.26), so the interval is not
// ±1.28σ. That uncertainty gave the narrowest 80% intervals of those tried (bootstrap spread
// alone, the entry error alone or scaled by the pair's scarcity, with or without the spread).
const intervalZ = 0.89

// flipScale scales the sum uncertainty behind PackingWrong (sumSigma, as suggest ranks pairs
// by): with it as is, the probabilities were too high (pairs given 0.1-0.2 were wrong 6% of the
// time); 0.7 maximized the likelihood of the decisions found wrong on hold-out seeds 10-15
// (3,016 pairs, 390 wrong; 408 predicted).
const flipScale = 0.7

// Uncertainties returns the Uncertainty of d's missing pairs as r estimates them: a function of
// a pair (w, i, k) that gives that of entry (i, k) and of (k, i) (meaningful where r predicts the
// pair feasible). r must carry calibrated errors (Result.SumError and EntryError: [Pairwise]
// with Calibrate > 0; its Bootstrap fits' spread sharpens them); [Table] with
// Options.Uncertainty does this for a table.
func Uncertainties(d *Data, r *Result) (func(w, i, k int) (ik, ki Uncertainty), error) {
	if r.SumError == nil || r.EntryError == nil {
		return nil, errors.New("uncertainties: the estimate has no calibrated errors (Pairwise with Calibrate > 0 gives them)")
	}
	return uncertainty(d, r), nil
}

// uncertainty is Uncertainties for a calibrated r.
func uncertainty(d *Data, r *Result) func(w, i, k int) (ik, ki Uncertainty) {
	count, _ := knownCounts(d)
	ms := measuredScarcity(d, count)
	return func(w, i, k int) (ik, ki Uncertainty) {
		ratio := 1.0
		if ms[w] > 0 {
			ratio = scarcity(count, w, i, k) / ms[w]
		}
		nik, nki := r.Norm[w][i][k], r.Norm[w][k][i]
		wrong := normalCDF(-math.Abs(nik+nki-1) / (flipScale * sumSigma(r, w, i, k, ratio)))
		return entryInterval(d, r, w, i, k, wrong), entryInterval(d, r, w, k, i, wrong)
	}
}

// entryInterval is the Uncertainty of entry (i, k) on w, whose pair's decision is wrong with
// probability wrong. A measured entry (the other of the pair missing) is exact.
func entryInterval(d *Data, r *Result, w, i, k int, wrong float64) Uncertainty {
	n := r.Norm[w][i][k]
	lo, hi := n, n
	if d.State[w][i][k] == table.Missing {
		s := intervalZ * math.Hypot(r.EntryError[w], entrySpread(r, w, i, k))
		lo, hi = n*math.Exp(-s), n*math.Exp(s)
	}
	iso := d.Iso[w][i]
	return Uncertainty{NormalizedLow: lo, NormalizedHigh: hi, RateLow: lo * iso, RateHigh: hi * iso, PackingWrong: wrong}
}
