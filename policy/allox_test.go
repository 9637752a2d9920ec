package policy

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// alloxJobs returns n single-GPU jobs of types T0 and T1 (t0t1's).
func alloxJobs(n int) []Job {
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = job(fmt.Sprintf("j%04d", i), jt([]string{"T0", "T1"}[i%2]), float64(1000+i))
	}
	return jobs
}

// AlloX's assignment stops when its context ends, as the LP policies' solves
// do: its Hungarian method ran to the end whatever the context said, so
// that an interrupt of gavel-plan allocate or simulate went unheard for as
// long as it took (minutes for thousands of jobs).
func TestAlloXStopsWithContext(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error // nil: an allocation
	}{
		{"live", context.Background(), nil},
		{"cancelled", cancelled, context.Canceled},
		{"deadline passed", expired, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := New("allox")
			if err != nil {
				t.Fatal(err)
			}
			p := &Problem{Table: t0t1(false), Cluster: cluster(2, 2, 2), Jobs: alloxJobs(20)}
			a, err := pol.Allocate(tc.ctx, p)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("error %v", err)
			case tc.want == nil:
				checkFeasible(t, p, a)
			case !errors.Is(err, tc.want):
				t.Fatalf("got allocation %v, error %v; want error %v", a != nil, err, tc.want)
			}
		})
	}
}
