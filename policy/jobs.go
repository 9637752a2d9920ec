package policy

import (
	"bytes"
	"encoding/json"
	"errors"
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

// ReadJobs reads a jobs file and checks every entry: id, type and
// total_steps present (scale_factor defaults to 1, weight to 1), ids
// unique and free of '+' (it joins pair ids), scale factor ≥ 1, finite non-negative numbers, steps_done ≤ total_steps,
// entities known with a positive weight and policy "fairness" or "fifo".
// Errors name the entry: jobs[i] (its position in the file) and its id.
func ReadJobs(r io.Reader) (*JobsFile, error) { return readJobs(r, "jobs file") }

// LoadJobs reads a jobs file from path; errors name the file and the entry.
func LoadJobs(path string) (*JobsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readJobs(f, path)
}

// readJobs is ReadJobs with the name errors start with.
func readJobs(r io.Reader, name string) (*JobsFile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Jobs are decoded one by one so that an error can name its entry.
	var raw struct {
		Entities map[string]Entity `json:"entities"`
		Jobs     []json.RawMessage `json:"jobs"`
	}
	if err := strictDecode(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %s%w", name, position(data, err), err)
	}
	if err := checkEntities(raw.Entities); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(raw.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs", name)
	}
	out := &JobsFile{Entities: raw.Entities}
	seen := map[string]bool{}
	for i, msg := range raw.Jobs {
		j, err := readJob(msg, raw.Entities, seen)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, entryName(i, msg), err)
		}
		out.Jobs = append(out.Jobs, j)
	}
	return out, nil
}

func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// position returns "line L, column C: " for JSON errors that carry an offset.
func position(data []byte, err error) string {
	var off int64
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset - 1 // Offset counts the offending byte
	case errors.As(err, &typ):
		off = typ.Offset
	default:
		return ""
	}
	before := data[:min(max(int(off), 0), len(data))]
	line := 1 + bytes.Count(before, []byte("\n"))
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d: ", line, col)
}

// entryName is "jobs[i]", with the id when the entry has a readable one.
func entryName(i int, msg json.RawMessage) string {
	var id struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(msg, &id) == nil && id.ID != "" {
		return fmt.Sprintf("jobs[%d] (id %q)", i, id.ID)
	}
	return fmt.Sprintf("jobs[%d]", i)
}

// checkEntities checks the entities (sorted, so the first error is stable)
// and fills in the default policy, fairness.
func checkEntities(es map[string]Entity) error {
	names := make([]string, 0, len(es))
	for name := range es {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		e := es[name]
		if !(e.Weight > 0) || math.IsInf(e.Weight, 0) {
			return fmt.Errorf("entity %q: weight %v must be positive", name, e.Weight)
		}
		if e.Policy == "" {
			e.Policy = EntityFairness
			es[name] = e
		}
		if e.Policy != EntityFairness && e.Policy != EntityFIFO {
			return fmt.Errorf("entity %q: policy %q: want %q or %q", name, e.Policy, EntityFairness, EntityFIFO)
		}
	}
	return nil
}

// readJob decodes and checks one entry of "jobs".
func readJob(msg json.RawMessage, entities map[string]Entity, seen map[string]bool) (Job, error) {
	var j jsonJob
	if err := strictDecode(msg, &j); err != nil {
		return Job{}, err
	}
	if j.ID == "" {
		return Job{}, errors.New("missing id")
	}
	if err := checkID(j.ID); err != nil {
		return Job{}, err
	}
	if seen[j.ID] {
		return Job{}, errors.New("duplicate id")
	}
	seen[j.ID] = true
	if j.Type == "" {
		return Job{}, errors.New("missing type")
	}
	sf := 1
	if j.ScaleFactor != nil {
		sf = *j.ScaleFactor
	}
	if sf < 1 {
		return Job{}, fmt.Errorf("scale_factor %d must be at least 1", sf)
	}
	w := 1.0
	if j.Weight != nil {
		w = *j.Weight
	}
	if !(w > 0) || math.IsInf(w, 0) {
		return Job{}, fmt.Errorf("weight %v must be positive", w)
	}
	if j.Entity != "" {
		if entities == nil {
			return Job{}, fmt.Errorf("entity %q given but the file has no entities", j.Entity)
		}
		if _, ok := entities[j.Entity]; !ok {
			return Job{}, fmt.Errorf("entity %q is not in entities", j.Entity)
		}
	}
	if j.TotalSteps == nil {
		return Job{}, errors.New("missing total_steps (the job's length in steps)")
	}
	total := *j.TotalSteps
	for _, f := range []struct {
		name string
		v    float64
	}{{"total_steps", total}, {"steps_done", j.StepsDone}, {"time_run_seconds", j.TimeRun},
		{"arrival_seconds", j.Arrival}, {"slo_seconds", j.SLO}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return Job{}, fmt.Errorf("%s %v must be finite and non-negative", f.name, f.v)
		}
	}
	if j.StepsDone > total {
		return Job{}, fmt.Errorf("steps_done %v exceeds total_steps %v", j.StepsDone, total)
	}
	return Job{ID: j.ID, Type: table.JobType{Model: j.Type, ScaleFactor: sf}, Weight: w, Entity: j.Entity,
		TotalSteps: total, StepsDone: j.StepsDone, TimeRun: j.TimeRun, Arrival: j.Arrival, SLO: j.SLO}, nil
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
