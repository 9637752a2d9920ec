//go:build cgo && unix

package lp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"
)

// packedLP is shaped like policy's packed max-min LPs, which it solves with the barrier:
// n jobs on three worker types, a column for each job and each pair of jobs on each type,
// and the epigraph column t, maximized. At n=384 it has 221,761 columns; the barrier takes
// 7-12 s on two loaded cores, 1.5 s of CPU of it before its first iteration.
func packedLP(n int, seed uint64) *Model {
	rng := rand.New(rand.NewPCG(seed, 2))
	const types = 3
	workers := math.Max(4, math.Round(36*float64(n)/128))
	rate := make([][types]float64, n)
	for i := range rate {
		slow := 1 + rng.Float64()
		mid := slow * (1.5 + 2.5*rng.Float64())
		rate[i] = [types]float64{slow, mid, math.Min(10, mid*(1.2+1.3*rng.Float64()))}
	}
	share := math.Min(1, types*workers/float64(n))
	m := NewModel(Maximize)
	t := m.AddCol(0, Inf, 1)
	thr, job := make([]int, n), make([]int, n)
	for i := range n { // t·(equal share) ≤ the job's throughput
		thr[i] = m.AddRow(-Inf, 0, []int{t}, []float64{(rate[i][0] + rate[i][1] + rate[i][2]) / types * share})
	}
	for i := range n { // a job runs at most all the time
		job[i] = m.AddRow(-Inf, 1, nil, nil)
	}
	var capacity [types]int
	for w := range capacity {
		capacity[w] = m.AddRow(-Inf, workers, nil, nil)
	}
	for i := range n {
		for w := range types {
			m.AddColumn(0, Inf, 0, []int{thr[i], job[i], capacity[w]}, []float64{-rate[i][w], 1, 1})
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			for w := range types {
				f, g := 0.3+0.6*rng.Float64(), 0.3+0.6*rng.Float64()
				m.AddColumn(0, Inf, 0, []int{thr[i], thr[j], job[i], job[j], capacity[w]},
					[]float64{-rate[i][w] * f, -rate[j][w] * g, 1, 1, 1})
			}
		}
	}
	return m
}

// marketSplit is a market split MILP (Cornuéjols and Dawande): rows equations over cols
// binaries with coefficients in [0, 99] and right-hand sides half their sums, each with a
// slack of either sign, whose sum is minimized. Branch and bound needs millions of nodes:
// CBC takes about 30 s at 4×30, with or without its cuts and heuristics.
func marketSplit(rows, cols int, seed uint64) *Model {
	rng := rand.New(rand.NewPCG(seed, 3))
	m := NewModel(Minimize)
	x := make([]int, cols)
	for j := range x {
		x[j] = m.AddCol(0, 1, 0)
		m.SetInteger(x[j])
	}
	for range rows {
		val := make([]float64, cols, cols+2)
		sum := 0.0
		for j := range val {
			val[j] = float64(rng.IntN(100))
			sum += val[j]
		}
		idx := append(slices.Clone(x), m.AddCol(0, Inf, 1), m.AddCol(0, Inf, 1))
		rhs := math.Floor(sum / 2)
		m.AddRow(rhs, rhs, idx, append(val, 1, -1))
	}
	return m
}

// stopCase is a solve to stop: by cancelling its context, or by the context's deadline.
type stopCase struct {
	name     string
	deadline bool
	solve    func(context.Context) (*Result, error)
}

// cpuTime is the CPU time this process has used, all its threads (COIN's included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// stopsPromptly runs tc, stops it after at and checks that it failed with the context's
// error (a deadline's also matching ErrTimeLimit) having used at most bound of CPU time
// after the stop: the solver stopped, where it would have run on for seconds. CPU time, not
// the wall clock's, so that other processes on the machine do not make the test fail; the
// wall clock's delay is logged. It skips when the solve finished before the stop.
func stopsPromptly(t *testing.T, tc stopCase, at, bound time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	want := context.Canceled
	if tc.deadline {
		ctx, cancel = context.WithTimeout(context.Background(), at)
		want = context.DeadlineExceeded
	} else {
		time.AfterFunc(at, cancel)
	}
	defer cancel()
	type stamp struct {
		wall time.Time
		cpu  time.Duration
	}
	stopped := make(chan stamp, 1)
	context.AfterFunc(ctx, func() { stopped <- stamp{time.Now(), cpuTime()} })
	r, err := tc.solve(ctx)
	end := stamp{time.Now(), cpuTime()}
	var stop stamp
	if err != nil {
		// Stopped, or failing otherwise (the check below says): ctx is done or will be (at),
		// and its AfterFunc may not have stamped yet.
		stop = <-stopped
	} else {
		select {
		case stop = <-stopped:
		default:
			t.Skipf("%s: solved before the stop at %v", tc.name, at)
		}
	}
	if !errors.Is(err, want) || (tc.deadline && !errors.Is(err, ErrTimeLimit)) {
		t.Fatalf("%s: %v, %v; want %v", tc.name, r, err, want)
	}
	cpu, wall := end.cpu-stop.cpu, end.wall.Sub(stop.wall)
	if cpu > bound {
		t.Errorf("%s: used %v of CPU (%v of wall clock) after the stop at %v, want at most %v: %v", tc.name, cpu, wall, at, bound, err)
	}
	t.Logf("%s: returned %v after the stop (%v of CPU): %v", tc.name, wall, cpu, err)
}

