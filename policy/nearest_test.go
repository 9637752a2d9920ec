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
// feasible and its weights sum to at most 1.
func served(t *testing.T, slots []Slot, gpus map[string]int, d *Decomposition) []float64 {
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
					t.Fatalf("round %d runs %s twice", q, id)
				}
				used[id] = true
			}
		}
		for w, g := range took {
			if g > gpus[w] {
				t.Fatalf("round %d takes %d GPUs of %s, which has %d", q, g, w, gpus[w])
			}
		}
	}
	if sum > 1+1e-9 {
		t.Fatalf("weights sum to %v", sum)
	}
	return got
}

// shortfalls returns the largest shortfall of a job on a worker type (its
// slots' shortfalls there, summed) and the total, for slots served got.
func shortfalls(slots []Slot, targets, got []float64) (largest, total float64) {
	byJob := map[string]float64{}
	for k, s := range slots {
		short := max(0, targets[k]-got[k])
		total += short
		for _, id := range []string{s.Combination.A, s.Combination.B} {
			if id != "" {
				byJob[id+"@"+s.Worker] += short
			}
		}
	}
	for _, v := range byJob {
		largest = max(largest, v)
	}
	return largest, total
}

// nearestByEnumeration solves DecomposeNearest's two LPs over every round
// at once: the least largest shortfall of a job on a worker type, and the
// least total shortfall that keeps it.
func nearestByEnumeration(t *testing.T, slots []Slot, rounds [][]int, targets []float64) (largest, total float64) {
	t.Helper()
	solve := func(limit float64) float64 {
		m := lp.NewModel(lp.Minimize)
		cover := make([][]int, len(slots))
		coef := make([][]float64, len(slots))
		groups := map[string][]int{}
		var names []string
		for k, s := range slots {
			obj := 1.0
			if math.IsInf(limit, 1) {
				obj = 0
			}
			cover[k], coef[k] = []int{m.AddCol(0, lp.Inf, obj)}, []float64{1}
			for _, id := range []string{s.Combination.A, s.Combination.B} {
				if key := id + "@" + s.Worker; id != "" {
					if groups[key] == nil {
						names = append(names, key)
					}
					groups[key] = append(groups[key], cover[k][0])
				}
			}
		}
		obj := 0.0
		if math.IsInf(limit, 1) {
			obj = 1
		}
		big := m.AddCol(0, limit, obj)
		var all []int
		for _, q := range rounds {
			j := m.AddCol(0, lp.Inf, 0)
			all = append(all, j)
			for _, k := range q {
				cover[k], coef[k] = append(cover[k], j), append(coef[k], 1)
			}
		}
		for k := range slots {
			m.AddRow(targets[k], lp.Inf, cover[k], coef[k])
		}
		m.AddRow(-lp.Inf, 1, all, ones(len(all)))
		for _, key := range names {
			g := groups[key]
			val := ones(len(g) + 1)
			val[len(g)] = -1
			m.AddRow(-lp.Inf, 0, append(append([]int{}, g...), big), val)
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
// nearest rounds give each 0.5, 0.25 short, where the least total
// shortfall alone may leave one of them 0.5 short.
func TestDecomposeNearestHand(t *testing.T) {
	slots := []Slot{{Combination: Single("a"), Worker: "v100", GPUs: 4}, {Combination: Single("b"), Worker: "v100", GPUs: 4}}
	gpus := map[string]int{"v100": 6}
	targets := []float64{0.75, 0.75}
	d, err := DecomposeNearest(context.Background(), slots, targets, gpus)
	if !errors.Is(err, ErrUnrealizable) || d == nil {
		t.Fatalf("got %v, %v; want the nearest rounds and ErrUnrealizable", d, err)
	}
	got := served(t, slots, gpus, d)
	if math.Abs(got[0]-0.5) > 1e-6 || math.Abs(got[1]-0.5) > 1e-6 || math.Abs(d.Short-0.25) > 1e-6 {
		t.Fatalf("served %v, short %v; want 0.5 each, 0.25 short", got, d.Short)
	}
}

// DecomposeNearest agrees with its two LPs solved over every round
// enumerated by brute force: the same least largest shortfall (Short, and
// what its rounds leave), the same least total under it, feasible rounds;
// and on realizable targets it is Decompose (Short 0, targets covered).
func TestDecomposeNearestAgainstEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	exact, near := 0, 0
	for n := range 200 {
		slots, gpus := randomSlots(rng)
		rounds := allRounds(slots, gpus)
		targets := make([]float64, len(slots))
		scale := 0.7 + 0.7*rng.Float64()
		for range 3 {
			for _, k := range rounds[rng.IntN(len(rounds))] {
				targets[k] += scale / 3
			}
		}
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			d, err := DecomposeNearest(context.Background(), slots, targets, gpus)
			if err != nil && !errors.Is(err, ErrUnrealizable) {
				t.Fatal(err)
			}
			got := served(t, slots, gpus, d)
			largest, total := shortfalls(slots, targets, got)
			wantLargest, wantTotal := nearestByEnumeration(t, slots, rounds, targets)
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
				t.Fatalf("total shortfall %v, enumeration %v", total, wantTotal)
			}
		})
	}
	if exact < 40 || near < 40 {
		t.Fatalf("%d realizable, %d not: the sample should have plenty of both", exact, near)
	}
}
