package profile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gavelkit/gavel/table"
)

func taskStrings(tasks []Task) []string {
	out := make([]string, len(tasks))
	for i, tk := range tasks {
		out[i] = tk.String()
	}
	return out
}

func TestPlanAllPairs(t *testing.T) {
	m, r1, r2 := jt("m"), jt("r1"), jt("r2")
	tasks, notes, err := Plan(PlanSpec{Model: m, References: []table.JobType{r2, r1}, WorkerTypes: []string{"v100", "k80"}})
	if err != nil || len(notes) > 0 {
		t.Fatal(err, notes)
	}
	got := taskStrings(tasks)
	want := []string{
		"k80: ('m', 1)", "k80: ('r1', 1)", "k80: ('r2', 1)",
		"v100: ('m', 1)", "v100: ('r1', 1)", "v100: ('r2', 1)",
		"k80: ('m', 1) + ('m', 1)", "k80: ('m', 1) + ('r1', 1)", "k80: ('m', 1) + ('r2', 1)",
		"v100: ('m', 1) + ('m', 1)", "v100: ('m', 1) + ('r1', 1)", "v100: ('m', 1) + ('r2', 1)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPlanReferenceBlock: every reference alone, and every pair of references of one scale
// factor (each with itself), on every worker type; no job of its own.
func TestPlanReferenceBlock(t *testing.T) {
	r1, r2, g := jt("r1"), jt("r2"), table.JobType{Model: "g", ScaleFactor: 2}
	tasks, notes, err := Plan(PlanSpec{References: []table.JobType{r2, g, r1}, WorkerTypes: []string{"v100", "k80"}, ReferenceBlock: true})
	if err != nil || len(notes) > 0 {
		t.Fatal(err, notes)
	}
	got := taskStrings(tasks)
	want := []string{
		"k80: ('r1', 1)", "k80: ('r2', 1)", "k80: ('g', 2)",
		"v100: ('r1', 1)", "v100: ('r2', 1)", "v100: ('g', 2)",
		"k80: ('r1', 1) + ('r1', 1)", "k80: ('r1', 1) + ('r2', 1)", "k80: ('r2', 1) + ('r2', 1)", "k80: ('g', 2) + ('g', 2)",
		"v100: ('r1', 1) + ('r1', 1)", "v100: ('r1', 1) + ('r2', 1)", "v100: ('r2', 1) + ('r2', 1)", "v100: ('g', 2) + ('g', 2)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range []PlanSpec{
		{ReferenceBlock: true, WorkerTypes: []string{"cpu"}},
		{ReferenceBlock: true, Model: jt("m"), References: []table.JobType{r1}, WorkerTypes: []string{"cpu"}},
		{ReferenceBlock: true, References: []table.JobType{r1}, WorkerTypes: []string{"cpu"}, Fraction: 0.5},
		{ReferenceBlock: true, References: []table.JobType{r1}, WorkerTypes: []string{"cpu"}, NoPairs: true},
	} {
		if _, _, err := Plan(bad); err == nil {
			t.Errorf("Plan(%+v): no error", bad)
		}
	}
}

// A spec that made nonsense plans is an error: an empty job type planned "(”, 0)" twice, an
// empty worker type planned on "", a NaN or negative fraction meant every pair, and of two pair
// selections one silently won.
func TestPlanRejectsBadSpecs(t *testing.T) {
	m, r := jt("m"), jt("r")
	cpu := []string{"cpu"}
	for _, tc := range []struct {
		name string
		spec PlanSpec
		want string
	}{
		{"empty job", PlanSpec{WorkerTypes: cpu}, "job: "},
		{"bad reference", PlanSpec{Model: m, References: []table.JobType{{Model: "r", ScaleFactor: 0}}, WorkerTypes: cpu}, "reference: "},
		{"empty worker type", PlanSpec{Model: m, WorkerTypes: []string{""}}, "an empty worker type"},
		{"no worker types", PlanSpec{Model: m, References: []table.JobType{r}}, "no worker types"},
		{"reference block without worker types", PlanSpec{References: []table.JobType{r}, ReferenceBlock: true}, "no worker types"},
		{"NaN fraction", PlanSpec{Model: m, References: []table.JobType{r}, WorkerTypes: cpu, Fraction: math.NaN()}, "fraction NaN"},
		{"negative fraction", PlanSpec{Model: m, References: []table.JobType{r}, WorkerTypes: cpu, Fraction: -1}, "fraction -1"},
		{"two selections", PlanSpec{Model: m, References: []table.JobType{r}, WorkerTypes: cpu, Partners: []string{"r"}, Fraction: 0.5}, "more than one pair selection"},
		{"no pairs and partners", PlanSpec{Model: m, References: []table.JobType{r}, WorkerTypes: cpu, Partners: []string{"r"}, NoPairs: true}, "more than one pair selection"},
	} {
		if _, _, err := Plan(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestPlanNoReferences(t *testing.T) {
	tasks, _, err := Plan(PlanSpec{Model: jt("m"), WorkerTypes: []string{"cpu"}})
	if err != nil || len(tasks) != 1 || tasks[0].IsPair() {
		t.Errorf("plan = %v, %v; want the isolated rate only", tasks, err)
	}
}

func TestPlanFraction(t *testing.T) {
	refs := []table.JobType{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		refs = append(refs, jt(n))
	}
	spec := PlanSpec{Model: jt("m"), References: refs, WorkerTypes: []string{"x", "y"}, Fraction: 0.5, Seed: 7}
	count := func(ts []Task) (n int) {
		for _, t := range ts {
			if t.IsPair() {
				n++
			}
		}
		return n
	}
	a, _, _ := Plan(spec)
	b, _, _ := Plan(spec)
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different plans")
	}
	if n := count(a); n == 0 || n == 22 {
		t.Errorf("fraction 0.5 chose %d of 22 pairs", n)
	}
	spec.Seed = 8
	c, _, _ := Plan(spec)
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds, same plan")
	}
	spec.Fraction = 1
	if all, _, _ := Plan(spec); count(all) != 22 {
		t.Errorf("fraction 1 chose %d of 22 pairs", count(all))
	}
	spec.Fraction = 1.5
	if _, _, err := Plan(spec); err == nil {
		t.Error("fraction 1.5 accepted")
	}
}

func TestPlanPartnersAndSuggestions(t *testing.T) {
	m, r1, r2 := jt("m"), jt("r1"), jt("r2")
	spec := PlanSpec{Model: m, References: []table.JobType{r1, r2}, WorkerTypes: []string{"v100"}, Partners: []string{"r2", "r1+r2"}}
	tasks, _, err := Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{{"v100", m, table.JobType{}}, {"v100", r1, table.JobType{}}, {"v100", r2, table.JobType{}},
		{"v100", m, r2}, {"v100", r1, r2}}
	if !reflect.DeepEqual(tasks, want) {
		t.Errorf("plan = %v, want %v", tasks, want)
	}
	spec.Partners = []string{"nope"}
	if _, _, err := Plan(spec); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown partner: %v", err)
	}
	spec.Partners = nil
	spec.Suggestions = []Suggestion{
		{WorkerType: "v100", Job: "r1", Partner: "m", ScaleFactor: 1},
		{WorkerType: "k80", Job: "m", Partner: "r1", ScaleFactor: 1},
		{WorkerType: "v100", Job: "m", Partner: "zzz", ScaleFactor: 1},
		{WorkerType: "v100", Job: "m", Partner: "r2", ScaleFactor: 2},
	}
	tasks, notes, err := Plan(spec)
	if err != nil {
		t.Fatal(err)
	}
	want = []Task{{"v100", m, table.JobType{}}, {"v100", r1, table.JobType{}}, {"v100", m, r1}}
	if !reflect.DeepEqual(tasks, want) || len(notes) != 3 {
		t.Errorf("plan = %v, notes %q", tasks, notes)
	}
}

func TestReadReferences(t *testing.T) {
	good := `{"references":[{"name":"ResNet-18 (batch size 64)","command":["python3","r.py"],"env":{"A":"1","B":"2"}},
		{"name":"LM","scale_factor":1,"command":["lm"],"progress_regex":"step (\\d+)"}]}`
	refs, err := ReadReferences(strings.NewReader(good), "refs.json")
	if err != nil {
		t.Fatal(err)
	}
	if refs.References[0].ScaleFactor != 1 {
		t.Error("scale factor does not default to 1")
	}
	c := refs.References[0].ProfileCommand()
	if !reflect.DeepEqual(c.Env, []string{"A=1", "B=2"}) || c.Shell {
		t.Errorf("command = %+v", c)
	}
	if refs.References[1].ProfileCommand().Progress.String() != `step (\d+)` {
		t.Error("progress regex lost")
	}
	for _, tc := range []struct{ in, want string }{
		{`{"references":[{"name":"","command":["x"]}]}`, "name is required"},
		{`{"references":[{"name":"a","command":[]}]}`, "command is required"},
		{`{"references":[{"name":"a","command":["x"]},{"name":"a","command":["y"]}]}`, "appears twice"},
		{`{"references":[{"name":"a","command":["x"],"scale_factor":-1}]}`, "scale_factor -1"},
		// An explicit 0 was taken as "left out" (1); the entry is named.
		{`{"references":[{"name":"a","command":["x"]},{"name":"b","command":["y"],"scale_factor":0}]}`,
			`entry 1 ("b"): scale_factor 0, want >= 1`},
		{`{"references":[{"name":"a","command":["x"],"progress_regex":"(a)(b)"}]}`, "capture groups"},
		{`{"references":[{"name":"a","cmd":["x"]}]}`, `references refs.json:1:28: unknown field "cmd"`},
		{`{"references":[{"name":"a\nb","command":["x"]}]}`, "cannot be a table key"},
	} {
		_, err := ReadReferences(strings.NewReader(tc.in), "refs.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "refs.json") {
			t.Errorf("%s: error %v, want one naming the file and %q", tc.in, err, tc.want)
		}
	}
}

// TestReadReferencesJSONErrors: syntax errors give file:line:col; wrong shapes say what was
// wanted and found in plain words (at the end of the offending value, where Go's decoder
// stops).
func TestReadReferencesJSONErrors(t *testing.T) {
	good := "{\"references\": [\n  {\"name\": \"a\", \"command\": [\"x\"]}\n]}\n"
	for _, tc := range []struct{ in, want string }{
		{good[:30], "refs.json:2:14: invalid JSON: unexpected end of file"},
		{"{\"references\": [\n  {\"name\": \"a\",, \"command\": [\"x\"]}\n]}", "refs.json:2:16: invalid JSON: invalid character ','"},
		{"{\"references\": [\n  {\"name\": \"a\", \"command\": \"x\"}\n]}", "refs.json:2:30: references.command: want an array of strings, got a string"},
		{"{\"references\": [\n  {\"name\": \"a\", \"command\": [\"x\"], \"scale_factor\": 1.5}]}", "refs.json:2:53: references.scale_factor: want a whole number, got number 1.5"},
		{"{\"references\": {\"name\": \"a\"}}", "refs.json:1:16: references: want an array of objects, got an object"},
		{"[]", "refs.json:1:1: the file: want an object, got an array"},
		{"", "refs.json: the file is empty"},
		{good + "{}", "refs.json:4:1: invalid JSON: unexpected text after the JSON value"},
	} {
		_, err := ReadReferences(strings.NewReader(tc.in), "refs.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.want)
		}
		if err == nil {
			continue
		}
		if msg := strings.ReplaceAll(err.Error(), "refs.json", ""); strings.Contains(msg, "json: ") || strings.Contains(msg, "Go value") {
			t.Errorf("%q: error %v speaks Go's decoder", tc.in, err)
		}
	}
}

// TestReadReferencesReservedEnv: a reference cannot set the variables the profiler sets for
// each device (which would, say, move it off its GPU or out of MPS), as --env cannot.
func TestReadReferencesReservedEnv(t *testing.T) {
	for _, k := range []string{"CUDA_MPS_PIPE_DIRECTORY", "CUDA_VISIBLE_DEVICES", "CUDA_MPS_LOG_DIRECTORY", "GAVEL_DEVICE"} {
		in := `{"references":[{"name":"a","command":["x"],"env":{"` + k + `":"/tmp/elsewhere"}}]}`
		_, err := ReadReferences(strings.NewReader(in), "refs.json")
		if err == nil || !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), "refs.json") {
			t.Errorf("env %s: error %v, want one naming the file and the variable", k, err)
		}
	}
}

