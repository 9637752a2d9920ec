package rounds

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/gavelkit/gavel/policy"
)

// hiddenLedger is a Ledger that Plan cannot recognize as one: it goes
// through the Accounting interfaces alone.
type hiddenLedger struct{ *Ledger }

// TestPlanLedgerShortcut holds Plan's shortcuts for the default ledger to
// the interfaces they stand for: an entry's due is taken from its rank
// (minus Rank's key) instead of asking Ledger.Due, and a job's PD²
// tie-breaks are asked once a plan for all of its entries. On a random
// cluster with split targets, gangs and pairs, every entry's due and
// tie-breaks must be what Due and JobPD2 say for this round, and every plan
// the same as through the interfaces alone.
func TestPlanLedgerShortcut(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		topo, err := NewTopology(policy.Cluster{"a": 4, "b": 4, "c": 2}, map[string]int{"a": 2, "b": 4, "c": 2})
		if err != nil {
			t.Fatal(err)
		}
		types := topo.WorkerTypes()
		jobs := map[string]*Job{}
		alloc := &policy.Allocation{Fractions: map[policy.Combination]map[string]float64{}}
		var ids []string
		for i := 0; i < 14; i++ {
			id := strconv.Itoa(i)
			sf := 1
			if rng.IntN(5) == 0 {
				sf = 2
			}
			j := &Job{ID: id, ScaleFactor: sf, Order: i, Rates: map[string]float64{}}
			x := map[string]float64{}
			for _, w := range types {
				j.Rates[w] = 1 + 9*rng.Float64()
				if rng.IntN(3) > 0 { // split over one to three types, or none
					x[w] = 0.25 * rng.Float64()
				}
			}
			jobs[id], ids = j, append(ids, id)
			alloc.Fractions[policy.Single(id)] = x
		}
		for k := 0; k < 10; k++ {
			a, b := jobs[ids[rng.IntN(len(ids))]], jobs[ids[rng.IntN(len(ids))]]
			if a == b || a.ScaleFactor != b.ScaleFactor {
				continue
			}
			alloc.Fractions[policy.PairOf(a.ID, b.ID)] = map[string]float64{types[rng.IntN(len(types))]: 0.2 * rng.Float64()}
		}
		pairRates := func(w string, a, b *Job) (float64, float64) { return 0.6 * a.Rates[w], 0.7 * b.Rates[w] }
		l1, l2 := NewLedger(DefaultRoundSeconds), NewLedger(DefaultRoundSeconds)
		s1 := &State{Topology: topo, Jobs: jobs, PairRates: pairRates, History: l1}
		s2 := &State{Topology: topo, Jobs: jobs, PairRates: pairRates, History: hiddenLedger{l2}}
		for r := 0; r < 60; r++ {
			totals := s1.jobUrgencies(alloc.Fractions)
			for _, e := range s1.entries(alloc) {
				if e.target > 0 {
					if want := l1.Due(e.c, e.w, e.target); e.due != want {
						t.Fatalf("seed %d round %d: %v on %s: due %v, Ledger.Due says %v", seed, r, e.c, e.w, e.due, want)
					}
				}
				ju := totals[e.c.A]
				if e.c.IsPair() || ju == nil || e.target > 0 && ju.entries == 1 || math.IsInf(e.jobDue, 1) {
					continue
				}
				if bbit, group := l1.JobPD2(e.c.A, ju.total); e.bbit != bbit || e.group != group {
					t.Fatalf("seed %d round %d: %v on %s: tie-breaks %v, %v; JobPD2 says %v, %v", seed, r, e.c, e.w, e.bbit, e.group, bbit, group)
				}
			}
			now := float64(r) * DefaultRoundSeconds
			p1, p2 := Plan(s1, alloc, now), Plan(s2, alloc, now)
			if !reflect.DeepEqual(p1, p2) {
				t.Fatalf("seed %d round %d: the default ledger's plan\n%+v\ndiffers from the interfaces'\n%+v", seed, r, p1, p2)
			}
			commitRound(s1, l1, alloc, p1, DefaultRoundSeconds)
			commitRound(s2, l2, alloc, p2, DefaultRoundSeconds)
		}
	}
}
