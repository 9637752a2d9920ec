package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gavelkit/gavel/internal/jsonfile"
	"github.com/gavelkit/gavel/table"
)

// Reference is a reference job: a known training command that new jobs are co-located with.
//
// References file format:
//
//	{"references": [
//	  {"name": "ResNet-18 (batch size 64)", "scale_factor": 1,
//	   "command": ["python3", "examples/pytorch/resnet.py", "--batch-size", "64"],
//	   "env": {"OMP_NUM_THREADS": "4"}, "dir": "", "progress_regex": ""}
//	]}
//
// name and command are required; scale_factor defaults to 1 when left out (a given 0 is an
// error); env, dir and progress_regex are
// optional. Commands are executed directly, never through a shell.
type Reference struct {
	Name          string            `json:"name"`
	ScaleFactor   int               `json:"scale_factor"`
	Command       []string          `json:"command"`
	Env           map[string]string `json:"env,omitempty"`
	Dir           string            `json:"dir,omitempty"`
	ProgressRegex string            `json:"progress_regex,omitempty"`
}

// References is the content of a references file.
type References struct {
	References []Reference `json:"references"`
}

// LoadReferences reads and checks a references file.
func LoadReferences(path string) (*References, error) {
	return loadFile(path, "references", ReadReferences)
}

// ReadReferences reads a references file; file names it in errors.
func ReadReferences(r io.Reader, file string) (*References, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("references %s: %w", file, err)
	}
	var refs References
	if err := decodeStrictData(data, file, &refs); err != nil {
		return nil, fmt.Errorf("references %w", err)
	}
	// {}, null or an empty list would pass for a file of references and silently turn a run
	// asked to pair the job into one that measures it alone.
	if len(refs.References) == 0 {
		return nil, fmt.Errorf(`references %s: no reference jobs; want {"references": [{"name": ..., "command": [...]}, ...]} (leave out --references to measure the job alone)`, file)
	}
	// Which entries give scale_factor: one left out is 1, but "scale_factor": 0 is a mistake.
	var given struct {
		References []struct {
			ScaleFactor *int `json:"scale_factor"`
		} `json:"references"`
	}
	if err := json.Unmarshal(data, &given); err != nil {
		return nil, fmt.Errorf("references %s: %w", file, err) // read strictly above: not expected
	}
	seen := map[string]bool{}
	var errs []error
	for i := range refs.References {
		ref := &refs.References[i]
		where := fmt.Sprintf("references %s: entry %d (%q)", file, i, ref.Name)
		if ref.ScaleFactor == 0 && given.References[i].ScaleFactor == nil {
			ref.ScaleFactor = 1
		}
		switch {
		case strings.TrimSpace(ref.Name) == "":
			errs = append(errs, fmt.Errorf("%s: name is required", where))
		case seen[ref.Name]:
			errs = append(errs, fmt.Errorf("%s: name appears twice", where))
		case ref.ScaleFactor >= 1:
			if err := (table.JobType{Model: ref.Name, ScaleFactor: ref.ScaleFactor}).Check(); err != nil {
				errs = append(errs, fmt.Errorf("%s: name cannot be a table key: %w", where, err))
			}
		}
		seen[ref.Name] = true
		if len(ref.Command) == 0 || ref.Command[0] == "" {
			errs = append(errs, fmt.Errorf("%s: command is required (an argv list)", where))
		}
		if ref.ScaleFactor < 1 {
			errs = append(errs, fmt.Errorf("%s: scale_factor %d, want >= 1 (leave it out for 1)", where, ref.ScaleFactor))
		}
		for k := range ref.Env {
			switch {
			case k == "" || strings.ContainsAny(k, "=\x00"):
				errs = append(errs, fmt.Errorf("%s: env name %q is not valid", where, k))
			case reservedEnv(k):
				errs = append(errs, fmt.Errorf("%s: env %s is set by the profiler for each device", where, k))
			}
		}
		if _, err := ParseProgressFormat(ref.ProgressRegex); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &refs, nil
}

// ProfileCommand returns the reference's command.
func (r Reference) ProfileCommand() Command {
	env := make([]string, 0, len(r.Env))
	for _, k := range sortedKeys(r.Env) {
		env = append(env, k+"="+r.Env[k])
	}
	pf, _ := ParseProgressFormat(r.ProgressRegex) // checked when read
	return Command{Argv: r.Command, Env: env, Dir: r.Dir, Progress: pf}
}

// Suggestion is one entry of `gavel-profile suggest --json`.
type Suggestion struct {
	WorkerType  string `json:"worker_type"`
	Job         string `json:"job"`
	Partner     string `json:"partner"`
	ScaleFactor int    `json:"scale_factor"`
	Reason      string `json:"reason"`
}

// LoadSuggestions reads the JSON printed by `gavel-profile suggest --json` from a file.
func LoadSuggestions(path string) ([]Suggestion, error) {
	return loadFile(path, "suggestions", ReadSuggestions)
}

