package estimate

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// tinyBlock returns a block of one worker type with the given number of jobs at isolated rate 1
// and the listed pairs measured (both directions).
func tinyBlock(jobs int, measured [][2]int) *Data {
	js := make([]table.JobType, jobs)
	for i := range js {
		js[i] = table.JobType{Model: string(rune('a' + i)), ScaleFactor: 1}
	}
	d := NewData([]string{"x"}, js)
	for i := range js {
		d.Iso[0][i] = 1
	}
	for _, p := range measured {
		d.State[0][p[0]][p[1]], d.State[0][p[1]][p[0]] = table.Measured, table.Measured
	}
	return d
}

func pairsOf(ms []Measurement) string {
	var got [][2]int
	for _, m := range ms {
		got = append(got, [2]int{m.I, m.K})
	}
	return fmt.Sprint(got)
}

// With every estimated sum equally far from the line, the calibrated ranking prefers pairs of
// poorly known jobs, and counts a pick as knowledge: after (d, d) the next pick is (c, c), not
// another pair with d. Hand count (known entries a 4, b 3, c 2, d 1; references a and b;
// scarcity (1+m)^-2 per job): (d,d) 0.5 > (c,d) 0.36 > (b,d) 0.31 > (c,c) 0.22; after (d,d), d
// has 3: (c,c) 0.22 > (c,d) 0.17 > (b,d) 0.13; after (c,c), c has 4: (b,d) 0.125 > (c,d) 0.1025.
func TestSuggestCalibratedPrefersScarceJobs(t *testing.T) {
	d := tinyBlock(4, [][2]int{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {1, 1}, {1, 2}})
	r := newResult(d)
	r.SumError = []float64{0.05}
	for i := 0; i < 4; i++ {
		for k := 0; k < 4; k++ {
			r.Norm[0][i][k] = 0.55 // every sum 1.1
		}
	}
	ms, err := Suggest(d, r, 4, AimBalanced)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pairsOf(ms), "[[3 3] [2 2] [1 3] [2 3]]"; got != want {
		t.Fatalf("picked %s, want %s", got, want)
	}
	// The first pick's score, from the definition: measured pairs outside the references
	// (a,c), (a,d), (b,c) have mean scarcity (1/25+1/9 + 1/25+1/4 + 1/16+1/9)/3; (d,d) has 1/2.
	ms0 := (1.0/25 + 1.0/9 + 1.0/25 + 1.0/4 + 1.0/16 + 1.0/9) / 3
	own := math.Hypot(0.55*spreadFloor, 0.55*spreadFloor)
	sigma := math.Hypot(0.05*math.Sqrt(0.5/ms0), own)
	if want := normalCDF(-0.1 / sigma); math.Abs(ms[0].Score-want) > 1e-12 {
		t.Errorf("score of (d,d) %v, want %v", ms[0].Score, want)
	}
	if ms[0].Reason != ReasonPacking {
		t.Errorf("reason %q, want %q", ms[0].Reason, ReasonPacking)
	}
}

// checkBlock returns two worker types x and y, references a..d (0-3, their pairs measured on
// both) and job e (4), measured next to every reference on x and only next to a on y; the
// estimate's pair sums are level(i) + level(k) with levels a 0.3, b 0.4, c 0.5, d 0.9, e 0.35,
// except e's on y, which are levelY + level(k), plus 0.2 next to d.
func checkBlock(levelY float64) (*Data, *Result) {
	js := make([]table.JobType, 5)
	for i := range js {
		js[i] = table.JobType{Model: string(rune('a' + i)), ScaleFactor: 1}
	}
	d := NewData([]string{"x", "y"}, js)
	r := newResult(d)
	level := []float64{0.3, 0.4, 0.5, 0.9, 0.35}
	for w := 0; w < 2; w++ {
		for i := 0; i < 5; i++ {
			d.Iso[w][i] = 1
			for k := 0; k < 5; k++ {
				if i < 4 && k < 4 || w == 0 && i != k || (i == 4 && k == 0 || i == 0 && k == 4) {
					d.State[w][i][k] = table.Measured
				}
				s := level[i] + level[k]
				if w == 1 && (i == 4) != (k == 4) {
					s = levelY + level[i+k-4]
					if i+k-4 == 3 {
						s += 0.2
					}
				}
				r.Norm[w][i][k] = s / 2
			}
		}
	}
	r.SumError = []float64{0.05, 0.05}
	return d, r
}

