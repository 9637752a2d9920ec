package profile

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// batches accumulates the rates of one job over consecutive sub-windows (batch means). The
// rate is total steps over total time; the confidence interval comes from the spread of the
// batch rates with Student's t, which stays honest when consecutive steps are correlated
// (launch-bound models move by a quarter between windows).
type batches struct {
	rates   []float64
	steps   float64
	seconds float64
}

func (b *batches) add(steps, seconds float64) {
	if seconds <= 0 {
		return
	}
	b.rates = append(b.rates, steps/seconds)
	b.steps += steps
	b.seconds += seconds
}

func (b *batches) n() int { return len(b.rates) }

// rate is total steps over total time.
func (b *batches) rate() float64 {
	if b.seconds <= 0 {
		return 0
	}
	return b.steps / b.seconds
}

// halfWidth is the 95% confidence half-width of the mean batch rate (steps/s); +Inf with fewer
// than two batches.
func (b *batches) halfWidth() float64 {
	n := len(b.rates)
	if n < 2 {
		return math.Inf(1)
	}
	var mean float64
	for _, r := range b.rates {
		mean += r
	}
	mean /= float64(n)
	var ss float64
	for _, r := range b.rates {
		ss += (r - mean) * (r - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	return tQuantile975(n-1) * sd / math.Sqrt(float64(n))
}

// relHalfWidth is halfWidth relative to the rate; +Inf when the rate is 0.
func (b *batches) relHalfWidth() float64 {
	r := b.rate()
	if r <= 0 {
		return math.Inf(1)
	}
	return b.halfWidth() / r
}

// meanOf returns the mean of the batch rates in [i, j).
func (b *batches) meanOf(i, j int) float64 {
	var s float64
	for _, r := range b.rates[i:j] {
		s += r
	}
	return s / float64(j-i)
}

// settled reports whether the mean of the last k batch rates is within tol (relative) of the
// mean of the k before them.
func (b *batches) settled(k int, tol float64) bool {
	n := len(b.rates)
	if k < 1 || n < 2*k {
		return false
	}
	prev, last := b.meanOf(n-2*k, n-k), b.meanOf(n-k, n)
	if prev <= 0 {
		return false
	}
	return math.Abs(last-prev) <= tol*prev
}

// shifted reports whether the mean of the last k batch rates is off the rate before them by
// more than tol (relative) and by more than a two-sample t-test at the 99.9% level allows. The
// rate before them is that of earlier, the last batches of the warm-up (which ended because they
// agreed), and of the batches before the last k but one: the one just before them may straddle
// the move. The test runs at every window, so its level is strict: on steady rates whose batches
// vary by 5-25%, simulated over 20 windows after 4 warm-up batches, it fired on 1-2% of
// measurements (three standard errors over the measured batches alone: 12-42%), and it finds
// a rate that quadruples after any batch within two windows.
func (b *batches) shifted(earlier []float64, k int, tol float64) bool {
	n := len(b.rates)
	if k < 1 || n < k+1 {
		return false
	}
	before := append(slices.Clone(earlier), b.rates[:n-k-1]...)
	if len(before) < 2 {
		return false
	}
	mean, sd := stat.MeanStdDev(before, nil)
	last := b.meanOf(n-k, n)
	if mean <= 0 {
		return last > 0
	}
	diff := math.Abs(last - mean)
	return diff > tol*mean && diff > tQuantile(0.9995, len(before)-1)*sd*math.Sqrt(1/float64(k)+1/float64(len(before)))
}

// tail returns the last n batch rates (all when fewer).
func (b *batches) tail(n int) []float64 { return b.rates[max(0, len(b.rates)-n):] }

// tQuantile975 is the 97.5% quantile of Student's t with df degrees of freedom.
func tQuantile975(df int) float64 { return tQuantile(0.975, df) }

// tQuantile is the p quantile of Student's t with df degrees of freedom.
func tQuantile(p float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
}
