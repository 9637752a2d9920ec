package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/gavelkit/gavel/table"
)

// JobsFile is the jobs file of cli-contract.md: optional entities and the jobs.
type JobsFile struct {
	Entities map[string]Entity
	Jobs     []Job
}

type jsonJob struct {
	ID          string   `json:"id"`
	Type        string   `json:"type"`
	ScaleFactor *int     `json:"scale_factor"`
	Weight      *float64 `json:"weight"`
	Entity      string   `json:"entity"`
	TotalSteps  *float64 `json:"total_steps"`
	StepsDone   float64  `json:"steps_done"`
	TimeRun     float64  `json:"time_run_seconds"`
	Arrival     float64  `json:"arrival_seconds"`
	SLO         float64  `json:"slo_seconds"`
}

type jsonJobsFile struct {
	Entities map[string]Entity `json:"entities"`
	Jobs     []jsonJob         `json:"jobs"`
}

// ReadJobs reads a jobs file and checks every entry: ids present and unique,
// scale factor ≥ 1, finite non-negative numbers, steps_done ≤ total_steps,
// entities known with a positive weight and policy "fairness" or "fifo".
func ReadJobs(r io.Reader) (*JobsFile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var jf jsonJobsFile
	if err := dec.Decode(&jf); err != nil {
		return nil, fmt.Errorf("jobs file: %w", err)
	}
	out := &JobsFile{Entities: jf.Entities}
	names := make([]string, 0, len(jf.Entities))
	for name := range jf.Entities {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		e := jf.Entities[name]
		if !(e.Weight > 0) || math.IsInf(e.Weight, 0) {
			return nil, fmt.Errorf("jobs file: entity %q: weight %v must be positive", name, e.Weight)
		}
		if e.Policy == "" {
			e.Policy = EntityFairness
			jf.Entities[name] = e
		}
		if e.Policy != EntityFairness && e.Policy != EntityFIFO {
			return nil, fmt.Errorf("jobs file: entity %q: policy %q: want %q or %q", name, e.Policy, EntityFairness, EntityFIFO)
		}
	}
	if len(jf.Jobs) == 0 {
		return nil, fmt.Errorf("jobs file: no jobs")
	}
	seen := map[string]bool{}
	for i, j := range jf.Jobs {
		where := fmt.Sprintf("jobs file: job %d", i)
		if j.ID != "" {
			where = fmt.Sprintf("jobs file: job %q", j.ID)
		}
		if j.ID == "" {
			return nil, fmt.Errorf("%s: missing id", where)
		}
		if seen[j.ID] {
			return nil, fmt.Errorf("%s: duplicate id", where)
		}
		seen[j.ID] = true
		if j.Type == "" {
			return nil, fmt.Errorf("%s: missing type", where)
		}
		sf := 1
		if j.ScaleFactor != nil {
			sf = *j.ScaleFactor
		}
		if sf < 1 {
			return nil, fmt.Errorf("%s: scale_factor %d must be at least 1", where, sf)
		}
		w := 1.0
		if j.Weight != nil {
			w = *j.Weight
		}
		if !(w > 0) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("%s: weight %v must be positive", where, w)
		}
		if j.Entity != "" && jf.Entities != nil {
			if _, ok := jf.Entities[j.Entity]; !ok {
				return nil, fmt.Errorf("%s: entity %q is not in entities", where, j.Entity)
			}
		}
		if j.Entity != "" && jf.Entities == nil {
			return nil, fmt.Errorf("%s: entity %q given but the file has no entities", where, j.Entity)
		}
		total := 0.0
		if j.TotalSteps != nil {
			total = *j.TotalSteps
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"total_steps", total}, {"steps_done", j.StepsDone}, {"time_run_seconds", j.TimeRun},
			{"arrival_seconds", j.Arrival}, {"slo_seconds", j.SLO}} {
			if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				return nil, fmt.Errorf("%s: %s %v must be finite and non-negative", where, f.name, f.v)
			}
		}
		if j.StepsDone > total {
			return nil, fmt.Errorf("%s: steps_done %v exceeds total_steps %v", where, j.StepsDone, total)
		}
		out.Jobs = append(out.Jobs, Job{
			ID: j.ID, Type: table.JobType{Model: j.Type, ScaleFactor: sf}, Weight: w, Entity: j.Entity,
			TotalSteps: total, StepsDone: j.StepsDone, TimeRun: j.TimeRun, Arrival: j.Arrival, SLO: j.SLO,
		})
	}
	return out, nil
}

// LoadJobs reads a jobs file from path; errors name the file.
func LoadJobs(path string) (*JobsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	jf, err := ReadJobs(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jf, nil
}

// WriteJobs writes jf in the jobs file format.
func WriteJobs(w io.Writer, jf *JobsFile) error {
	out := jsonJobsFile{Entities: jf.Entities}
	for _, j := range jf.Jobs {
		sf := j.Type.ScaleFactor
		wt := j.EffectiveWeight()
		total := j.TotalSteps
		out.Jobs = append(out.Jobs, jsonJob{ID: j.ID, Type: j.Type.Model, ScaleFactor: &sf, Weight: &wt,
			Entity: j.Entity, TotalSteps: &total, StepsDone: j.StepsDone, TimeRun: j.TimeRun, Arrival: j.Arrival, SLO: j.SLO})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