// Job e's sums on x put it nearest references a, b (gap 0.05) and c (0.15), not d (0.55).
// With levelY 0.9 its sums on y exceed theirs' mean, 0.4 + level(k), by 0.5 next to a, b, c
// and 0.7 next to d (mean 0.55 > checkGap): e is checked next to d, the largest gap among
// its missing reference pairs, and that pick comes first (checkBonus). With levelY 0.35 its
// row agrees (gap 0.05) and nothing is checked.
func TestConsistencyChecks(t *testing.T) {
	d, r := checkBlock(0.9)
	count, _ := knownCounts(d)
	if got, want := fmt.Sprint(consistencyChecks(d, r, count)), "[[-1 -1 -1 -1 -1] [-1 -1 -1 -1 3]]"; got != want {
		t.Fatalf("checks %s, want %s", got, want)
	}
	ms, err := Suggest(d, r, 2, AimBalanced)
	if err != nil {
		t.Fatal(err)
	}
	if m := ms[0]; m.W != 1 || m.I != 3 || m.K != 4 || m.Reason != ReasonCheck || m.Score != checkBonus+m.flip {
		t.Errorf("first pick %+v, want the check (y, d, e) with reason %q", m, ReasonCheck)
	}
	d, r = checkBlock(0.35)
	count, _ = knownCounts(d)
	if got, want := fmt.Sprint(consistencyChecks(d, r, count)), "[[-1 -1 -1 -1 -1] [-1 -1 -1 -1 -1]]"; got != want {
		t.Fatalf("consistent row: checks %s, want %s", got, want)
	}
}

// A call's checks are capped: with one check left, picking it leaves a second due check (e next
// to itself on x, a missing pair) without its bonus.
func TestConsistencyChecksCapped(t *testing.T) {
	d, r := checkBlock(0.9)
	st := newPicker(d, r)
	st.checksLeft = 1
	st.check[0][4] = 4
	first, second := Measurement{W: 1, I: 3, K: 4}, Measurement{W: 0, I: 4, K: 4}
	if d.State[0][4][4] != table.Missing || !st.isCheck(first) || !st.isCheck(second) {
		t.Fatalf("setup: both checks should be due on missing pairs")
	}
	st.pick(first)
	if c, why := st.cover(second); st.isCheck(second) || c == checkBonus || why == ReasonCheck {
		t.Errorf("after the one allowed check, %+v still counts as a check (cover %v, %q)", second, c, why)
	}
}

// relyBlock returns one worker type with jobs a..d (0-3), each measured only next to itself,
// and an estimate in which (a,b) and (c,d) both sum to 1.5 and every other missing pair to 0.5,
// so all of them are equally far from the line. The self pairs of a and b sum to selfAB (c's and
// d's to 0.5): at 1.9, a and b have a better option than (a,b), which a planner would use
// instead; at 0.5, (a,b) is the best option of both, as (c,d) is of c and d.
func relyBlock(selfAB float64) (*Data, *Result) {
	d, r := flatBlock(4, 4)
	r.Norm[0][0][1], r.Norm[0][1][0], r.Norm[0][2][3], r.Norm[0][3][2] = 0.75, 0.75, 0.75, 0.75
	r.Norm[0][0][0], r.Norm[0][1][1] = selfAB/2, selfAB/2
	return d, r
}