func TestLoadSuggestions(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(p, []byte(`{"measurements":[{"worker_type":"v100","job":"a","partner":"b","scale_factor":1,"reason":"x"}]}`), 0o644)
	s, err := LoadSuggestions(p)
	if err != nil || len(s) != 1 || s[0].Partner != "b" {
		t.Errorf("%+v %v", s, err)
	}
	os.WriteFile(p, []byte(`{"measurements":[{"worker_type":"v100","job":"a"}]}`), 0o644)
	if _, err := LoadSuggestions(p); err == nil {
		t.Error("suggestion without partner accepted")
	}
}

// TestReadSuggestionsScaleFactor: a scale_factor left out is 1; one given below 1 was taken
// for 1 too, and is an error naming the file, the entry and the value.
func TestReadSuggestionsScaleFactor(t *testing.T) {
	entry := func(sf string) string {
		return `{"measurements":[{"worker_type":"v100","job":"a","partner":"b","scale_factor":1},
			{"worker_type":"k80","job":"c","partner":"d"` + sf + `}]}`
	}
	tests := []struct {
		name, sf string
		want     int      // the second entry's scale factor, when read
		wantErr  []string // what the error names
	}{
		{"left out", "", 1, nil},
		{"null", `,"scale_factor":null`, 1, nil},
		{"two", `,"scale_factor":2`, 2, nil},
		{"zero", `,"scale_factor":0`, 0, []string{"s.json", "measurement 1", "c + d on k80", "scale_factor 0", ">= 1"}},
		{"negative", `,"scale_factor":-3`, 0, []string{"s.json", "measurement 1", "c + d on k80", "scale_factor -3"}},
		{"fraction", `,"scale_factor":1.5`, 0, []string{"s.json", "measurement 1", "scale_factor", "whole number", "1.5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ReadSuggestions(strings.NewReader(entry(tt.sf)), "s.json")
			if tt.wantErr == nil {
				if err != nil || len(s) != 2 || s[0].ScaleFactor != 1 || s[1].ScaleFactor != tt.want {
					t.Fatalf("%+v, %v; want scale factors 1 and %d", s, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("read %+v, want an error", s)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

// TestReadSuggestionsSyntaxPlaced: malformed JSON said "suggestions s.json: unexpected EOF"
// (or encoding/json's "invalid character ..."), with no line or column, unlike the references
// and jobs files.
func TestReadSuggestionsSyntaxPlaced(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"truncated", "{\"measurements\": [\n", "suggestions s.json:2:1: invalid JSON: unexpected end of file"},
		{"bad character", "{\"measurements\": [\n  {\"worker_type\": v100}]}", "suggestions s.json:2:19: invalid JSON: invalid character 'v'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSuggestions(strings.NewReader(tt.in), "s.json")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestReadSuggestionsWrongShape: a file of the wrong shape said "cannot unmarshal array into Go
// value of type struct { Measurements []profile.Suggestion ... }"; the error names the file and
// what it should hold, in JSON's terms.
func TestReadSuggestionsWrongShape(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"array", `[{"worker_type":"v100","job":"a","partner":"b"}]`, []string{"found an array", `"measurements" list`, "suggest --json"}},
		{"string", `"x"`, []string{"found a string", `"measurements" list`}},
		{"number", `12`, []string{"found a number", `"measurements" list`}},
		{"measurements an object", `{"measurements":{"a":1}}`, []string{`"measurements" is an object`, "list of pairs", "suggest --json"}},
		{"entry not an object", `{"measurements":[3]}`, []string{"measurement 0", "found a number", "want an object"}},
		{"field of the wrong kind", `{"measurements":[{"worker_type":"v100","job":1,"partner":"b"}]}`, []string{"measurement 0", "job", "want a string"}},
		{"empty", " \n", []string{"empty", `"measurements" list`}},
		{"no measurements", `{}`, []string{`no "measurements" list`}},
		{"misspelled", `{"measurment":[{"worker_type":"v100","job":"a","partner":"b"}]}`, []string{`no "measurements" list`}},
		{"two objects", `{"measurements":[]} {"measurements":[]}`, []string{"more after the first object", "want one object"}},
		{"trailing text", `{"measurements":[]} x`, []string{"more after the first object"}},
		// dec.More stops at a closing bracket: a stray '}' or ']' after the object was read as nothing more.
		{"trailing brace", `{"measurements":[{"worker_type":"v100","job":"a","partner":"b"}]} }`, []string{"more after the first object"}},
		{"trailing bracket", `{"measurements":[{"worker_type":"v100","job":"a","partner":"b"}]}]`, []string{"more after the first object"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadSuggestions(strings.NewReader(tt.in), "s.json")
			if err == nil {
				t.Fatal("read, want an error")
			}
			msg := err.Error()
			for _, w := range append(tt.want, "suggestions s.json: ") {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			for _, leak := range []string{"Go value", "Go struct", "profile.", "unmarshal"} {
				if strings.Contains(msg, leak) {
					t.Errorf("error %q speaks of Go types (%q)", msg, leak)
				}
			}
		})
	}
}

func TestBaseEnv(t *testing.T) {
	parent := []string{"PATH=/bin", "HOME=/h", "SECRET_TOKEN=x", "VIRTUAL_ENV=/v", "CUDA_VISIBLE_DEVICES=3"}
	env, err := BaseEnv(parent, []string{"VIRTUAL_ENV", "OMP_NUM_THREADS=4"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/bin", "HOME=/h", "VIRTUAL_ENV=/v", "OMP_NUM_THREADS=4"}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	for _, bad := range []string{"CUDA_VISIBLE_DEVICES=1", "NOT_SET", "=x"} {
		if _, err := BaseEnv(parent, []string{bad}); err == nil {
			t.Errorf("--env %q accepted", bad)
		}
	}
	if got := deviceEnv([]GPU{{Index: 2, UUID: "GPU-abc", WorkerType: "h200"}}); !reflect.DeepEqual(got,
		[]string{"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=GPU-abc", "GAVEL_DEVICE=2", "GAVEL_WORKER_TYPE=h200"}) {
		t.Errorf("device env = %v", got)
	}
}

// TestRunEnvIsExplicit: a job sees the allowlist, its own variables and its device, nothing
// else of the profiler's environment.
func TestRunEnvIsExplicit(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "env")
	t.Setenv("GAVEL_TEST_SECRET", "leak")
	// The command dumps its environment through a shell, which --shell allows.
	c := Command{Argv: []string{"env", ">", out, "; exec", workloadBin, "-rate", "200"}, Shell: true, Env: []string{"MINE=1"}}
	r := newRunner(t, 1, map[table.JobType]Command{jt("a"): c})
	if _, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: jt("a")}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	for _, want := range []string{"MINE=1", "GAVEL_DEVICE=cpu0", "CUDA_VISIBLE_DEVICES=\n", "PATH="} {
		if !strings.Contains(env, want) {
			t.Errorf("job environment lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env, "GAVEL_TEST_SECRET") {
		t.Errorf("job environment leaks the profiler's:\n%s", env)
	}
}

func TestRunRefusesMixedSharing(t *testing.T) {
	a := jt("a")
	r := newRunner(t, 1, map[table.JobType]Command{a: workload("-rate", "200"), jt("b"): workload("-rate", "200")})
	side := &Sidecar{Version: 1, Sharing: MPS, Measurements: []Record{{WorkerType: "cpu", Job: "a", ScaleFactor: 1,
		Partner: "a", PartnerScaleFactor: 1, Kind: "pair", Status: StatusOK, Sharing: MPS}}}
	if err := side.Save(SidecarPath(r.TablePath)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: a}}); !errors.Is(err, ErrSharingMismatch) {
		t.Fatalf("error = %v, want ErrSharingMismatch", err)
	}
	r.ForceSharing = true
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: a}})
	if err != nil || len(recs) != 1 || recs[0].Sharing != TimeSlicing {
		t.Fatalf("forced: %v %+v", err, recs)
	}
	got, err := LoadSidecar(SidecarPath(r.TablePath))
	if err != nil || len(got.Measurements) != 2 || got.Measurements[0].Sharing != MPS || got.Sharing != MPS {
		t.Errorf("sidecar after forced isolated run: %v %+v", err, got)
	}
	// A forced time-slicing pair next to the MPS one: the sidecar says the table is mixed.
	recs, err = r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: a, Partner: jt("b")}})
	if err != nil || len(recs) == 0 {
		t.Fatalf("forced pair: %v %+v", err, recs)
	}
	if got, err = LoadSidecar(SidecarPath(r.TablePath)); err != nil || got.Sharing != Mixed {
		t.Errorf("sidecar sharing after pairs of both modes = %q (%v), want %q", got.Sharing, err, Mixed)
	}
}

