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
	"strings"

	"github.com/gavelkit/gavel/internal/jsonfile"
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
// unique and free of '+' (it joins pair ids), scale factor ≥ 1, weight within
// MinWeight..MaxWeight, finite non-negative numbers, steps_done < total_steps,
// entities known with a weight CheckWeight takes and policy "fairness" or "fifo".
// Errors name the entry: jobs[i] (its position in the file) and its id;
// JSON that does not parse is named by line and column.
func ReadJobs(r io.Reader) (*JobsFile, error) { return readJobs(r, "jobs file", false) }

// LoadJobs reads a jobs file from path; errors name the file and the entry,
// or path:line:column for JSON that does not parse.
func LoadJobs(path string) (*JobsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadJobsNamed(f, path)
}

// ReadJobsNamed reads a jobs file from r as LoadJobs reads one from a file
// called name (such as "stdin"): errors start with name, and JSON that does
// not parse is placed at name:line:column.
func ReadJobsNamed(r io.Reader, name string) (*JobsFile, error) {
	return readJobs(r, name, true)
}

// jobsShape is what a jobs file must look like, for errors about its shape.
const jobsShape = `want an object with "jobs": [...] (and optionally "entities": {...})`

// readJobs is ReadJobs with the name errors start with; isPath says name
// is a file, so that positions read path:line:column.
func readJobs(r io.Reader, name string, isPath bool) (*JobsFile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Jobs are decoded one by one so that an error can name its entry.
	var raw struct {
		Entities map[string]jsonEntity `json:"entities"`
		Jobs     []json.RawMessage     `json:"jobs"`
	}
	if err := jsonfile.Decode(data, &raw); err != nil {
		return nil, fileJSONError(name, isPath, data, err.(*jsonfile.Error))
	}
	entities := fileEntities(raw.Entities)
	if err := checkEntities(entities); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(raw.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs (%s)", name, jobsShape)
	}
	out := &JobsFile{Entities: entities}
	seen := map[string]bool{}
	for i, msg := range raw.Jobs {
		j, err := readJob(msg, entities, seen)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, entryName(i, msg), err)
		}
		out.Jobs = append(out.Jobs, j)
	}
	return out, nil
}

// fileJSONError places e, from decoding the whole file data, in the file (name:line:column, or
// "name: line L, column C" when name is not a path) and says what a jobs file must look like
// where its shape is wrong.
func fileJSONError(name string, isPath bool, data []byte, e *jsonfile.Error) error {
	switch {
	case e.Type != nil:
		e.Msg = shapeMessage(e.Type)
	case e.UnknownField != "" && !topLevelKey(data, e.UnknownField):
		// Jobs are decoded one by one, so a field the file-level decode refuses below the
		// top is an entity's: the file's shape was the wrong hint for it.
		e.Msg += ` in an entity (want name: {"weight": number, "policy": "fairness" or "fifo"})`
	case e.Offset < 0 || e.UnknownField != "":
		e.Msg += " (" + jobsShape + ")" // empty, or an unknown field
	}
	if isPath || e.Offset < 0 {
		return e.In(name, data)
	}
	line, col := jsonfile.Position(data, e.Offset)
	return fmt.Errorf("%s: line %d, column %d: %s", name, line, col, e.Msg)
}

// topLevelKey reports whether the JSON object data has key at its top level.
func topLevelKey(data []byte, key string) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return true // not an object: whatever it is, the file's shape is the hint
	}
	_, ok := top[key]
	return ok
}

// shapeMessage says which part of a jobs file has the wrong kind of value.
func shapeMessage(e *json.UnmarshalTypeError) string {
	got := jsonfile.Got(e.Value)
	switch {
	case e.Field == "":
		return fmt.Sprintf("%s, got %s", jobsShape, got)
	case e.Field == "jobs":
		return fmt.Sprintf(`"jobs": want an array of job objects, got %s`, got)
	case e.Field == "entities":
		return fmt.Sprintf(`"entities": want an object of name: {"weight": number, "policy": "fairness" or "fifo"}, got %s`, got)
	case strings.HasPrefix(e.Field, "entities."):
		return fmt.Sprintf(`"entities": an entity's %q: want %s, got %s`, strings.TrimPrefix(e.Field, "entities."), jsonfile.Kind(e.Type), got)
	}
	return fmt.Sprintf("%q: want %s, got %s", e.Field, jsonfile.Kind(e.Type), got)
}

// jobJSONError describes an error decoding one entry of "jobs" in terms of a job object.
func jobJSONError(e *jsonfile.Error) error {
	switch {
	case e.Type == nil:
		return errors.New(e.Msg)
	case e.Type.Field == "":
		return fmt.Errorf("want a job object {\"id\", \"type\", \"total_steps\", ...}, got %s", jsonfile.Got(e.Type.Value))
	}
	return fmt.Errorf("%q: want %s, got %s", e.Type.Field, jsonfile.Kind(e.Type.Type), jsonfile.Got(e.Type.Value))
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

// jsonEntity is an entity as a jobs file gives it: a weight left out is 1, as a job's is (an
// explicit 0 stays 0, an error).
type jsonEntity struct {
	Weight *float64 `json:"weight"`
	Policy string   `json:"policy"`
}

// fileEntities returns es with the weights left out set to 1; nil for none.
func fileEntities(es map[string]jsonEntity) map[string]Entity {
	if es == nil {
		return nil
	}
	out := make(map[string]Entity, len(es))
	for name, e := range es {
		w := 1.0
		if e.Weight != nil {
			w = *e.Weight
		}
		out[name] = Entity{Weight: w, Policy: e.Policy}
	}
	return out
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
		if err := CheckWeight(e.Weight); err != nil {
			return fmt.Errorf("entity %q: %w", name, err)
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
	if err := jsonfile.Decode(msg, &j); err != nil {
		return Job{}, jobJSONError(err.(*jsonfile.Error))
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
	if err := CheckWeight(w); err != nil {
		return Job{}, err
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
	switch {
	case j.StepsDone > total:
		return Job{}, fmt.Errorf("steps_done %v exceeds total_steps %v", j.StepsDone, total)
	case j.StepsDone == total:
		// A policy would give such a job GPU time it cannot use (FIFO its whole share).
		return Job{}, fmt.Errorf("no steps left to run (steps_done %v of total_steps %v): leave finished jobs out", j.StepsDone, total)
	}
	return Job{ID: j.ID, Type: table.JobType{Model: j.Type, ScaleFactor: sf}, Weight: w, Entity: j.Entity,
		TotalSteps: total, StepsDone: j.StepsDone, TimeRun: j.TimeRun, Arrival: j.Arrival, SLO: j.SLO}, nil
}

// WriteJobs writes jf in the jobs file format. A file ReadJobs would refuse (an id with '+',
// a weight out of range, an unknown entity...) is an error naming the entry, and nothing is
// written.
func WriteJobs(w io.Writer, jf *JobsFile) error {
	out := jsonJobsFile{Entities: jf.Entities}
	for _, j := range jf.Jobs {
		sf := j.Type.ScaleFactor
		wt := j.EffectiveWeight()
		total := j.TotalSteps
		out.Jobs = append(out.Jobs, jsonJob{ID: j.ID, Type: j.Type.Model, ScaleFactor: &sf, Weight: &wt,
			Entity: j.Entity, TotalSteps: &total, StepsDone: j.StepsDone, TimeRun: j.TimeRun, Arrival: j.Arrival, SLO: j.SLO})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	if _, err := readJobs(bytes.NewReader(buf.Bytes()), "jobs to write", false); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}
