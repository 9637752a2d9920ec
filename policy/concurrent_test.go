package policy

import (
	"context"
	"reflect"
	"sync"
	"testing"
)

// Policies allocate concurrently (experiment continuous --parallel runs simulations at once):
// packed and water filling (whose solves include CBC's MILPs) and the plain LP policies, each
// on the same shared table, give what they give alone. Run under -race, this checks that they
// share no state but the table, which they only read.
func TestConcurrentAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates each policy several times")
	}
	cases := []struct {
		name string
		p    *Problem
	}{
		{"max_min_fairness_packed", benchProblem(12)},
		{"max_min_fairness_water_filling", mixedProblem(12)},
		{"max_min_fairness_water_filling_perf", mixedProblem(10)},
		{"max_min_fairness_perf", mixedProblem(16)},
		{"finish_time_fairness_perf", benchProblem(16)},
	}
	want := make([]*Allocation, len(cases))
	for i, c := range cases {
		want[i] = mustAllocate(t, c.name, c.p)
	}
	const rounds = 2
	var wg sync.WaitGroup
	got := make([][]*Allocation, len(cases))
	errs := make([][]error, len(cases))
	for i, c := range cases {
		got[i], errs[i] = make([]*Allocation, rounds), make([]error, rounds)
		for k := range rounds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := New(c.name)
				if err == nil {
					got[i][k], err = p.Allocate(context.Background(), c.p)
				}
				errs[i][k] = err
			}()
		}
	}
	wg.Wait()
	for i, c := range cases {
		for k := range rounds {
			if errs[i][k] != nil {
				t.Fatalf("%s: %v", c.name, errs[i][k])
			}
			a, b := *got[i][k], *want[i]
			a.Stats.Seconds, b.Stats.Seconds = 0, 0 // timings
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s: concurrent allocation %d differs from the sequential one", c.name, k)
			}
		}
	}
}
