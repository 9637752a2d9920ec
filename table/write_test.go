package table

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// failAfter is a writer that takes ok writes, then fails every one.
type failAfter struct {
	ok  int
	buf bytes.Buffer
}

var errWrite = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.ok == 0 {
		return 0, errWrite
	}
	f.ok--
	return f.buf.Write(p)
}

// writeOrdered writes every part in order whatever the number of workers, formats each part
// once with an empty buffer, and stops writing at the first failed write.
func TestWriteOrdered(t *testing.T) {
	for _, c := range []struct {
		n, workers, okWrites int
		want                 string
		err                  error
	}{
		{n: 0, workers: 2, okWrites: 10, want: ""},
		{n: 1, workers: 2, okWrites: 10, want: "0;"},
		{n: 5, workers: 1, okWrites: 10, want: "0;1;22;333;4444;"},
		{n: 5, workers: 2, okWrites: 10, want: "0;1;22;333;4444;"},
		{n: 5, workers: 0, okWrites: 10, want: "0;1;22;333;4444;"}, // at least one worker
		{n: 5, workers: 16, okWrites: 10, want: "0;1;22;333;4444;"},
		{n: 5, workers: 2, okWrites: 2, want: "0;1;", err: errWrite},
		{n: 5, workers: 2, okWrites: 0, want: "", err: errWrite},
	} {
		name := fmt.Sprintf("n=%d,workers=%d,ok=%d", c.n, c.workers, c.okWrites)
		formatted := make([]int, c.n)
		w := &failAfter{ok: c.okWrites}
		err := writeOrdered(w, c.n, c.workers, func(buf []byte, p int, scratch *int) []byte {
			if len(buf) != 0 {
				t.Errorf("%s: part %d given %q, want an empty buffer", name, p, buf)
			}
			formatted[p]++
			*scratch++ // each goroutine its own: the race detector would see sharing
			return fmt.Appendf(buf, "%s;", strings.Repeat(fmt.Sprint(p), max(p, 1)))
		})
		if !errors.Is(err, c.err) {
			t.Errorf("%s: error %v, want %v", name, err, c.err)
		}
		if got := w.buf.String(); got != c.want {
			t.Errorf("%s: wrote %q, want %q", name, got, c.want)
		}
		for p, k := range formatted {
			if k != 1 {
				t.Errorf("%s: part %d formatted %d times, want once", name, p, k)
			}
		}
	}
}

// A table with more job types than one part of writeWorker holds is written with its rows in
// order, as a row-by-row writer would.
func TestWriteManyRows(t *testing.T) {
	tb := New()
	var jobs []JobType
	for x := range 3*rowsPerPart + 5 {
		j := JobType{fmt.Sprintf("job-%03d", x), 1}
		jobs = append(jobs, j)
		tb.SetIsolated("v100", j, float64(x+1))
	}
	for x, a := range jobs {
		for _, b := range jobs[x:] {
			if (x+len(b.Model))%3 != 0 {
				tb.SetPair("v100", a, b, 0.5, 0.25)
			}
		}
	}
	var buf bytes.Buffer
	if err := tb.Write(&buf); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	want.WriteString("{\n    \"v100\": {")
	for x, a := range jobs {
		if x > 0 {
			want.WriteString(",")
		}
		fmt.Fprintf(&want, "\n        %q: {\n            \"null\": %d", a.Key(), x+1)
		for _, b := range tb.Partners("v100", a) {
			ra, rb, _ := tb.Pair("v100", a, b)
			fmt.Fprintf(&want, ",\n            %q: [%v, %v]", b.Key(), ra, rb)
		}
		want.WriteString("\n        }")
	}
	want.WriteString("\n    }\n}\n")
	if buf.String() != want.String() {
		t.Errorf("wrote\n%.2000s\nwant\n%.2000s", buf.String(), want.String())
	}
	back, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(tb) {
		t.Error("the table read back differs")
	}
}

// FillPairs sets what SetPair in a loop over worker types and pairs i ≤ k sets, whatever the
// table held before, and makes no worker type for which nothing is set.
func TestFillPairs(t *testing.T) {
	jobs := []JobType{lm, resnet, lm2}
	base := func() *Table {
		tb := New()
		tb.SetIsolated("k80", lm, 1)
		tb.SetPair("k80", lm, resnet, 0.5, 0.25) // overwritten where rates sets it
		tb.SetInfeasible("k80", resnet, resnet)
		return tb
	}
	none := func(w, i, k int) (float64, float64, bool) { return 0, 0, false }
	every := func(w, i, k int) (float64, float64, bool) {
		return float64(10*w + i), float64(10*w + k), true
	}
	someInfeasible := func(w, i, k int) (float64, float64, bool) {
		if (i+k)%2 == 0 {
			return 0, 0, true // infeasible, self pairs included
		}
		return 1, 2, w == 0
	}
	for _, c := range []struct {
		name    string
		workers []string
		rates   func(w, i, k int) (float64, float64, bool)
	}{
		{"nothing set", []string{"k80", "v100"}, none},
		{"every pair", []string{"k80", "v100"}, every},
		{"some infeasible, one worker type", []string{"v100", "k80"}, someInfeasible},
		{"no worker types", nil, every},
	} {
		got, want := base(), base()
		got.FillPairs(c.workers, jobs, c.rates)
		for w, wt := range c.workers {
			for i := range jobs {
				for k := i; k < len(jobs); k++ {
					if ra, rb, ok := c.rates(w, i, k); ok {
						want.SetPair(wt, jobs[i], jobs[k], ra, rb)
					}
				}
			}
		}
		if !got.Equal(want) || !slices.Equal(got.WorkerTypes(), want.WorkerTypes()) {
			t.Errorf("%s: FillPairs gives %v, SetPair %v", c.name, dump(got), dump(want))
		}
	}
}

// dump lists a table's pairs for messages.
func dump(tb *Table) string {
	var b strings.Builder
	for _, w := range tb.WorkerTypes() {
		for _, a := range tb.JobTypes() {
			for _, k := range tb.Partners(w, a) {
				ra, rb, _ := tb.Pair(w, a, k)
				fmt.Fprintf(&b, "%s %s %s [%v %v]; ", w, a, k, ra, rb)
			}
		}
	}
	return b.String()
}

func TestFillPairsRepeatedWorkerType(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("FillPairs with a worker type given twice did not panic")
		}
	}()
	New().FillPairs([]string{"k80", "k80"}, []JobType{lm}, func(w, i, k int) (float64, float64, bool) { return 1, 1, true })
}