// A pair a planner would rely on is measured before an equally uncertain one it would not
// use: (a,b) and (c,d) have the same flip probability, and without the reliance term the lower
// index, (a,b), would come first; a call of fewer than 1/relyShare picks has no reliance pick
// and takes (a,b). Every job has one known entry and the measured pairs outside
// the reference block (job a) have the same scarcity as the candidates, so σ is the sum error
// and the entries' floor spread, from the definition.
func TestSuggestReliance(t *testing.T) {
	d, r := relyBlock(1.9)
	ms, err := Suggest(d, r, 10, AimBalanced) // a share of 1 reliance pick
	if err != nil {
		t.Fatal(err)
	}
	if m := ms[0]; m.I != 2 || m.K != 3 || m.Reason != ReasonRely {
		t.Fatalf("first pick %+v, want (c,d) with reason %q", m, ReasonRely)
	}
	sigma := math.Hypot(0.3, math.Hypot(0.75*spreadFloor, 0.75*spreadFloor))
	flip := normalCDF(-0.5 / sigma)
	if want := flip + relyWeight*sigma; math.Abs(ms[0].Score-want) > 1e-12 {
		t.Errorf("score of (c,d) %v, want flip %v + reliance %v", ms[0].Score, flip, relyWeight*sigma)
	}
	if ms, _ := Suggest(d, r, 1, AimBalanced); ms[0].I != 0 || ms[0].K != 1 || ms[0].Reason != ReasonPacking {
		t.Errorf("a call of one: first pick %+v, want (a,b) by flip probability", ms[0])
	}
	// (a,b) falls 0.4 short of a's and b's best option.
	st := newPicker(d, r)
	if got, want := st.relyValue(0, 0, 1, sigma), relyWeight*math.Exp(-0.4/relyScale)*sigma; math.Abs(got-want) > 1e-12 {
		t.Errorf("reliance of (a,b) %v, want %v", got, want)
	}
	if got := st.relyValue(0, 0, 2, sigma); got != 0 {
		t.Errorf("reliance of (a,c), summing to 0.5, %v, want 0", got)
	}
}

// Reliance takes at most relyShare of a call's picks: with (a,b) and (c,d) both relied on,
// ten picks (share 1) measure both, only the first for reliance; in a call of twenty (share
// 2), both count.
func TestSuggestRelianceCapped(t *testing.T) {
	count := func(ms []Measurement) (n int, pairs []string) {
		for _, m := range ms {
			if m.Reason == ReasonRely {
				n++
				pairs = append(pairs, fmt.Sprint([2]int{m.I, m.K}))
			}
		}
		return n, pairs
	}
	d, r := relyBlock(0.5)
	ms, err := Suggest(d, r, 10, AimBalanced)
	if err != nil {
		t.Fatal(err)
	}
	if n, pairs := count(ms); n != shareOf(relyShare, 10) || n != 1 || pairs[0] != "[0 1]" {
		t.Errorf("picks %s: reliance picks %v, want only (a,b)", pairsOf(ms), pairs)
	}
	if got := pairsOf(ms[:2]); got != "[[0 1] [2 3]]" {
		t.Errorf("first picks %s, want (a,b) then (c,d): all are as far from the line, and picking (a,b) lowered σ for the pairs with a or b", got)
	}
	ms, err = Suggest(d, r, 20, AimBalanced)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := count(ms); len(ms) != 6 || n != 2 {
		t.Errorf("picks %s: %d for reliance, want all 6 candidates and 2", pairsOf(ms), n)
	}
}