// suggestionsShape is the shape ReadSuggestions wants, for its errors.
const suggestionsShape = `({"measurements": [{"worker_type", "job", "partner", "scale_factor"}, ...]}), as 'gavel-profile suggest --json' writes`

// ReadSuggestions reads the JSON printed by `gavel-profile suggest --json`; file names it in
// errors. Fields other than the pair's (estimates, reasons) are allowed: the printer may add
// more. scale_factor defaults to 1 when left out; a given one below 1 is an error.
func ReadSuggestions(r io.Reader, file string) ([]Suggestion, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("suggestions %s: %w", file, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("suggestions %s: empty, want an object with a \"measurements\" list %s", file, suggestionsShape)
	}
	var s struct {
		Measurements json.RawMessage `json:"measurements"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&s); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) && typ.Field == "" {
			return nil, fmt.Errorf("suggestions %s: found %s, want an object with a \"measurements\" list %s", file, kindOfJSON(data), suggestionsShape)
		}
		// encoding/json's syntax errors carry no position ("unexpected EOF" for a truncated
		// file): say where, as the references file and the jobs file do.
		var jerr *jsonfile.Error
		if errors.As(jsonfile.Decode(data, new(any)), &jerr) {
			return nil, fmt.Errorf("suggestions %w", jerr.In(file, data))
		}
		return nil, fmt.Errorf("suggestions %s: %w", file, err)
	}
	if _, err := dec.Token(); err != io.EOF { // not dec.More, which stops at a stray '}' or ']'
		return nil, fmt.Errorf("suggestions %s: more after the first object; want one object %s", file, suggestionsShape)
	}
	// A misspelled key would otherwise read as nothing to measure.
	if len(s.Measurements) == 0 {
		return nil, fmt.Errorf("suggestions %s: no \"measurements\" list, want an object with one %s", file, suggestionsShape)
	}
	if string(s.Measurements) == "null" {
		return nil, nil
	}
	var entries []json.RawMessage
	if err := json.Unmarshal(s.Measurements, &entries); err != nil {
		return nil, fmt.Errorf("suggestions %s: \"measurements\" is %s, want a list of pairs %s", file, kindOfJSON(s.Measurements), suggestionsShape)
	}
	out := make([]Suggestion, len(entries))
	for i, raw := range entries {
		// ScaleFactor shadows the embedded one, so that a 0 given is told from one left out.
		var m struct {
			Suggestion
			ScaleFactor *int `json:"scale_factor"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			var typ *json.UnmarshalTypeError
			if !errors.As(err, &typ) {
				return nil, fmt.Errorf("suggestions %s: measurement %d: %w", file, i, err)
			}
			if typ.Field == "" {
				return nil, fmt.Errorf("suggestions %s: measurement %d: found %s, want an object {\"worker_type\", \"job\", \"partner\", \"scale_factor\"}", file, i, kindOfJSON(raw))
			}
			return nil, fmt.Errorf("suggestions %s: measurement %d: %s: want %s, got %s", file, i, typ.Field, jsonfile.Kind(typ.Type), jsonfile.Got(typ.Value))
		}
		if m.WorkerType == "" || m.Job == "" || m.Partner == "" {
			return nil, fmt.Errorf("suggestions %s: measurement %d: worker_type, job and partner are required", file, i)
		}
		m.Suggestion.ScaleFactor = 1
		if m.ScaleFactor != nil {
			if *m.ScaleFactor < 1 {
				return nil, fmt.Errorf("suggestions %s: measurement %d (%s + %s on %s): scale_factor %d, want >= 1 (leave it out for 1)",
					file, i, m.Job, m.Partner, m.WorkerType, *m.ScaleFactor)
			}
			m.Suggestion.ScaleFactor = *m.ScaleFactor
		}
		out[i] = m.Suggestion
	}
	return out, nil
}

// kindOfJSON names the kind of a JSON value read already: "an object", "a string", "null", ...
func kindOfJSON(raw json.RawMessage) string {
	switch v := bytes.TrimSpace(raw); {
	case len(v) == 0:
		return "empty"
	case v[0] == '{':
		return "an object"
	case v[0] == '[':
		return "an array"
	case v[0] == '"':
		return "a string"
	case v[0] == 't' || v[0] == 'f':
		return "true or false"
	case v[0] == 'n':
		return "null"
	default:
		return "a number"
	}
}

// decodeStrict reads exactly one JSON value into v, strictly (see jsonfile.Decode); errors
// read "FILE:LINE:COL: reason" where the position is known.
func decodeStrict(r io.Reader, file string, v any) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return decodeStrictData(data, file, v)
}

// decodeStrictData is decodeStrict on data read already.
func decodeStrictData(data []byte, file string, v any) error {
	if err := jsonfile.Decode(data, v); err != nil {
		return err.(*jsonfile.Error).In(file, data)
	}
	return nil
}

// loadFile opens path and reads it with read; what names the kind of file in errors.
func loadFile[T any](path, what string, read func(io.Reader, string) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s %s: %w", what, path, err)
	}
	defer f.Close()
	return read(f, path)
}