func TestSidecarPathAndErrors(t *testing.T) {
	if got := SidecarPath("/x/out.json"); got != "/x/out.measurements.json" {
		t.Errorf("SidecarPath = %q", got)
	}
	// Through a symlink, the sidecar is the linked table's.
	dir := t.TempDir()
	real := filepath.Join(dir, "data", "real.json")
	os.Mkdir(filepath.Dir(real), 0o755)
	if err := os.WriteFile(real, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink(real, filepath.Join(dir, "link.json"))
	os.Symlink("data", filepath.Join(dir, "d"))
	want := SidecarPath(real)
	for _, p := range []string{filepath.Join(dir, "link.json"), filepath.Join(dir, "d", "real.json")} {
		if got := SidecarPath(p); got != want {
			t.Errorf("SidecarPath(%s) = %s, want %s", p, got, want)
		}
	}
	if got, want := SidecarPath(filepath.Join(dir, "d", "new.json")), filepath.Join(filepath.Dir(want), "new.measurements.json"); got != want {
		t.Errorf("SidecarPath of a new table in a linked directory = %s, want %s", got, want)
	}
	for _, bad := range []string{`{"version":2}`, `{"version":1,"measurements":[{"worker_type":"a","job":"b","scale_factor":1,"status":"meh"}]}`, `{`} {
		if _, err := readSidecar(strings.NewReader(bad), "s.json"); err == nil || !strings.Contains(err.Error(), "s.json") {
			t.Errorf("%s: error %v", bad, err)
		}
	}
}

// TestMPS drives a stand-in control program: started with private directories when none is
// running, quit through its stdin afterwards, left alone when one is already running.
func TestMPS(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	control := filepath.Join(dir, "nvidia-cuda-mps-control")
	script := "#!/bin/sh\necho \"args:$* pipe:$CUDA_MPS_PIPE_DIRECTORY\" >> " + log + "\n" +
		"if [ \"$1\" = -d ]; then mkfifo \"$CUDA_MPS_PIPE_DIRECTORY/control\"; else cat >> " + log + "; fi\n"
	if err := os.WriteFile(control, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + dir + ":/usr/bin:/bin"}
	d, err := StartMPS(context.Background(), "", filepath.Join(dir, "none"), env)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Started() || len(d.Env()) != 2 || !strings.HasPrefix(d.Env()[0], "CUDA_MPS_PIPE_DIRECTORY=") {
		t.Fatalf("daemon = %+v", d)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "args:-d pipe:"+d.pipeDir) || !strings.Contains(string(b), "quit") {
		t.Errorf("control program saw:\n%s", b)
	}
	if _, err := os.Stat(d.pipeDir); !os.IsNotExist(err) {
		t.Error("private directories not removed")
	}
	// A daemon already listening is used and not stopped.
	sys := filepath.Join(dir, "sys")
	os.Mkdir(sys, 0o755)
	os.WriteFile(filepath.Join(sys, "control"), nil, 0o644)
	os.Remove(log)
	d, err = StartMPS(context.Background(), "", sys, env)
	if err != nil || d.Started() || d.Env()[0] != "CUDA_MPS_PIPE_DIRECTORY="+sys {
		t.Fatalf("existing daemon: %+v %v", d, err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(log); !os.IsNotExist(err) {
		t.Error("control program called for a daemon we did not start")
	}
	if _, err := StartMPS(context.Background(), "no-such-mps-control", filepath.Join(dir, "none"), env); err == nil {
		t.Error("missing control program accepted")
	}
}

// TestRunUnderMPS: with --sharing mps the runner starts a private control daemon, every job
// is its client, records say mps, and the daemon is quit at the end.
func TestRunUnderMPS(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	control := filepath.Join(dir, "mps-control")
	script := "#!/bin/sh\nif [ \"$1\" = -d ]; then mkfifo \"$CUDA_MPS_PIPE_DIRECTORY/control\"; echo started >> " + log +
		"; else cat >> " + log + "; fi\n"
	if err := os.WriteFile(control, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	envOut := filepath.Join(dir, "env")
	a := jt("a")
	c := Command{Argv: []string{"env", ">>", envOut, "; exec", workloadBin, "-rate", "200"}, Shell: true}
	r := newRunner(t, 1, map[table.JobType]Command{a: c})
	r.GPUs = []GPU{{Index: 0, UUID: "GPU-m", WorkerType: "fake", ComputeMode: "exclusive_process"}}
	r.Sharing, r.MPSControl, r.MPSPipeDir = MPS, control, filepath.Join(dir, "no-daemon")
	recs, err := r.Run(context.Background(), []Task{{WorkerType: "fake", Job: a}, {WorkerType: "fake", Job: a, Partner: a}})
	if err != nil {
		t.Fatal(err)
	}
	p := findRecord(recs, "pair", "a", "a")
	if p == nil || p.Status != StatusOK || p.Sharing != MPS {
		t.Fatalf("pair under MPS (exclusive-process GPU) = %+v", p)
	}
	b, _ := os.ReadFile(log)
	if string(b) != "started\nquit\n" {
		t.Errorf("control daemon log = %q, want started then quit", b)
	}
	env, _ := os.ReadFile(envOut)
	if n := strings.Count(string(env), "CUDA_MPS_PIPE_DIRECTORY="); n != 3 {
		t.Errorf("%d of 3 jobs were MPS clients:\n%s", n, env)
	}
	side, _ := LoadSidecar(SidecarPath(r.TablePath))
	if side.Sharing != MPS {
		t.Errorf("sidecar sharing = %q", side.Sharing)
	}
}

// A lock file another user's run left (0644, not ours to write) still locks: flock needs only a
// read descriptor. Root writes anyway, so this runs only as another user (checked as nobody).
func TestLockTableReadOnlyLockFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root opens read-only files for writing; run as another user")
	}
	path := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(path+".lock", nil, 0o444); err != nil {
		t.Fatal(err)
	}
	unlock, err := lockTable(path)
	if err != nil {
		t.Fatalf("lock with a read-only lock file: %v", err)
	}
	if _, err := lockTable(path); !errors.Is(err, ErrTableBusy) {
		t.Errorf("second lock: %v, want ErrTableBusy", err)
	}
	unlock()
}

func TestRunTableLock(t *testing.T) {
	r := newRunner(t, 1, map[table.JobType]Command{jt("a"): workload("-rate", "200")})
	unlock, err := lockTable(r.TablePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background(), []Task{{WorkerType: "cpu", Job: jt("a")}}); !errors.Is(err, ErrTableBusy) {
		t.Errorf("second writer: %v, want ErrTableBusy", err)
	}
	// A run through a symlink to the table takes the same lock.
	link := filepath.Join(t.TempDir(), "link.json")
	if err := os.Symlink(r.TablePath, link); err != nil {
		t.Fatal(err)
	}
	viaLink := *r
	viaLink.TablePath = link
	if _, err := viaLink.Run(context.Background(), []Task{{WorkerType: "cpu", Job: jt("a")}}); !errors.Is(err, ErrTableBusy) {
		t.Errorf("second writer through a symlink: %v, want ErrTableBusy", err)
	}
	unlock()
	if _, err := lockTable(r.TablePath); err != nil {
		t.Errorf("lock not released: %v", err)
	}
	// A table not named .json would share out.json's sidecar.
	viaLink.TablePath = strings.TrimSuffix(r.TablePath, ".json")
	if _, err := viaLink.Run(context.Background(), nil); !errors.Is(err, ErrTableName) {
		t.Errorf("table %s: %v, want ErrTableName", viaLink.TablePath, err)
	}
}

// TestRunTimeSlicingRefusesRunningMPS: CUDA jobs join an MPS daemon listening in the default
// pipe directory by themselves, so time-slicing pairs cannot be measured while one runs.
func TestRunTimeSlicingRefusesRunningMPS(t *testing.T) {
	sys := t.TempDir()
	if err := os.WriteFile(filepath.Join(sys, "control"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a := jt("a")
	r := newRunner(t, 1, map[table.JobType]Command{a: workload("-rate", "200")})
	r.GPUs = []GPU{{Index: 0, UUID: "GPU-t", WorkerType: "fake", ComputeMode: "default"}}
	r.MPSPipeDir = sys
	tasks := []Task{{WorkerType: "fake", Job: a}, {WorkerType: "fake", Job: a, Partner: a}}
	recs, err := r.Run(context.Background(), tasks)
	if !errors.Is(err, ErrMPSRunning) || !strings.Contains(err.Error(), sys) || len(recs) != 0 {
		t.Fatalf("Run = %+v, %v; want ErrMPSRunning naming %s and nothing measured", recs, err, sys)
	}
	// Isolated rates alone do not share the GPU.
	if recs, err := r.Run(context.Background(), tasks[:1]); err != nil || len(recs) != 1 || recs[0].Status != StatusOK {
		t.Errorf("isolated only: %+v, %v", recs, err)
	}
}

func TestRunReadStrictJSON(t *testing.T) {
	refs := `{"references": [{"name": "a", "command": ["x"]}]}`
	side := `{"version": 1, "measurements": []}`
	if _, err := ReadReferences(strings.NewReader(refs), "refs.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := readSidecar(strings.NewReader(side), "side.json"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{" {}", " x", `{"references": []}`} {
		if _, err := ReadReferences(strings.NewReader(refs+bad), "refs.json"); err == nil || !strings.Contains(err.Error(), "refs.json") {
			t.Errorf("references followed by %q: error %v", bad, err)
		}
		if _, err := readSidecar(strings.NewReader(side+bad), "side.json"); err == nil || !strings.Contains(err.Error(), "side.json") {
			t.Errorf("sidecar followed by %q: error %v", bad, err)
		}
	}
}

// A references file without references is an error, not a run that pairs the job with nobody.
func TestReadReferencesEmpty(t *testing.T) {
	for _, body := range []string{`{}`, `null`, `{"references": []}`, `{"references": null}`} {
		if _, err := ReadReferences(strings.NewReader(body), "refs.json"); err == nil || !strings.Contains(err.Error(), "refs.json: no reference jobs") {
			t.Errorf("%s: error %v, want one naming refs.json and saying it has no reference jobs", body, err)
		}
	}
}

func TestRunSidecarKinds(t *testing.T) {
	rec := `{"worker_type": "cpu", "job": "a", "scale_factor": 1, "status": "ok", `
	for body, want := range map[string]string{
		`"kind": "isolated"}`: "",
		`"kind": "refresh"}`:  "",
		`"kind": "pair", "partner": "b", "partner_scale_factor": 1}`: "",
		`"kind": "pair"}`:   "a pair needs partner",
		`"kind": "bogus"}`:  `kind "bogus"`,
		`"sharing": "mps"}`: `kind ""`,
	} {
		_, err := readSidecar(strings.NewReader(`{"version": 1, "measurements": [`+rec+body+`]}`), "s.json")
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
}

// TestRunMPSStartInterrupted: an interrupt while waiting for a control daemon that never comes
// up returns at once, not after the 10 s start-up bound.
func TestRunMPSStartInterrupted(t *testing.T) {
	dir := t.TempDir()
	control := filepath.Join(dir, "mps-control")
	if err := os.WriteFile(control, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := StartMPS(ctx, control, filepath.Join(dir, "none"), []string{"PATH=/usr/bin:/bin"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("StartMPS = %v, want the context's error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("StartMPS returned after %v", d)
	}
}

// TestPlanPartnerNamesWithSeparators: a value that names a job whole is that job, even with ','
// or '+' in the name; otherwise it is a comma-separated list, and "A+B" is cut where both
// sides name jobs.
func TestPlanPartnerNamesWithSeparators(t *testing.T) {
	m, comma, plus, r := jt("m"), jt("ResNet-50 (batch 64, fp16)"), jt("x+y"), jt("r")
	spec := PlanSpec{Model: m, References: []table.JobType{comma, plus, r}, WorkerTypes: []string{"v100"}}
	pairs := func(partners ...string) ([]Task, error) {
		spec.Partners = partners
		tasks, _, err := Plan(spec)
		var out []Task
		for _, tk := range tasks {
			if tk.IsPair() {
				out = append(out, tk)
			}
		}
		return out, err
	}
	for _, tc := range []struct {
		partners []string
		want     []Task
	}{
		{[]string{"ResNet-50 (batch 64, fp16)"}, []Task{{"v100", comma, m}}}, // a pair is kept in name order
		{[]string{"x+y"}, []Task{{"v100", m, plus}}},
		{[]string{"r,x+y"}, []Task{{"v100", m, r}, {"v100", m, plus}}},
		{[]string{"r+x+y"}, []Task{{"v100", r, plus}}},
		{[]string{"ResNet-50 (batch 64, fp16)+r"}, []Task{{"v100", comma, r}}},
		{[]string{"r", "m+r"}, []Task{{"v100", m, r}}},
	} {
		got, err := pairs(tc.partners...)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("partners %q: pairs %v, %v; want %v", tc.partners, got, err, tc.want)
		}
	}
	for _, bad := range []string{"r,nope", "x+nope"} {
		if _, err := pairs(bad); err == nil || !strings.Contains(err.Error(), "nope") {
			t.Errorf("partners %q: %v, want an error naming the unknown partner", bad, err)
		}
	}
}

// TestPlanPartnerListHint: "a,y,z" with a reference named "y,z" is not a name, so it is read as
// the list a, y, z and fails on "y"; the error says that such a name must be a value of its own.
// A value without a comma was never split, and gets no such hint.
func TestPlanPartnerListHint(t *testing.T) {
	spec := PlanSpec{Model: jt("m"), References: []table.JobType{jt("a"), jt("y,z")}, WorkerTypes: []string{"v100"}}
	const hint = "a name containing ',' must be given as its own --pairs value"
	for _, tc := range []struct {
		value, partner string
		hint           bool
	}{{"a,y,z", `"y"`, true}, {"a+nope", `"a+nope"`, false}} {
		spec.Partners = []string{tc.value}
		_, _, err := Plan(spec)
		if err == nil || !strings.Contains(err.Error(), "pair partner "+tc.partner) || strings.Contains(err.Error(), hint) != tc.hint {
			t.Errorf("partners %q: %v; want an error naming partner %s, hint %q given: %v", tc.value, err, tc.partner, hint, tc.hint)
		}
	}
	spec.Partners = []string{"a", "y,z"}
	if _, _, err := Plan(spec); err != nil {
		t.Errorf("partners a and y,z as values of their own: %v", err)
	}
}

// A sidecar names jobs as written (json.Marshal's default would write "->" as "-\u003e").
func TestSidecarLeavesNamesReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.measurements.json")
	s := &Sidecar{Version: 1, Sharing: TimeSlicing, Measurements: []Record{
		{WorkerType: "h200", Job: "MemGrow (10 -> 75 GiB)", ScaleFactor: 1, Kind: KindIsolated, Status: StatusOK, Rate: 1},
		{WorkerType: "h200", Job: "R&D <x>", ScaleFactor: 1, Kind: KindIsolated, Status: StatusOK, Rate: 2},
	}}
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"MemGrow (10 -> 75 GiB)"`, `"R&D <x>"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("sidecar lacks %s:\n%s", want, b)
		}
	}
	back, err := LoadSidecar(path)
	if err != nil || !reflect.DeepEqual(back.Measurements, s.Measurements) {
		t.Errorf("read back %+v (err %v), want %+v", back, err, s)
	}
}

// A planned measurement the table holds without a record in the sidecar (an estimate written
// over the table, a merged table) is not measured again, and a note says so; one this runner
// measured is skipped quietly on a rerun.
func TestRunNotesUnrecordedEntries(t *testing.T) {
	a, b := jt("a"), jt("b")
	r := newRunner(t, 1, map[table.JobType]Command{a: workload("-rate", "200"), b: workload("-rate", "200")})
	var notes []string
	r.Logf = func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	tbl := table.New()
	tbl.SetIsolated("cpu", a, 100)
	tbl.SetPair("cpu", a, a, 60, 60)
	if err := tbl.Save(r.TablePath); err != nil {
		t.Fatal(err)
	}
	tasks := []Task{{WorkerType: "cpu", Job: a}, {WorkerType: "cpu", Job: a, Partner: a}, {WorkerType: "cpu", Job: b}}
	recs, err := r.Run(context.Background(), tasks)
	if err != nil || len(recs) != 1 {
		t.Fatalf("first run: %d records, %v; want b measured", len(recs), err)
	}
	want := "note: 2 planned measurements (cpu: ('a', 1), ...) are in the table without a record in " + SidecarPath(r.TablePath)
	if len(notes) != 1 || !strings.HasPrefix(notes[0], want) {
		t.Errorf("notes %q, want one starting %q", notes, want)
	}
	notes = nil
	if _, err := r.Run(context.Background(), tasks[2:]); err != nil || len(notes) != 0 {
		t.Errorf("rerun of a measured task: notes %q (err %v), want none", notes, err)
	}
}