// Every block of a table gets the whole budget in its own Suggest, and the capped kinds of
// pick (reliance, feasibility doubt, consistency checks) score high; merged over three blocks
// (the Gavel block under three scale factors) they must still keep their shares of the budget.
func TestSuggestTableKeepsSharesAcrossBlocks(t *testing.T) {
	h, err := Protocol(gavelBlock(t), 16, 0.2, 1)
	if err != nil {
		t.Fatal(err)
	}
	tab := ToTable(h.Partial, nil)
	for _, sf := range []int{2, 3} {
		d := h.Partial.Clone()
		d.Jobs = slices.Clone(d.Jobs)
		for i := range d.Jobs {
			d.Jobs[i].ScaleFactor = sf
			for w, wt := range d.Workers {
				tab.SetIsolated(wt, d.Jobs[i], d.Iso[w][i])
			}
		}
		d.WriteTo(tab)
	}
	// Budgets near the number of missing pairs fill up: a capped pick left out is replaced.
	missing := 0
	for w := range h.Partial.State {
		for i := range h.Partial.State[w] {
			for k := i; k < len(h.Partial.State[w]); k++ {
				if h.Partial.State[w][i][k] == table.Missing {
					missing += 3 // in each of the three blocks
				}
			}
		}
	}
	for _, budget := range []int{5, 10, 20, missing - 40, missing + 10} {
		ms, notes, err := SuggestTable(context.Background(), tab, budget, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if budget > 20 {
			if want := min(budget, missing); len(ms) != want || (budget < missing) == hasNote(notes, "pairs to suggest") {
				t.Errorf("budget %d of %d missing pairs: %d picks (notes %q), want %d", budget, missing, len(ms), notes, want)
			}
			continue
		}
		n := map[string]int{}
		blocks := map[int]bool{}
		for _, m := range ms {
			n[m.Reason]++
			blocks[m.ScaleFactor] = true
		}
		if len(ms) != budget || len(blocks) < 2 {
			t.Errorf("budget %d: %d picks from %d blocks, want %d from several", budget, len(ms), len(blocks), budget)
		}
		caps := map[string]int{ReasonRely: int(relyShare * float64(budget)),
			ReasonFeasibility: max(1, int(feasShare*float64(budget))), ReasonCheck: max(1, int(checkShare*float64(budget)))}
		for reason, c := range caps {
			if n[reason] > c {
				t.Errorf("budget %d: %d picks %q, share allows %d (all: %v)", budget, n[reason], reason, c, n)
			}
		}
	}
}

// A cold start whose largest calibrated term is reliance is picked as a cold start, and does
// not use up the reliance share: job e has nothing known, and its pair with a, estimated at 1.9
// (both jobs' best option), goes first as coverage; the share's one reliance pick is still made.
func TestSuggestColdStartLeavesRelianceShare(t *testing.T) {
	d, r := flatBlock(5, 4)
	r.Norm[0][0][4], r.Norm[0][4][0] = 0.95, 0.95
	r.Norm[0][2][3], r.Norm[0][3][2] = 0.75, 0.75
	ms, err := Suggest(d, r, 10, AimBalanced)
	if err != nil {
		t.Fatal(err)
	}
	if m := ms[0]; m.I != 0 || m.K != 4 || m.Reason != ReasonCoverage || !(m.rely > m.flip) {
		t.Fatalf("first pick %+v, want (a,e) as coverage with reliance its largest term", m)
	}
	n := 0
	for _, m := range ms {
		if m.Reason == ReasonRely {
			n++
		}
	}
	if want := shareOf(relyShare, 10); n != want || n != 1 {
		t.Errorf("picks %s: %d for reliance, want the share's %d", pairsOf(ms), n, want)
	}
}

// shareOf is how many of budget picks a share allows, as Suggest rounds it.
func shareOf(share float64, budget int) int { return int(share * float64(budget)) }

// flatBlock returns a block of jobs jobs on one worker type whose first known jobs have their
// self pair measured, and a calibrated estimate (sum error 0.3) of 0.25 for every entry.
func flatBlock(jobs, known int) (*Data, *Result) {
	var self [][2]int
	for j := 0; j < known; j++ {
		self = append(self, [2]int{j, j})
	}
	d := tinyBlock(jobs, self)
	r := newResult(d)
	r.SumError = []float64{0.3}
	for i := 0; i < jobs; i++ {
		for k := 0; k < jobs; k++ {
			r.Norm[0][i][k] = 0.25
		}
	}
	return d, r
}

// The heap behind Suggest's calibrated ranking pops candidates in the order a scan for the
// highest value, first on ties, would pick them, and a NaN value never before a number.
func TestValueHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(40)
		vals := make([]float64, n)
		for x := range vals {
			switch rng.IntN(6) {
			case 0:
				vals[x] = math.NaN()
			case 1:
				vals[x] = math.Inf(-1)
			default:
				vals[x] = float64(rng.IntN(5)) // many ties
			}
		}
		h := valueHeap{vals: vals, pos: make([]int32, n)}
		for x := range vals {
			h.pos[x] = int32(x)
			h.x = append(h.x, int32(x))
		}
		heap.Init(&h)
		// Change a few values after ordering, as rescore does.
		for range 3 {
			x := rng.IntN(n)
			vals[x] = float64(rng.IntN(5))
			heap.Fix(&h, int(h.pos[x]))
		}
		taken := make([]bool, n)
		for range n {
			want, wantV := -1, math.Inf(-1)
			for x, v := range vals {
				if !taken[x] && (want < 0 || v > wantV || math.IsNaN(wantV) && !math.IsNaN(v)) {
					want, wantV = x, v
				}
			}
			got := int(heap.Pop(&h).(int32))
			if got != want {
				t.Fatalf("trial %d: popped %d (%v), want %d (%v); values %v", trial, got, vals[got], want, wantV, vals)
			}
			taken[got] = true
		}
	}
}

