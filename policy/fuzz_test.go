package policy

import (
	"bytes"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

// FuzzReadJobs checks that ReadJobsNamed never panics, that its errors name the file, that
// every job it accepts is in range, and that what it accepts reads back the same after
// WriteJobs.
func FuzzReadJobs(f *testing.F) {
	for _, s := range []string{"../examples/jobs.json", "../examples/partial.json", "testdata/wf_min_jobs.json"} {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"jobs": [{"id": "a", "type": "A", "total_steps": 10, "steps_done": 2.5, "weight": 0.5, "slo_seconds": 100,
		"time_run_seconds": 3, "arrival_seconds": 1e9}]}`))
	f.Add([]byte(`{"entities": {"e": {}, "f": {"weight": 0.001, "policy": "fifo"}}, "jobs": [{"id": "a", "type": "A", "entity": "e", "total_steps": 1}]}`))
	f.Add([]byte(`{"jobs": [{"id": "a+b", "type": "A", "total_steps": 1}]}`))
	f.Add([]byte(`{"jobs": [{"id": "a", "type": "A", "total_steps": 1, "scale_factor": 0}]}`))
	f.Add([]byte(`{"jobs": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "in.json"
		jf, err := ReadJobsNamed(bytes.NewReader(data), name)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		checkJobsFile(t, jf)
		var buf bytes.Buffer
		if err := WriteJobs(&buf, jf); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJobs(&buf)
		if err != nil {
			t.Fatalf("re-reading the written jobs file: %v\n%s", err, buf.String())
		}
		if len(back.Jobs) != len(jf.Jobs) || !reflect.DeepEqual(back.Entities, jf.Entities) {
			t.Fatalf("round trip changed the file:\n%+v\n%+v", jf, back)
		}
		for i, j := range jf.Jobs {
			b := back.Jobs[i]
			j.Weight, b.Weight = j.EffectiveWeight(), b.EffectiveWeight()
			if b != j {
				t.Fatalf("job %d changed in a round trip:\n%+v\n%+v", i, j, b)
			}
		}
	})
}

// checkJobsFile fails when a jobs file read holds what ReadJobs's doc forbids.
func checkJobsFile(t *testing.T, jf *JobsFile) {
	t.Helper()
	if len(jf.Jobs) == 0 {
		t.Fatal("no jobs and no error")
	}
	for name, e := range jf.Entities {
		if CheckWeight(e.Weight) != nil || (e.Policy != EntityFairness && e.Policy != EntityFIFO) {
			t.Fatalf("entity %q: %+v", name, e)
		}
	}
	seen := map[string]bool{}
	for _, j := range jf.Jobs {
		for _, v := range []float64{j.TotalSteps, j.StepsDone, j.TimeRun, j.Arrival, j.SLO} {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("job %q: %+v", j.ID, j)
			}
		}
		_, known := jf.Entities[j.Entity]
		switch {
		case j.ID == "" || strings.Contains(j.ID, "+") || seen[j.ID]:
			t.Fatalf("job id %q", j.ID)
		case j.Type.Model == "" || j.Type.ScaleFactor < 1:
			t.Fatalf("job %q: type %+v", j.ID, j.Type)
		case CheckWeight(j.EffectiveWeight()) != nil:
			t.Fatalf("job %q: weight %v", j.ID, j.Weight)
		case j.StepsDone >= j.TotalSteps:
			t.Fatalf("job %q: steps done %v of %v", j.ID, j.StepsDone, j.TotalSteps)
		case j.Entity != "" && !known:
			t.Fatalf("job %q: entity %q", j.ID, j.Entity)
		}
		seen[j.ID] = true
	}
}

// FuzzParseCluster checks that ParseCluster never panics, that what it accepts has worker
// types (trimmed, without ',' or '=') and non-negative counts, and that String reads back the
// same cluster.
func FuzzParseCluster(f *testing.F) {
	for _, s := range []string{"v100=8,p100=16,k80=24", " v100 = 8 ", "v100=0", "v100=-1", "v100=1,v100=2", "=1", "a=b=1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCluster(s)
		if err != nil {
			return
		}
		for w, n := range c {
			if w == "" || strings.TrimSpace(w) != w || strings.ContainsAny(w, ",=") || n < 0 {
				t.Fatalf("%q: accepted %q=%d", s, w, n)
			}
		}
		back, err := ParseCluster(c.String())
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("%q: String %q read back as %v, %v", s, c.String(), back, err)
		}
	})
}

// FuzzParsePrices checks that ParsePrices never panics and that what it accepts is finite and
// not negative.
func FuzzParsePrices(f *testing.F) {
	for _, s := range []string{"v100=2.48,p100=1.46,k80=0.45", "v100=NaN", "v100=Inf", "v100=-0", "v100=1e309", "v100=0x1p-2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePrices(s)
		if err != nil {
			return
		}
		for w, v := range p {
			if w == "" || strings.TrimSpace(w) != w || !(v >= 0) || math.IsInf(v, 0) {
				t.Fatalf("%q: accepted %q=%v", s, w, v)
			}
		}
	})
}
