package policy

import (
	"context"
	"math"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// workers in the (k80, p100, v100) order of gavel-reference §9.
var kpv = []string{"k80", "p100", "v100"}

// jt is a test job type with scale factor 1.
func jt(model string) table.JobType { return table.JobType{Model: model, ScaleFactor: 1} }

// rateTable builds a table from per-model rate vectors over workers.
func rateTable(workers []string, rates map[table.JobType][]float64) *table.Table {
	t := table.New()
	for j, rs := range rates {
		for k, w := range workers {
			t.SetIsolated(w, j, rs[k])
		}
	}
	return t
}

// t0t1 is Gavel's common test input (§9.1): T0 = {v100 2, p100 1, k80 .5},
// T1 = {v100 3, p100 2, k80 1}, and the perfect pair (rates = isolated).
func t0t1(withPair bool) *table.Table {
	a, b := jt("T0"), jt("T1")
	t := rateTable(kpv, map[table.JobType][]float64{a: {0.5, 1, 2}, b: {1, 2, 3}})
	if withPair {
		for _, w := range kpv {
			ra, _ := t.Isolated(w, a)
			rb, _ := t.Isolated(w, b)
			t.SetPair(w, a, b, ra, rb)
		}
	}
	return t
}

func job(id string, ty table.JobType, steps float64) Job {
	return Job{ID: id, Type: ty, TotalSteps: steps}
}

func cluster(k80, p100, v100 int) Cluster { return Cluster{"k80": k80, "p100": p100, "v100": v100} }

func approx(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func mustAllocate(t *testing.T, name string, p *Problem, opts ...Option) *Allocation {
	t.Helper()
	pol, err := New(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	a, err := pol.Allocate(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	checkFeasible(t, p, a)
	return a
}

// checkFeasible checks an allocation against its problem independently of
// the policy code: every fraction in [0, 1]; no job over a time fraction of
// 1 across its combinations; no worker type oversubscribed, counting scale
// factors (a pair takes sf GPUs); pairs only between equal-sf jobs; nothing
// where a member's rate is 0 or the job does not fit; and the reported
// effective throughputs equal Σ fraction·rate recomputed from the table.
func checkFeasible(t *testing.T, p *Problem, a *Allocation) {
	t.Helper()
	const tol = 1e-6
	jobs := map[string]Job{}
	for _, j := range p.Jobs {
		jobs[j.ID] = j
	}
	jobTime := map[string]float64{}
	used := map[string]float64{}
	eff := map[string]float64{}
	for c, fr := range a.Fractions {
		ja, ok := jobs[c.A]
		if !ok {
			t.Fatalf("combination %s: unknown job %q", c, c.A)
		}
		members := []Job{ja}
		if c.IsPair() {
			jb, ok := jobs[c.B]
			if !ok {
				t.Fatalf("combination %s: unknown job %q", c, c.B)
			}
			if c.A >= c.B {
				t.Fatalf("pair %s not in canonical order", c)
			}
			if ja.Type.ScaleFactor != jb.Type.ScaleFactor {
				t.Fatalf("pair %s mixes scale factors %d and %d", c, ja.Type.ScaleFactor, jb.Type.ScaleFactor)
			}
			members = append(members, jb)
		}
		sf := float64(ja.Type.ScaleFactor)
		for w, x := range fr {
			n, ok := p.Cluster[w]
			if !ok {
				t.Fatalf("combination %s: worker type %q not in cluster", c, w)
			}
			if x < -tol || x > 1+tol || math.IsNaN(x) {
				t.Fatalf("combination %s on %s: fraction %v outside [0,1]", c, w, x)
			}
			if x <= 0 {
				continue
			}
			if sf > float64(n) {
				t.Fatalf("combination %s on %s: sf %v exceeds %d GPUs", c, w, sf, n)
			}
			used[w] += sf * x
			for k, m := range members {
				jobTime[m.ID] += x
				var r float64
				if c.IsPair() {
					ra, rb, s := p.Table.Pair(w, ja.Type, members[1].Type)
					if s != table.Measured {
						t.Fatalf("pair %s on %s: state %v", c, w, s)
					}
					r = ra
					if k == 1 {
						r = rb
					}
				} else {
					r, _ = p.Table.Isolated(w, m.Type)
				}
				if r <= 0 {
					t.Fatalf("combination %s on %s: job %s has rate %v there but fraction %v", c, w, m.ID, r, x)
				}
				eff[m.ID] += r * x
			}
		}
	}
	for id, s := range jobTime {
		if s > 1+tol {
			t.Fatalf("job %s: time fractions sum to %v > 1", id, s)
		}
	}
	for w, u := range used {
		if u > float64(p.Cluster[w])+tol {
			t.Fatalf("worker type %s oversubscribed: %v GPUs of %d", w, u, p.Cluster[w])
		}
	}
	for id := range jobs {
		if !approx(a.Effective[id], eff[id], 1e-6) {
			t.Fatalf("job %s: reported effective throughput %v, recomputed %v", id, a.Effective[id], eff[id])
		}
	}
}