// The decisions aim ranks by flip probability alone: in relyBlock(1.9) the balanced call's first
// pick is (c,d) for reliance; the decisions call takes (a,b), first on the tie, and makes no pick
// for reliance, feasibility doubt or a check. Pairs predicted infeasible, (a,c) both ways and
// (b,c) one way, are never its candidates, though balanced measures them; (b,d), feasible but
// in doubt (score 0.4), is one, scored by its flip probability alone.
func TestSuggestAimDecisions(t *testing.T) {
	d, r := relyBlock(1.9)
	r.Infeasible[0][0][2], r.Infeasible[0][2][0] = true, true
	r.Infeasible[0][2][1] = true // (c, b): one way, as listed for the later job
	r.InfeasibleScore = doubt(4, map[[2]int]float64{{0, 2}: 0.5, {1, 3}: 0.4})
	bal, err := Suggest(d, r, 10, AimBalanced)
	if err != nil {
		t.Fatal(err)
	}
	if m := bal[0]; m.I != 2 || m.K != 3 || m.Reason != ReasonRely || !taken(bal, 0, 0, 2) || !taken(bal, 0, 1, 2) {
		t.Fatalf("balanced picks %s (first %+v): want (c,d) for reliance first, (a,c) and (b,c) among them", pairsOf(bal), m)
	}
	dec, err := Suggest(d, r, 10, AimDecisions)
	if err != nil {
		t.Fatal(err)
	}
	if len(dec) != 4 || taken(dec, 0, 0, 2) || taken(dec, 0, 1, 2) || dec[0].I != 0 || dec[0].K != 1 || !taken(dec, 0, 1, 3) {
		t.Errorf("decisions picks %s: want the 4 candidates other than (a,c) and (b,c), (a,b) first", pairsOf(dec))
	}
	for _, m := range dec {
		if m.Reason != ReasonPacking || m.Score != m.flip {
			t.Errorf("decisions pick %+v: want reason %q and the flip probability as its score", m, ReasonPacking)
		}
	}
	dc, rc := checkBlock(0.9)
	ms, err := Suggest(dc, rc, 2, AimDecisions)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Reason == ReasonCheck {
			t.Errorf("decisions aim made a consistency check: %+v", m)
		}
	}
	if _, err := Suggest(d, r, 1, Aim(7)); err == nil {
		t.Error("Suggest accepted aim 7")
	}
	// Checked before any fit: a cancelled context would be reported otherwise.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Active(ctx, d, d, Pairwise{}, 1, 1, Aim(7)); err == nil || !strings.Contains(err.Error(), "Aim(7)") {
		t.Errorf("Active with aim 7: %v, want an error naming the aim", err)
	}
	if _, err := Active(ctx, d, d, Pairwise{}, -1, 1, AimBalanced); err == nil || !strings.Contains(err.Error(), "budget -1") {
		t.Errorf("Active with budget -1: %v, want an error naming the budget", err)
	}
	if _, _, err := SuggestTable(ctx, table.New(), 1, Options{Aim: -1}); err == nil || !strings.Contains(err.Error(), "Aim(-1)") {
		t.Errorf("SuggestTable with aim -1: %v, want an error naming the aim", err)
	}
}

