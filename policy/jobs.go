package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"sort"
	"strings"

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
	return readJobs(f, path, true)
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
		Entities map[string]Entity `json:"entities"`
		Jobs     []json.RawMessage `json:"jobs"`
	}
	if err := strictDecode(data, &raw); err != nil {
		return nil, fileJSONError(name, isPath, data, err)
	}
	if err := checkEntities(raw.Entities); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(raw.Jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs (%s)", name, jobsShape)
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

// strictDecode decodes exactly one JSON value, rejecting unknown fields
// and anything after the value.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		rest := data[end:]
		return &trailingDataError{offset: end + int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n")))}
	}
	return nil
}

// trailingDataError is text after the file's JSON value.
type trailingDataError struct{ offset int64 }

func (e *trailingDataError) Error() string { return "unexpected text after the JSON value" }

// fileJSONError describes err, from decoding the whole file data, in the
// file's terms: where it is (name:line:column or "name: line L, column C")
// and what was wanted, without Go type names.
func fileJSONError(name string, isPath bool, data []byte, err error) error {
	off, msg := int64(-1), err.Error()
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var trail *trailingDataError
	switch {
	case len(bytes.TrimSpace(data)) == 0:
		msg = "empty file (" + jobsShape + ")"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		off, msg = int64(len(data)), "invalid JSON: unexpected end of file (truncated?)"
	case errors.As(err, &syn):
		off, msg = syn.Offset-1, "invalid JSON: "+syn.Error() // Offset counts the offending byte
	case errors.As(err, &trail):
		off, msg = trail.offset, "invalid JSON: "+trail.Error()
	case errors.As(err, &typ):
		off, msg = typ.Offset-1, shapeMessage(typ) // Offset is just past the value or its first byte
	default:
		msg = strings.TrimPrefix(msg, "json: ")
		if strings.HasPrefix(msg, "unknown field") {
			msg += " (" + jobsShape + ")"
		}
	}
	if off < 0 {
		return fmt.Errorf("%s: %s", name, msg)
	}
	line, col := lineColumn(data, off)
	if isPath {
		return fmt.Errorf("%s:%d:%d: %s", name, line, col, msg)
	}
	return fmt.Errorf("%s: line %d, column %d: %s", name, line, col, msg)
}

// shapeMessage says which part of a jobs file has the wrong kind of value.
func shapeMessage(e *json.UnmarshalTypeError) string {
	switch {
	case e.Field == "":
		return fmt.Sprintf("%s, got %s", jobsShape, gotValue(e.Value))
	case e.Field == "jobs":
		return fmt.Sprintf(`"jobs": want an array of job objects, got %s`, gotValue(e.Value))
	case e.Field == "entities":
		return fmt.Sprintf(`"entities": want an object of name: {"weight": number, "policy": "fairness" or "fifo"}, got %s`, gotValue(e.Value))
	case strings.HasPrefix(e.Field, "entities."):
		return fmt.Sprintf(`"entities": an entity's %q: want %s, got %s`, strings.TrimPrefix(e.Field, "entities."), kindName(e.Type), gotValue(e.Value))
	}
	return fmt.Sprintf("%q: want %s, got %s", e.Field, kindName(e.Type), gotValue(e.Value))
}

// jobJSONError describes an error decoding one entry of "jobs" without Go
// type names.
func jobJSONError(err error) error {
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &typ) {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	if typ.Field == "" {
		return fmt.Errorf("want a job object {\"id\", \"type\", \"total_steps\", ...}, got %s", gotValue(typ.Value))
	}
	return fmt.Errorf("%q: want %s, got %s", typ.Field, kindName(typ.Type), gotValue(typ.Value))
}

// kindName is the JSON name of what Go type t decodes from.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Pointer:
		return kindName(t.Elem())
	}
	return t.Kind().String()
}

// gotValue reads a decoder's value description: "an array", "a string",
// or "number 1.5" when the decoder gives the value.
func gotValue(v string) string {
	if v == "" || strings.Contains(v, " ") {
		return v
	}
	if strings.ContainsRune("aeiou", rune(v[0])) {
		return "an " + v
	}
	return "a " + v
}

// lineColumn is the 1-based line and column of byte offset off of data.
func lineColumn(data []byte, off int64) (line, col int) {
	before := data[:min(max(int(off), 0), len(data))]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
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
		return Job{}, jobJSONError(err)
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
