package rounds

import (
	"bytes"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/policy"
)

// checkTraceJob fails when a job that a trace reader accepted holds a value the trace format
// forbids: an empty or untrimmed type, a scale factor below 1, steps that are not a positive
// whole number, a weight CheckWeight refuses, a negative or non-finite arrival or SLO.
func checkTraceJob(t *testing.T, j TraceJob) {
	t.Helper()
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	switch {
	case j.Type.Model == "" || strings.TrimSpace(j.Type.Model) != j.Type.Model:
		t.Fatalf("job %q: type %q", j.ID, j.Type.Model)
	case j.Type.ScaleFactor < 1:
		t.Fatalf("job %q: scale factor %d", j.ID, j.Type.ScaleFactor)
	case !finite(j.TotalSteps) || j.TotalSteps <= 0:
		t.Fatalf("job %q: total steps %v", j.ID, j.TotalSteps)
	case policy.CheckWeight(j.EffectiveWeight()) != nil:
		t.Fatalf("job %q: weight %v", j.ID, j.Weight)
	case !finite(j.Arrival) || j.Arrival < 0:
		t.Fatalf("job %q: arrival %v", j.ID, j.Arrival)
	case !finite(j.SLOFactor) || j.SLOFactor < 0, !finite(j.SLO) || j.SLO < 0:
		t.Fatalf("job %q: SLO factor %v, SLO %v", j.ID, j.SLOFactor, j.SLO)
	case !finite(j.StepsDone) || j.StepsDone < 0 || j.StepsDone >= j.TotalSteps:
		t.Fatalf("job %q: steps done %v of %v", j.ID, j.StepsDone, j.TotalSteps)
	}
}

// FuzzReadTrace checks that ReadTrace never panics, that its errors name the file, that what
// it accepts is in range, and that a Gavel trace it accepts reads back the same after
// FormatTrace.
func FuzzReadTrace(f *testing.F) {
	for _, s := range []string{"testdata/worked_example.trace", "../examples/worked_example.trace", "../examples/jobs.json",
		"../policy/testdata/wf_min_jobs.json"} {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("A\t\t\t\t0\t100\t1\t0.5\t2.5\t10.25\n\nB \t\t\t\t1\t1e3\t2\t1\t-1\t0\r\n"))
	f.Add([]byte("A\t\t\t\t0\t100\t1\t1\t1.2345678901\t0\n"))
	f.Add([]byte("A\t\t\t\t0\t1e300\t1\t1\t-1\t0\n"))
	f.Add([]byte(`{"jobs": [{"id": "a", "type": "A", "total_steps": 10, "steps_done": 2, "weight": 0.5, "slo_seconds": 100}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "in.trace"
		jobs, _, err := ReadTrace(bytes.NewReader(data), name)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(jobs) == 0 {
			t.Fatal("no jobs and no error")
		}
		for _, j := range jobs {
			checkTraceJob(t, j)
		}
		if jobs[0].Line == 0 {
			return // a jobs file: policy's fuzzer round-trips those
		}
		var buf bytes.Buffer
		if err := FormatTrace(&buf, jobs); err != nil {
			t.Fatal(err)
		}
		back, err := ParseTrace(bytes.NewReader(buf.Bytes()), "written")
		if err != nil {
			t.Fatalf("re-reading the written trace: %v\n%s", err, buf.String())
		}
		if len(back) != len(jobs) {
			t.Fatalf("%d jobs read back, want %d", len(back), len(jobs))
		}
		for i, j := range jobs {
			b := back[i]
			if b.ID != j.ID || b.Type != j.Type || b.TotalSteps != j.TotalSteps || b.EffectiveWeight() != j.EffectiveWeight() ||
				b.Arrival != j.Arrival || b.SLOFactor != j.SLOFactor {
				t.Fatalf("job %d changed in a round trip:\n%+v\n%+v\nwritten:\n%s", i, j, b, buf.String())
			}
		}
	})
}

// FuzzParseGPUsPerServer checks that ParseGPUsPerServer never panics and that what it accepts
// holds worker types, trimmed and not empty, with at least one GPU per server.
func FuzzParseGPUsPerServer(f *testing.F) {
	for _, s := range []string{"v100=4,p100=4,k80=4", "", " v100 = 2 ", "v100=0", "v100=1,v100=2", "=3", "a=b=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseGPUsPerServer(s)
		if err != nil {
			return
		}
		for w, n := range m {
			if w == "" || strings.TrimSpace(w) != w || strings.Contains(w, ",") || n < 1 {
				t.Fatalf("%q: accepted %q=%d", s, w, n)
			}
		}
	})
}

// TestFormatTraceLargeSteps: ParseTrace takes any whole number of steps, 1e300 too; FormatTrace
// wrote it through int64, as -9223372036854775808, which ParseTrace refuses.
func TestFormatTraceLargeSteps(t *testing.T) {
	in := "A\t\t\t\t0\t1e300\t1\t1\t-1\t0\n"
	jobs, err := ParseTrace(strings.NewReader(in), "t")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := FormatTrace(&buf, jobs); err != nil {
		t.Fatal(err)
	}
	back, err := ParseTrace(&buf, "written")
	if err != nil {
		t.Fatal(err)
	}
	if back[0].TotalSteps != 1e300 {
		t.Errorf("total steps read back %v, want 1e300", back[0].TotalSteps)
	}
}