// The decisions aim keeps cold starts first: job e has nothing known (flatBlock(5, 4)), so the
// first picks are its pairs, as coverage.
func TestSuggestAimDecisionsKeepsColdStart(t *testing.T) {
	d, r := flatBlock(5, 4)
	ms, err := Suggest(d, r, 3, AimDecisions)
	if err != nil {
		t.Fatal(err)
	}
	if m := ms[0]; m.K != 4 || m.Reason != ReasonCoverage {
		t.Errorf("first pick %+v, want a pair of e as coverage", m)
	}
}

// Without a calibrated sum error the ranking adds feasibility doubt as a term: (b,d), whose
// infeasibility score is 0.5, gets 1 for it from balanced; decisions leaves the term out.
func TestSuggestAimDecisionsUncalibrated(t *testing.T) {
	d, r := relyBlock(1.9)
	r.SumError = nil
	r.InfeasibleScore = doubt(4, map[[2]int]float64{{1, 3}: 0.5})
	score := func(aim Aim) float64 {
		st := newPicker(d, r)
		st.aim = aim
		for _, m := range st.candidates(nil) {
			if m.I == 1 && m.K == 3 {
				return m.Score
			}
		}
		t.Fatalf("aim %v: (b,d) is not a candidate", aim)
		return 0
	}
	if bal, dec := score(AimBalanced), score(AimDecisions); math.Abs(bal-dec-1) > 1e-12 {
		t.Errorf("(b,d) scores balanced %v, decisions %v: want them 1 (the doubt term) apart", bal, dec)
	}
}

// doubt returns a one-worker-type infeasibility score of n jobs, 0 but for the listed pairs
// (both directions).
func doubt(n int, scores map[[2]int]float64) [][][]float64 {
	s := [][][]float64{make([][]float64, n)}
	for i := range s[0] {
		s[0][i] = make([]float64, n)
	}
	for p, v := range scores {
		s[0][p[0]][p[1]], s[0][p[1]][p[0]] = v, v
	}
	return s
}

func TestParseAim(t *testing.T) {
	for _, a := range []Aim{AimBalanced, AimDecisions} {
		if got, err := ParseAim(a.String()); err != nil || got != a {
			t.Errorf("ParseAim(%q) = %v, %v; want %v", a.String(), got, err, a)
		}
	}
	for _, s := range []string{"", "Decisions", "fast"} {
		if _, err := ParseAim(s); err == nil || !strings.Contains(err.Error(), "balanced or decisions") {
			t.Errorf("ParseAim(%q): error %v, want one naming the choices", s, err)
		}
	}
}

// taken reports whether ms holds pair (i, k) on w, in either order.
func taken(ms []Measurement, w, i, k int) bool {
	for _, m := range ms {
		if m.W == w && ((m.I == i && m.K == k) || (m.I == k && m.K == i)) {
			return true
		}
	}
	return false
}
