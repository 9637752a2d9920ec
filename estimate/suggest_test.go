package estimate

import (
	"fmt"
	"math"
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
	ms, err := Suggest(d, r, 4)
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
