package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gavelkit/gavel/policy/lp"
)

// served returns each slot's time under d, and checks that d's rounds are
// feasible and its weights sum to at most 1 (failures start with label).
func served(t *testing.T, label string, slots []Slot, gpus map[string]int, d *Decomposition) []float64 {
	t.Helper()
	got := make([]float64, len(slots))
	sum := 0.0
	for q, r := range d.Rounds {
		sum += d.Weights[q]
		used, took := map[string]bool{}, map[string]int{}
		for _, k := range r {
			s := slots[k]
			got[k] += d.Weights[q]
			took[s.Worker] += s.GPUs
			for _, id := range []string{s.Combination.A, s.Combination.B} {
				if id != "" && used[id] {
					t.Fatalf("%sround %d runs %s twice", label, q, id)
				}
				used[id] = true
			}
		}
		for w, g := range took {
			if g > gpus[w] {
				t.Fatalf("%sround %d takes %d GPUs of %s, which has %d", label, q, g, w, gpus[w])
			}
		}
	}
	if sum > 1+1e-9 {
		t.Fatalf("%sweights sum to %v", label, sum)
	}
	return got
}

// losses returns the largest and the total relative loss of the jobs:
// for each job, Σ rate × shortfall over Σ rate × target, over its slots
// (rates from rate; nil: 1).
func losses(slots []Slot, targets, got []float64, rate func(string, int) float64) (largest, total float64) {
	lost, promised := map[string]float64{}, map[string]float64{}
	for k, s := range slots {
		for _, id := range []string{s.Combination.A, s.Combination.B} {
			if id == "" {
				continue
			}
			r := 1.0
			if rate != nil {
				r = rate(id, k)
			}
			lost[id] += r * max(0, targets[k]-got[k])
			promised[id] += r * targets[k]
		}
	}
	for id, p := range promised {
		if p > 0 {
			largest = max(largest, lost[id]/p)
			total += lost[id] / p
		}
	}
	return largest, total
}

