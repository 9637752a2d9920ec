package policy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/gavelkit/gavel/table"
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

// fullQueueAssignment is assignSlots over every position k < r of every
// slot (AlloX's and Gavel's matrix, r × r·slots): the reference for the
// reduced matrix queueCosts builds. It returns each placed job's worker
// index and the cost.
func fullQueueAssignment(t *testing.T, in *instance, waiting, slots []int) (map[int]int, float64) {
	r, f := len(waiting), len(slots)
	big := 0.0
	q := make([][]float64, r)
	for a, i := range waiting {
		q[a] = make([]float64, f)
		for s, w := range slots {
			q[a][s] = math.Inf(1)
			if in.rate[i][w] > 0 {
				q[a][s] = in.jobs[i].StepsRemaining() / in.rate[i][w]
				big = math.Max(big, q[a][s])
			}
		}
	}
	big = (big*float64(r)*float64(r) + 1) * 10
	cost := make([][]float64, r)
	for a := range cost {
		cost[a] = make([]float64, f*r)
		for c := range cost[a] {
			cost[a][c] = big
			if v := q[a][c%f]; !math.IsInf(v, 1) {
				cost[a][c] = float64(c/f+1) * v
			}
		}
	}
	cols, err := hungarian(context.Background(), cost)
	if err != nil {
		t.Fatal(err)
	}
	heads, headK := map[int]int{}, map[int]int{}
	total := 0.0
	for a, c := range cols {
		if cost[a][c] >= big {
			continue
		}
		total += cost[a][c]
		if k, s := c/f, c%f; headK[s] == 0 || k+1 > headK[s] {
			heads[s], headK[s] = waiting[a], k+1
		}
	}
	placed := map[int]int{}
	for s, i := range heads {
		placed[i] = slots[s]
	}
	return placed, total
}

// assignSlots's matrix keeps, of each worker type, only the first r
// positions (r jobs waiting): on random instances (ties included: equal
// rates and steps, jobs without a rate on a type, more jobs than GPUs and
// fewer) it places every job as the full matrix does, at the same cost.
func TestAlloXReducedMatrix(t *testing.T) {
	ws := []string{"a", "b", "c"}
	for seed := int64(0); seed < 400; seed++ {
		r := rand.New(rand.NewSource(seed))
		nw := 1 + r.Intn(3)
		tb := table.New()
		types := make([]table.JobType, 1+r.Intn(4))
		for k := range types {
			types[k] = jt(fmt.Sprint("M", k))
			for w, wt := range ws[:nw] {
				v := []float64{0, 1, 2, 4, 0.5, 3}[r.Intn(6)]
				if r.Intn(2) == 0 {
					v = r.Float64() * 10
				}
				if w == 0 {
					v = float64(1 + r.Intn(3)) // every job runs somewhere
				}
				tb.SetIsolated(wt, types[k], v)
			}
		}
		cl := Cluster{}
		for _, w := range ws[:nw] {
			cl[w] = 1 + r.Intn(4)
		}
		jobs := make([]Job, 1+r.Intn(20))
		for i := range jobs {
			jobs[i] = job(fmt.Sprint("j", i), types[r.Intn(len(types))], []float64{100, 200, 100, 300}[r.Intn(4)])
		}
		in, err := newInstance(&Problem{Table: tb, Cluster: cl, Jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		var slots []int
		for w := range in.workers {
			for range int(in.cap[w]) {
				slots = append(slots, w)
			}
		}
		waiting := make([]int, in.m())
		for i := range waiting {
			waiting[i] = i
		}
		want, wantCost := fullQueueAssignment(t, in, waiting, slots)
		heads, cost, err := assignSlots(context.Background(), in, waiting, slots)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int]int{}
		for s, i := range heads {
			if i >= 0 {
				got[i] = slots[s]
			}
		}
		if !approx(cost, wantCost, 1e-12) || !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: placed %v at cost %v, the full matrix %v at %v", seed, got, cost, want, wantCost)
		}
	}
}

// AlloX's memory grows with the worker types, not the GPUs: its matrix was
// r × r·(free GPUs) for r jobs waiting, so that 2,000 jobs on 9,000 GPUs
// asked for 36 billion entries (a reviewer's allocate was killed at 23 GB)
// and 200 jobs on 300 GPUs took 6 s. Each case bounds the bytes one
// allocation allocates by 32·r·(r·types + GPUs) and a megabyte.
func TestAlloXMemoryFollowsTypes(t *testing.T) {
	for _, tc := range []struct {
		jobs int
		cl   Cluster
	}{
		{60, cluster(500, 500, 500)},
		{40, Cluster{"v100": 2000}},
		{300, cluster(2, 2, 2)}, // more jobs than GPUs: deep queues
	} {
		t.Run(fmt.Sprintf("%d jobs on %v", tc.jobs, tc.cl), func(t *testing.T) {
			tb := t0t1(false)
			pol, err := New("allox")
			if err != nil {
				t.Fatal(err)
			}
			p := &Problem{Table: tb, Cluster: tc.cl, Jobs: alloxJobs(tc.jobs)}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			a, err := pol.Allocate(context.Background(), p)
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			checkFeasible(t, p, a)
			r, gpus := uint64(tc.jobs), uint64(tc.cl.Total())
			limit := 32*r*(r*uint64(len(tc.cl))+gpus) + 1<<20
			if got := after.TotalAlloc - before.TotalAlloc; got > limit {
				t.Fatalf("allocated %d bytes, want at most %d", got, limit)
			}
		})
	}
}

// hungarian gives the textbook method's assignment (textbookHungarian, the
// one it replaced: a second pass over every column each step), ties
// included: AlloX's matrices have whole blocks of equal columns, and which
// of them a job gets decides which job heads a GPU's queue.
func TestHungarianMatchesTextbook(t *testing.T) {
	for seed := int64(0); seed < 600; seed++ {
		r := rand.New(rand.NewSource(seed))
		n := 1 + r.Intn(30)
		m := n + r.Intn(30)
		c := make([][]float64, n)
		for i := range c {
			c[i] = make([]float64, m)
			for j := range c[i] {
				switch seed % 3 {
				case 0:
					c[i][j] = float64(r.Intn(4)) // ties everywhere
				case 1:
					c[i][j] = float64(1+j/7) * float64(1+r.Intn(3)) * 0.1 // AlloX's blocks
				default:
					c[i][j] = r.Float64() * 100
				}
			}
		}
		got, err := hungarian(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if want := textbookHungarian(c); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: %v, the textbook method %v", seed, got, want)
		}
	}
}

// textbookHungarian is the shortest-augmenting-path Hungarian method as
// hungarian had it (e-maxx's form, ties to the lowest column).
func textbookHungarian(cost [][]float64) []int {
	n, m := len(cost), len(cost[0])
	u, v := make([]float64, n+1), make([]float64, m+1)
	p, way := make([]int, m+1), make([]int, m+1)
	minv, used := make([]float64, m+1), make([]bool, m+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		for j := range minv {
			minv[j], used[j] = math.Inf(1), false
		}
		for {
			used[j0] = true
			i0, delta, j1 := p[j0], math.Inf(1), 0
			for j := 1; j <= m; j++ {
				if used[j] {
					continue
				}
				if cur := cost[i0-1][j-1] - u[i0] - v[j]; cur < minv[j] {
					minv[j], way[j] = cur, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= m; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			if j0 = j1; p[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
		}
	}
	out := make([]int, n)
	for j := 1; j <= m; j++ {
		if p[j] > 0 {
			out[p[j]-1] = j - 1
		}
	}
	return out
}
