package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gavelkit/gavel/table"
)

// addJSONSeeds adds the files matching each pattern to f's corpus.
func addJSONSeeds(f *testing.F, patterns ...string) {
	for _, p := range patterns {
		files, err := filepath.Glob(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// FuzzReadReferences checks that ReadReferences never panics, that its errors name the file,
// that what it accepts holds only valid references, and that it reads back the same when
// written as JSON.
func FuzzReadReferences(f *testing.F) {
	addJSONSeeds(f, "../examples/pytorch/refs.json")
	f.Add([]byte(`{"references": [{"name": "a", "command": ["x"], "env": {"A": "1"}, "progress_regex": "step (\\d+)"}, {"name": "b", "scale_factor": 2, "command": ["y", "z"]}]}`))
	f.Add([]byte(`{"references": [{"name": "a", "scale_factor": 0, "command": ["x"]}]}`))
	f.Add([]byte(`{"references": [{"name": "a", "command": ["x"], "env": {"CUDA_VISIBLE_DEVICES": "1"}}]}`))
	f.Add([]byte(`{"references": []}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "refs.json"
		refs, err := ReadReferences(bytes.NewReader(data), file)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "references "+file) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if len(refs.References) == 0 {
			t.Fatal("no references and no error")
		}
		seen := map[string]bool{}
		for _, r := range refs.References {
			if strings.TrimSpace(r.Name) == "" || seen[r.Name] || r.ScaleFactor < 1 || len(r.Command) == 0 || r.Command[0] == "" {
				t.Fatalf("accepted %+v", r)
			}
			if err := (table.JobType{Model: r.Name, ScaleFactor: r.ScaleFactor}).Check(); err != nil {
				t.Fatalf("accepted %+v: %v", r, err)
			}
			seen[r.Name] = true
		}
		out, err := json.Marshal(refs)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ReadReferences(bytes.NewReader(out), "written")
		if err != nil {
			t.Fatalf("re-reading the written references: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, refs) {
			t.Fatalf("round trip changed the references:\n%+v\n%+v", refs, back)
		}
	})
}

// FuzzReadSuggestions checks that ReadSuggestions never panics, that its errors name the file
// and that every suggestion it accepts names a worker type, a job and a partner, with a scale
// factor of at least 1.
func FuzzReadSuggestions(f *testing.F) {
	f.Add([]byte(`{"measurements": [{"worker_type": "v100", "job": "a", "partner": "b", "scale_factor": 1, "reason": "x", "estimate": 0.5}]}`))
	f.Add([]byte(`{"measurements": [{"worker_type": "v100", "job": "a", "partner": "b"}], "notes": []}`))
	f.Add([]byte(`{"measurements": [{"worker_type": "v100", "job": "a", "partner": "b", "scale_factor": 0}]}`))
	f.Add([]byte(`{"measurements": null}`))
	f.Add([]byte(`{"measurements": []} {}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "s.json"
		ss, err := ReadSuggestions(bytes.NewReader(data), file)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "suggestions "+file) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("accepted more than one JSON value: %q", data)
		}
		for _, s := range ss {
			if s.WorkerType == "" || s.Job == "" || s.Partner == "" || s.ScaleFactor < 1 {
				t.Fatalf("accepted %+v", s)
			}
		}
	})
}

// FuzzReadSidecar checks that readSidecar never panics, that its errors name the file and are
// ErrBadSidecar, that what it accepts holds valid records, and that it reads back the same
// when written as Save writes it.
func FuzzReadSidecar(f *testing.F) {
	addJSONSeeds(f, "../examples/pytorch/h200/*.measurements.json", "../examples/pytorch/h200/*/*.measurements.json")
	f.Add([]byte(`{"version": 1, "sharing": "mps", "measurements": [{"worker_type": "v100", "job": "a", "scale_factor": 1, "kind": "pair",
		"partner": "b", "partner_scale_factor": 1, "status": "ok", "rate": 1.5, "gpus": [0]}]}`))
	f.Add([]byte(`{"version": 2}`))
	f.Add([]byte(`{"version": 1, "measurements": [{"worker_type": "v100", "job": "a", "scale_factor": 1, "kind": "refresh", "status": "bad"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "t.measurements.json"
		s, err := readSidecar(bytes.NewReader(data), file)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "sidecar "+file) {
				t.Fatalf("error does not name the file: %v", err)
			}
			if !errors.Is(err, ErrBadSidecar) {
				t.Fatalf("error is not ErrBadSidecar: %v", err)
			}
			return
		}
		for _, m := range s.Measurements {
			if m.WorkerType == "" || m.Job == "" || m.ScaleFactor < 1 || (m.Kind == KindPair && (m.Partner == "" || m.PartnerScaleFactor < 1)) {
				t.Fatalf("accepted %+v", m)
			}
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		back, err := readSidecar(&buf, "written")
		if err != nil {
			t.Fatalf("re-reading the written sidecar: %v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip changed the sidecar:\n%+v\n%+v", s, back)
		}
	})
}

// FuzzParseWorkerTypeOverrides checks that ParseWorkerTypeOverrides never panics and that what
// it accepts maps device indices (or -1, every device) to valid names.
func FuzzParseWorkerTypeOverrides(f *testing.F) {
	for _, s := range []string{"h200", "0=h200,1=a100", " 0 = h200 ", "h200,a100", "-1=x", "0=h200,0=a100", "0=", "a=b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseWorkerTypeOverrides(s)
		if err != nil {
			return
		}
		for i, w := range o {
			if i < -1 || !validName(w) {
				t.Fatalf("%q: accepted %d=%q", s, i, w)
			}
		}
	})
}

// FuzzPlanPartners checks that Plan never panics on a --pairs value and that every pair it
// plans is of known jobs of one scale factor.
func FuzzPlanPartners(f *testing.F) {
	for _, s := range []string{"ref", "ref+other", "job+ref", "ref,other", "a,b+c", "b+c", "x", "ref+other,job", "+", ",", "ref ,+other"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		model := table.JobType{Model: "job", ScaleFactor: 1}
		refs := []table.JobType{{Model: "ref", ScaleFactor: 1}, {Model: "other", ScaleFactor: 1}, {Model: "a,b", ScaleFactor: 1},
			{Model: "b+c", ScaleFactor: 1}, {Model: "big", ScaleFactor: 2}}
		tasks, _, err := Plan(PlanSpec{Model: model, References: refs, WorkerTypes: []string{"v100"}, Partners: []string{v}})
		if err != nil {
			return
		}
		known := map[table.JobType]bool{model: true}
		for _, r := range refs {
			known[r] = true
		}
		for _, tk := range tasks {
			if !known[tk.Job] || tk.IsPair() && (!known[tk.Partner] || tk.Partner.ScaleFactor != tk.Job.ScaleFactor) {
				t.Fatalf("%q: planned %s", v, tk)
			}
		}
	})
}