// nearestByEnumeration solves DecomposeNearest's two LPs over every round
// at once: the least largest relative loss of a job, and the least total
// that keeps it.
func nearestByEnumeration(t *testing.T, slots []Slot, rounds [][]int, targets []float64, rate func(string, int) float64) (largest, total float64) {
	t.Helper()
	// coef[id][k]: what a unit of slot k's shortfall costs job id.
	coef := map[string]map[int]float64{}
	var ids []string
	promised := map[string]float64{}
	for k, s := range slots {
		for _, id := range []string{s.Combination.A, s.Combination.B} {
			if id == "" {
				continue
			}
			if coef[id] == nil {
				coef[id] = map[int]float64{}
				ids = append(ids, id)
			}
			coef[id][k] = rate(id, k)
			promised[id] += rate(id, k) * targets[k]
		}
	}
	solve := func(limit float64) float64 {
		first := math.IsInf(limit, 1)
		m := lp.NewModel(lp.Minimize)
		short := make([]int, len(slots))
		for k := range slots {
			obj := 0.0
			for _, id := range ids {
				if c, ok := coef[id][k]; ok && !first && promised[id] > 0 {
					obj += c / promised[id]
				}
			}
			short[k] = m.AddCol(0, lp.Inf, obj)
		}
		big := m.AddCol(0, limit, map[bool]float64{true: 1, false: 0}[first])
		cover := make([][]int, len(slots))
		for k := range slots {
			cover[k] = []int{short[k]}
		}
		var all []int
		for _, q := range rounds {
			j := m.AddCol(0, lp.Inf, 0)
			all = append(all, j)
			for _, k := range q {
				cover[k] = append(cover[k], j)
			}
		}
		for k := range slots {
			m.AddRow(targets[k], lp.Inf, cover[k], ones(len(cover[k])))
		}
		m.AddRow(-lp.Inf, 1, all, ones(len(all)))
		for _, id := range ids {
			if promised[id] <= 0 {
				continue
			}
			idx, val := []int{big}, []float64{-1}
			for k, c := range coef[id] {
				idx, val = append(idx, short[k]), append(val, c/promised[id])
			}
			m.AddRow(-lp.Inf, 0, idx, val)
		}
		res, err := lp.Default().Solve(context.Background(), m, lp.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Objective
	}
	largest = solve(math.Inf(1))
	return largest, solve(largest + 1e-7)
}

// Two 4-GPU gangs that want 0.75 of 6 GPUs each can run one at a time: the
// nearest rounds give each 0.5, a third of its time short, where the least
// total shortfall alone may leave one of them 0.5 short. When the first
// gang's time is worth twice as much to it on one type, the loss stays
// shared in proportion (the rates cancel: each gang has one slot).
func TestDecomposeNearestHand(t *testing.T) {
	slots := []Slot{{Combination: Single("a"), Worker: "v100", GPUs: 4}, {Combination: Single("b"), Worker: "v100", GPUs: 4}}
	gpus := map[string]int{"v100": 6}
	for _, rate := range []func(string, int) float64{nil, func(id string, _ int) float64 { return map[string]float64{"a": 2, "b": 1}[id] }} {
		d, err := DecomposeNearest(context.Background(), slots, []float64{0.75, 0.75}, gpus, rate)
		if !errors.Is(err, ErrUnrealizable) || d == nil {
			t.Fatalf("got %v, %v; want the nearest rounds and ErrUnrealizable", d, err)
		}
		got := served(t, "", slots, gpus, d)
		if math.Abs(got[0]-0.5) > 1e-6 || math.Abs(got[1]-0.5) > 1e-6 || math.Abs(d.Short-1.0/3) > 1e-6 {
			t.Fatalf("served %v, short %v; want 0.5 each, a third short", got, d.Short)
		}
	}
}

// A job that gets more from one type loses less there: gang a runs on v100
// (rate 4) or k80 (rate 1), b on v100 only, each type 4 GPUs. Targets a:
// 0.5 on each type, b: 1 on v100, which no rounds give (a and b share the
// v100s). The nearest rounds run a on the v100s for x and otherwise a on
// the k80s beside b on the v100s (1 − x, more than a's 0.5 there): a loses
// 4(0.5 − x) of the 2.5 promised, b loses x of 1, equal at x = 4/13. Time
// alone (rate nil) weighs both types alike: 0.5 − x of 1 against x, x = 1/4.
func TestDecomposeNearestWeighsRates(t *testing.T) {
	slots := []Slot{{Combination: Single("a"), Worker: "v100", GPUs: 4}, {Combination: Single("a"), Worker: "k80", GPUs: 4},
		{Combination: Single("b"), Worker: "v100", GPUs: 4}}
	gpus := map[string]int{"v100": 4, "k80": 4}
	rate := func(id string, k int) float64 { return []float64{4, 1, 1}[k] }
	d, err := DecomposeNearest(context.Background(), slots, []float64{0.5, 0.5, 1}, gpus, rate)
	if !errors.Is(err, ErrUnrealizable) || d == nil {
		t.Fatalf("got %v, %v; want the nearest rounds and ErrUnrealizable", d, err)
	}
	got := served(t, "", slots, gpus, d)
	x := 4.0 / 13
	if math.Abs(got[0]-x) > 1e-6 || math.Abs(got[1]-(1-x)) > 1e-6 || math.Abs(got[2]-(1-x)) > 1e-6 || math.Abs(d.Short-x) > 1e-6 {
		t.Fatalf("served %v, short %v; want [%.4f %.4f %.4f], %.4f", got, d.Short, x, 1-x, 1-x, x)
	}
	d, _ = DecomposeNearest(context.Background(), slots, []float64{0.5, 0.5, 1}, gpus, nil)
	if got := served(t, "", slots, gpus, d); math.Abs(got[0]-0.25) > 1e-6 || math.Abs(d.Short-0.25) > 1e-6 {
		t.Fatalf("by time: served %v, short %v; want a on v100 0.25, 0.25 short", got, d.Short)
	}
}

// DecomposeNearest agrees with its two LPs solved over every round
// enumerated by brute force, with random rates: the same least largest
// relative loss (Short, and what its rounds leave), the same least total
// under it, feasible rounds; and on realizable targets it is Decompose
// (Short 0, targets covered).
func TestDecomposeNearestAgainstEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	exact, near := 0, 0
	for n := range 200 {
		slots, gpus, rounds, targets := randomTargets(rng)
		rates := map[string]float64{}
		for k, s := range slots {
			for _, id := range []string{s.Combination.A, s.Combination.B} {
				rates[fmt.Sprint(id, k)] = 0.5 + 2*rng.Float64()
			}
		}
		rate := func(id string, k int) float64 { return rates[fmt.Sprint(id, k)] }
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			d, err := DecomposeNearest(context.Background(), slots, targets, gpus, rate)
			if err != nil && !errors.Is(err, ErrUnrealizable) {
				t.Fatal(err)
			}
			got := served(t, "", slots, gpus, d)
			largest, total := losses(slots, targets, got, rate)
			wantLargest, wantTotal := nearestByEnumeration(t, slots, rounds, targets, rate)
			if wantLargest <= 1e-8 {
				exact++
				if err != nil || d.Short != 0 || largest > 1e-7 {
					t.Fatalf("realizable targets: %v, short %v, rounds leave %v", err, d.Short, largest)
				}
				return
			}
			if wantLargest <= 1e-6 {
				return // within the tolerances: either answer will do
			}
			near++
			if err == nil {
				t.Fatal("unrealizable targets without ErrUnrealizable")
			}
			if math.Abs(d.Short-wantLargest) > 1e-6 || largest > wantLargest+1e-6 {
				t.Fatalf("short %v, rounds leave %v; enumeration %v", d.Short, largest, wantLargest)
			}
			if math.Abs(total-wantTotal) > 1e-6 {
				t.Fatalf("total loss %v, enumeration %v", total, wantTotal)
			}
		})
	}
	if exact < 40 || near < 40 {
		t.Fatalf("%d realizable, %d not: the sample should have plenty of both", exact, near)
	}
}