// A cancelled context, or its deadline, stops a barrier solve at the end of the barrier
// iteration in progress. CLP iterates on an internal copy of the model (the presolved one,
// lent to a ClpInterior), which the iteration limit set on the model once the solve began
// does not reach; the model's event handler, which the copies clone, does (stop.cpp).
// Stopped at 2 s, before the fix a cancelled solve ran on to its end (7-12 s), using 5 s
// of CPU and more after the stop; now at most what is left of the 1.5 s before the first
// iteration. A session stopped so solves again.
func TestCancelStopsBarrier(t *testing.T) {
	if testing.Short() {
		t.Skip("barrier solves of several seconds")
	}
	m := packedLP(384, 1)
	s, err := NewSession(m)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	barrier := func(ctx context.Context) (*Result, error) { return COIN{}.Solve(ctx, m, Options{Method: Barrier}) }
	for _, tc := range []stopCase{
		{"cancelled", false, barrier},
		{"deadline", true, barrier},
		{"session", false, func(ctx context.Context) (*Result, error) { return s.Solve(ctx, Options{Method: Barrier}) }},
	} {
		stopsPromptly(t, tc, 2*time.Second, 2*time.Second)
	}
	// The session's next solve (primal simplex from where the barrier stopped, too long to
	// finish here) is not stopped at once: its flag and iteration limit were put back.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	t0 := time.Now()
	if _, err := s.Solve(ctx, Options{}); !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) < 500*time.Millisecond {
		t.Errorf("session after a stopped barrier solve: %v after %v, want its 1 s deadline", err, time.Since(t0))
	}
	// A smaller session stopped in its barrier solve finds the optimum afterwards.
	small := packedLP(128, 2)
	fresh, err := COIN{}.Solve(context.Background(), small, Options{Method: Barrier})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := NewSession(small)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(time.Duration(fresh.Seconds*float64(time.Second))/3, cancel)
	if _, err := ss.Solve(ctx, Options{Method: Barrier}); !errors.Is(err, context.Canceled) {
		t.Logf("the small session's barrier solve was not stopped (%v): too quick", err)
	}
	if r, err := ss.Solve(context.Background(), Options{}); err != nil || !near(r.Objective, fresh.Objective) {
		t.Errorf("small session after a stopped barrier solve: %v %v, want objective %v", r, err, fresh.Objective)
	}
}

// A cancelled context, or its deadline, stops CBC's branch and bound at its next node (its
// event handler, stop.cpp), within milliseconds: the solve ran to its end before (30 s,
// bounded by no budget here). CBC solves as before afterwards, and SIGINT's handler is Go's
// again.
func TestCancelStopsCBC(t *testing.T) {
	if testing.Short() {
		t.Skip("MILPs of many seconds, stopped after one")
	}
	knap := knapsack(24, 101)
	before, err := COIN{}.Solve(context.Background(), knap, Options{Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	m := marketSplit(4, 30, 1)
	milp := func(opt Options) func(context.Context) (*Result, error) {
		return func(ctx context.Context) (*Result, error) { return COIN{}.Solve(ctx, m, opt) }
	}
	for _, tc := range []stopCase{
		{"cancelled", false, milp(Options{})},
		{"plain", false, milp(Options{Plain: true})},
		{"deadline", true, milp(Options{})},
	} {
		stopsPromptly(t, tc, time.Second, time.Second)
	}
	after, err := COIN{}.Solve(context.Background(), knap, Options{Plain: true})
	if err != nil || after.Objective != before.Objective || !slices.Equal(after.X, before.X) || after.Nodes != before.Nodes {
		t.Errorf("knapsack after stopped MILPs: %+v %v, want %+v", after, err, before)
	}
	if !sigintHasGoFlags() {
		t.Errorf("after stopped MILPs SIGINT's handler lacks Go's flags")
	}
}

// A MILP waiting for its turn (CBC solves one at a time) gives up when its context is
// cancelled, without waiting for the solve before it.
func TestCancelWhileWaitingForCBC(t *testing.T) {
	if testing.Short() {
		t.Skip("a MILP of many seconds")
	}
	m := marketSplit(4, 30, 1)
	first, stopFirst := context.WithCancel(context.Background())
	defer stopFirst()
	time.AfterFunc(8*time.Second, stopFirst) // if the second solve waits for the first
	done := make(chan error, 1)
	go func() {
		_, err := COIN{}.Solve(first, m, Options{Plain: true})
		done <- err
	}()
	for len(cbcTurn) == 0 { // the first solve has its turn
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err := COIN{}.Solve(ctx, knapsack(24, 101), Options{Plain: true})
	if took := time.Since(t0); !errors.Is(err, context.DeadlineExceeded) || took > 2*time.Second {
		t.Errorf("waiting for CBC: %v after %v, want context.DeadlineExceeded after 0.5 s", err, took)
	}
	stopFirst()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("first solve: %v, want context.Canceled", err)
	}
}