// A rate that is negative, NaN or infinite is bad input; a job promised
// less than decomposeTol of time has no loss row (its loss would be
// rounding over almost nothing), nor does one with rate 0 everywhere.
func TestDecomposeNearestInput(t *testing.T) {
	slots := []Slot{{Combination: Single("a"), Worker: "v100", GPUs: 4}, {Combination: Single("b"), Worker: "v100", GPUs: 4},
		{Combination: Single("c"), Worker: "v100", GPUs: 4}, {Combination: Single("z"), Worker: "v100", GPUs: 1}}
	gpus := map[string]int{"v100": 6}
	targets := []float64{0.75, 0.75, 1e-9, 0.5}
	for _, bad := range []float64{math.NaN(), math.Inf(1), -1} {
		rate := func(id string, _ int) float64 {
			if id == "a" {
				return bad
			}
			return 1
		}
		if _, err := DecomposeNearest(context.Background(), slots, targets, gpus, rate); !errors.Is(err, ErrInput) {
			t.Errorf("rate %v: err %v, want ErrInput", bad, err)
		}
	}
	rows, err := jobLoss(slots, targets, func(id string, _ int) float64 { return map[string]float64{"a": 1, "b": 2, "c": 1}[id] })
	if err != nil || len(rows) != 2 || rows[0].slot[0] != 0 || rows[1].slot[0] != 1 {
		t.Fatalf("loss rows %+v (err %v), want a's and b's only", rows, err)
	}
	if rows[1].coef[0] != 1/0.75 {
		t.Errorf("b's coefficient %v, want 1/0.75 (rate 2 over 2 × 0.75 promised)", rows[1].coef[0])
	}
}
