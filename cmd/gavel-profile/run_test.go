package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gavelkit/gavel/internal/cli"
	"github.com/gavelkit/gavel/profile"
	"github.com/gavelkit/gavel/table"
)

// buildWorkload builds the profile tests' stand-in training job.
func buildWorkload(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "workload")
	out, err := exec.Command("go", "build", "-o", bin, "../../profile/testdata/workload").CombinedOutput()
	if err != nil {
		t.Fatalf("building the workload: %v\n%s", err, out)
	}
	return bin
}

func fastFlags() []string {
	return []string{"--window", "100ms", "--max-window", "2s", "--max-warmup", "1s", "--precision", "0.05",
		"--startup-timeout", "3s", "--stall-timeout", "1s", "--kill-grace", "300ms"}
}

func runCLI(args ...string) (string, string, error) { return runCLIWithInput("", args...) }

func runCLIWithInput(stdin string, args ...string) (string, string, error) {
	streams, out, errb := cli.TestIO()
	streams.In = strings.NewReader(stdin)
	cmd := newRunCmd(streams)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true // as under the root command
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), errb.String(), err
}

type runJSON struct {
	Skipped      int `json:"skipped"`
	Measurements []struct {
		WorkerType  string   `json:"worker_type"`
		Job         string   `json:"job"`
		Partner     *string  `json:"partner"`
		Rate        float64  `json:"rate"`
		PartnerRate *float64 `json:"partner_rate"`
		CIHalfWidth float64  `json:"ci_half_width"`
		Seconds     float64  `json:"seconds"`
		Status      string   `json:"status"`
		Reason      string   `json:"reason"`
		Kind        string   `json:"kind"`
	} `json:"measurements"`
}

// measurementNames decodes run --json output and returns its measurements as "job" or
// "job+partner", sorted, leaving out isolated rates re-measured for a pair (kind "refresh");
// every one it returns must be ok.
func measurementNames(t *testing.T, stdout string) ([]string, runJSON) {
	t.Helper()
	var got runJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	var names []string
	for _, m := range got.Measurements {
		if m.Kind == "refresh" {
			continue
		}
		n := m.Job
		if m.Partner != nil {
			n += "+" + *m.Partner
		}
		names = append(names, n)
		if m.Status != "ok" {
			t.Errorf("measurement %+v", m)
		}
	}
	slices.Sort(names)
	return names, got
}

func TestRunCPUEndToEnd(t *testing.T) {
	bin := buildWorkload(t)
	dir := t.TempDir()
	share := filepath.Join(dir, "share")
	refs := filepath.Join(dir, "refs.json")
	os.WriteFile(refs, []byte(`{"references":[{"name":"ref","command":["`+bin+`","-rate","100","-share-dir","`+share+`"]}]}`), 0o644)
	out := filepath.Join(dir, "out.json")
	args := append([]string{"--cpu", "--cpu-slots", "2", "--name", "model", "--references", refs, "--table", out, "--json"}, fastFlags()...)
	args = append(args, "--", bin, "-rate", "200", "-share-dir", share)
	stdout, stderr, err := runCLI(args...)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	var got runJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(got.Measurements) != 4 {
		t.Fatalf("%d measurements, want 4 (2 isolated, 2 pairs):\n%s", len(got.Measurements), stdout)
	}
	for _, m := range got.Measurements {
		if m.Status != "ok" || m.WorkerType != "cpu" || m.CIHalfWidth <= 0 || m.Seconds <= 0 {
			t.Errorf("measurement %+v", m)
		}
		if (m.Partner == nil) != (m.PartnerRate == nil) {
			t.Errorf("partner and partner_rate must come together: %+v", m)
		}
	}
	tbl, err := table.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	model, ref := table.JobType{Model: "model", ScaleFactor: 1}, table.JobType{Model: "ref", ScaleFactor: 1}
	na, nb, s := tbl.Normalized("cpu", model, ref)
	if s != table.Measured || na < 0.35 || na > 0.65 || nb < 0.35 || nb > 0.65 {
		t.Errorf("normalized model+ref = %v, %v (%v), want about 0.5 each", na, nb, s)
	}
	if !strings.Contains(stderr, "[4/4]") {
		t.Errorf("no progress lines on stderr:\n%s", stderr)
	}

	// A rerun measures nothing.
	stdout, _, err = runCLI(args...)
	if err != nil {
		t.Fatal(err)
	}
	got = runJSON{}
	json.Unmarshal([]byte(stdout), &got)
	if got.Skipped != 4 || len(got.Measurements) != 0 {
		t.Errorf("rerun = %s", stdout)
	}
}

// TestRunReferenceBlock: --reference-block measures the references alone and every pair of
// them with their own commands; after a reference is added, a rerun measures only its part.
func TestRunReferenceBlock(t *testing.T) {
	bin := buildWorkload(t)
	dir := t.TempDir()
	share := filepath.Join(dir, "share")
	refs := filepath.Join(dir, "refs.json")
	ref := func(name, rate string) string {
		return `{"name":"` + name + `","command":["` + bin + `","-rate","` + rate + `","-share-dir","` + share + `"]}`
	}
	out := filepath.Join(dir, "out.json")
	args := append([]string{"--cpu", "--cpu-slots", "2", "--reference-block", "--references", refs, "--table", out, "--json"}, fastFlags()...)
	measured := func(want int, wantSkipped int) []string {
		t.Helper()
		stdout, stderr, err := runCLI(args...)
		if err != nil {
			t.Fatalf("run: %v\n%s", err, stderr)
		}
		names, got := measurementNames(t, stdout)
		if len(names) != want || got.Skipped != wantSkipped {
			t.Fatalf("measured %q, %d skipped; want %d measured, %d skipped", names, got.Skipped, want, wantSkipped)
		}
		return names
	}
	os.WriteFile(refs, []byte(`{"references":[`+ref("a", "100")+`,`+ref("b", "200")+`]}`), 0o644)
	if got, want := measured(5, 0), []string{"a", "a+a", "a+b", "b", "b+b"}; !slices.Equal(got, want) {
		t.Errorf("measured %q, want %q", got, want)
	}
	os.WriteFile(refs, []byte(`{"references":[`+ref("a", "100")+`,`+ref("b", "200")+`,`+ref("c", "150")+`]}`), 0o644)
	if got, want := measured(4, 5), []string{"a+c", "b+c", "c", "c+c"}; !slices.Equal(got, want) {
		t.Errorf("after adding c: measured %q, want %q", got, want)
	}
	tbl, err := table.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{{"a", "b"}, {"a", "c"}, {"c", "c"}} {
		na, nb, s := tbl.Normalized("cpu", table.JobType{Model: p[0], ScaleFactor: 1}, table.JobType{Model: p[1], ScaleFactor: 1})
		if s != table.Measured || na < 0.35 || na > 0.65 || nb < 0.35 || nb > 0.65 {
			t.Errorf("normalized %s+%s = %v, %v (%v), want about 0.5 each", p[0], p[1], na, nb, s)
		}
	}
}

func TestRunFailureExitsOne(t *testing.T) {
	bin := buildWorkload(t)
	out := filepath.Join(t.TempDir(), "out.json")
	args := append([]string{"--cpu", "--name", "crashy", "--table", out}, fastFlags()...)
	stdout, _, err := runCLI(append(args, "--", bin, "-fault", "crash", "-fault-after", "10")...)
	if cli.ExitCode(err) != 1 || !strings.Contains(err.Error(), "1 of 1 measurements failed") {
		t.Fatalf("error %v (exit %d), want exit 1", err, cli.ExitCode(err))
	}
	if !strings.Contains(stdout, "failed") || !strings.Contains(stdout, "exited with status 3") {
		t.Errorf("output does not show the failure:\n%s", stdout)
	}
}

func TestRunUsageErrors(t *testing.T) {
	dir := t.TempDir()
	badRefs := filepath.Join(dir, "refs.json")
	os.WriteFile(badRefs, []byte(`{"references":[{"name":"a"}]}`), 0o644)
	out := filepath.Join(dir, "out.json")
	nullJSON := filepath.Join(dir, "null.json")
	os.Symlink(os.DevNull, nullJSON)
	toPlain := filepath.Join(dir, "to-plain.json") // would share plain.json's sidecar
	os.Symlink("plain", toPlain)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--cpu", "--table", out, "--", "true"}, "--name is required"},
		{[]string{"--cpu", "--name", "m", "--", "true"}, "--table is required"},
		{[]string{"--cpu", "--name", "m", "--table", out}, "after --"},
		{[]string{"--cpu", "--name", "m", "--table", out, "extra", "--", "true"}, "before --"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--fraction", "0.5", "--pairs", "a", "--", "true"}, "at most one"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--fraction", "2", "--", "true"}, "--fraction 2"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--sharing", "spatial", "--", "true"}, "sharing mode"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--sharing", "mps", "--", "true"}, "needs GPUs"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--references", badRefs, "--", "true"}, "command is required"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--pairs", "nobody", "--", "true"}, `"nobody"`},
		{[]string{"--cpu", "--name", "m", "--table", out, "--env", "CUDA_VISIBLE_DEVICES=1", "--", "true"}, "set by the profiler"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--progress-regex", "(", "--", "true"}, "progress-regex"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--gpu", "3", "--", "true"}, "no device 3"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--min-batches", "1", "--", "true"}, "--min-batches 1"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--precision", "-0.1", "--", "true"}, "--precision -0.1"},
		{[]string{"--cpu", "--name", "m", "--table", out, "--window", "-1s", "--", "true"}, "--window -1s"},
		{[]string{"--cpu", "--reference-block", "--table", out}, "--reference-block measures the jobs of --references"},
		{[]string{"--cpu", "--name", "m", "--table", filepath.Join(dir, "t.csv"), "--", "true"}, "name the table .json"},
		{[]string{"--cpu", "--name", "m", "--table", filepath.Join(dir, "t.tbl"), "--", "true"}, `must end in ".json"`},
		{[]string{"--cpu", "--name", "m", "--table", nullJSON, "--", "true"}, "is the null device"},
		{[]string{"--cpu", "--name", "m", "--table", toPlain, "--", "true"}, `(a link to ` + filepath.Join(dir, "plain") + `): a table's name must end in ".json"`},
		// A command that cannot start was found only when measured, and recorded failed (exit 1).
		{[]string{"--cpu", "--name", "m", "--table", out, "--", filepath.Join(dir, "missing")}, "run: command cannot start: job ('m', 1): stat "},
		{[]string{"--cpu", "--name", "m", "--table", out, "--", "no-such-trainer"}, "no-such-trainer: no such program in the job's PATH"},
		{[]string{"--cpu", "--reference-block", "--references", badRefs, "--name", "m", "--table", out}, "leave out --name"},
		{[]string{"--cpu", "--reference-block", "--references", badRefs, "--table", out, "--", "true"}, "give no command"},
		{[]string{"--cpu", "--reference-block", "--references", badRefs, "--table", out, "--no-pairs"}, "leave out --fraction"},
		{[]string{"--cpu", "--reference-block", "--references", badRefs, "--table", out, "--shell"}, "--shell and --progress-regex"},
		{[]string{"--cpu", "--reference-block", "--references", badRefs, "--table", out, "--scale-factor", "2"}, "leave out --scale-factor and --seed"},
	}
	for _, tc := range tests {
		_, _, err := runCLI(tc.args...)
		if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v (exit %d), want exit 2 mentioning %q", tc.args, err, cli.ExitCode(err), tc.want)
		}
	}
	// So is a table in CSV, which run would have to rewrite as JSON.
	csvTable := filepath.Join(dir, "csv.json")
	os.WriteFile(csvTable, []byte("worker_type,model,scale_factor,partner_model,partner_scale_factor,state,rate,partner_rate,isolated_rate,partner_isolated_rate,normalized,partner_normalized\n"), 0o644)
	if _, _, err := runCLI("--cpu", "--name", "m", "--table", csvTable, "--", "true"); cli.ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "a CSV table; measurements are merged into Gavel's JSON format") {
		t.Errorf("CSV table: %v (exit %d), want exit 2 saying to convert it", err, cli.ExitCode(err))
	}
	// The sidecar is an output too, checked before anything runs (as a read-only one is: its
	// atomic write would replace it).
	sideDir := filepath.Join(dir, "sd.json")
	if err := os.Mkdir(profile.SidecarPath(sideDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI("--cpu", "--name", "m", "--table", sideDir, "--", "true"); cli.ExitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "--table's sidecar") {
		t.Errorf("sidecar a directory: %v (exit %d), want exit 2 naming the sidecar", err, cli.ExitCode(err))
	}
	// A broken table is bad input too.
	os.WriteFile(out, []byte(`{"v100": {"('a', 1)": {"null": -3}}}`), 0o644)
	if _, _, err := runCLI("--cpu", "--name", "m", "--table", out, "--", "true"); cli.ExitCode(err) != 2 {
		t.Errorf("broken table: %v (exit %d), want exit 2", err, cli.ExitCode(err))
	}
}

func TestRunWithoutDriverOffersCPU(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has an NVIDIA driver")
	}
	_, _, err := runCLI("--name", "m", "--table", filepath.Join(t.TempDir(), "o.json"), "--", "true")
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--cpu") || !strings.Contains(err.Error(), "no NVIDIA GPU driver found") {
		t.Errorf("error %v (exit %d), want exit 2 saying there is no driver and offering --cpu", err, cli.ExitCode(err))
	}
}

// TestRunNoGPUIsUsage: no driver, or a driver that sees no GPU, is bad usage (exit 2) that
// offers --cpu; another NVML failure stays a failure (exit 1).
func TestRunNoGPUIsUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	tests := []struct {
		open func() (profile.Devices, error)
		code int
		want string
	}{
		{func() (profile.Devices, error) {
			return nil, fmt.Errorf("%w: NVML init: ERROR_LIBRARY_NOT_FOUND", profile.ErrNoDriver)
		},
			2, "no NVIDIA GPU driver found (NVML init: ERROR_LIBRARY_NOT_FOUND); add --cpu"},
		{func() (profile.Devices, error) { return fakeDevices{}, nil }, 2, "found no GPUs; add --cpu"},
		{func() (profile.Devices, error) { return nil, errors.New("NVML init: ERROR_UNKNOWN") }, 1, "ERROR_UNKNOWN"},
	}
	for _, tc := range tests {
		opts := runOptions{name: "m", scaleFactor: 1, gpu: "all", tablePath: out, sharing: "time-slicing", cpuSlots: 1,
			settings: profile.DefaultSettings(), command: []string{"true"}, open: tc.open}
		streams, _, _ := cli.TestIO()
		_, closeDevs, err := setupRun(t.Context(), opts, streams)
		closeDevs()
		if cli.ExitCode(err) != tc.code || !strings.Contains(fmt.Sprint(err), tc.want) {
			t.Errorf("%v (exit %d), want exit %d with %q", err, cli.ExitCode(err), tc.code, tc.want)
		}
	}
}

// TestRunPairsFromSuggestOnStdin: `gavel-profile suggest --json | gavel-profile run --pairs-from -`
// measures the suggested pairs that can run here (and the isolated rates they need), nothing
// else.
func TestRunPairsFromSuggestOnStdin(t *testing.T) {
	bin := buildWorkload(t)
	dir := t.TempDir()
	refs := filepath.Join(dir, "refs.json")
	os.WriteFile(refs, []byte(`{"references":[{"name":"ref","command":["`+bin+`","-rate","100"]},
		{"name":"other","command":["`+bin+`","-rate","100"]}]}`), 0o644)
	suggest := `{"measurements": [
	  {"worker_type": "cpu", "job": "model", "partner": "ref", "scale_factor": 1, "reason": "uncertain"},
	  {"worker_type": "cpu", "job": "ref", "partner": "nobody", "scale_factor": 1, "reason": "uncertain"}]}`
	args := append([]string{"--cpu", "--cpu-slots", "2", "--name", "model", "--references", refs,
		"--pairs-from", "-", "--table", filepath.Join(dir, "out.json"), "--json"}, fastFlags()...)
	stdout, stderr, err := runCLIWithInput(suggest, append(args, "--", bin, "-rate", "200")...)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	measured, _ := measurementNames(t, stdout)
	if want := []string{"model", "model+ref", "ref"}; !slices.Equal(measured, want) {
		t.Errorf("measured %v, want %v", measured, want)
	}
	if !strings.Contains(stderr, `skipping suggestion ref + nobody on cpu: no command for "nobody"`) {
		t.Errorf("the suggestion that cannot run is not explained:\n%s", stderr)
	}
	if _, _, err := runCLIWithInput(`{"measurements": []}`, append(args, "--", bin)...); cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "stdin") {
		t.Errorf("empty suggestions on stdin: %v (exit %d), want exit 2 naming stdin", err, cli.ExitCode(err))
	}
	// Suggestions none of which can run here measured the job alone and exited 0.
	none := `{"measurements": [{"worker_type": "v100", "job": "model", "partner": "ref", "scale_factor": 1, "reason": "uncertain"}]}`
	want := `run: --pairs-from stdin: none of its 1 measurements can be made here: skipping suggestion model + ref on v100: no selected GPU of that type`
	if _, _, err := runCLIWithInput(none, append(args, "--", bin)...); cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), want) {
		t.Errorf("suggestions none of which can run: %v (exit %d), want exit 2: %s", err, cli.ExitCode(err), want)
	}
}

// A measurement that ran out of --max-window before its CI reached --precision must say so:
// on the H200 five of six measurements did, and the log line read like a pass.
func TestDescribeMarksMissedPrecision(t *testing.T) {
	ok := profile.Record{WorkerType: "h200", Job: "a", Kind: profile.KindIsolated, Status: profile.StatusOK,
		RawRate: 100, CIHalfWidth: 4, Seconds: 20, TotalSeconds: 30, PrecisionReached: true}
	missed := ok
	missed.PrecisionReached = false
	pair := missed
	pair.Kind, pair.Partner, pair.RawPartnerRate, pair.PartnerCIHalfWidth = profile.KindPair, "b", 50, 1
	failed := missed
	failed.Status, failed.Reason = profile.StatusFailed, "exited with status 3"
	const mark = "short of --precision"
	tests := []struct {
		name string
		rec  profile.Record
		want string
		mark bool
	}{
		{"reached", ok, "h200: a: 100 steps/s ±4.0% (measured 20 s, 30 s in all)", false},
		{"missed", missed, "h200: a: 100 steps/s ±4.0% (measured 20 s, 30 s in all)", true},
		{"pair missed", pair, "h200: a + b: 100 steps/s ±4.0%, partner 50 steps/s ±2.0% (measured 20 s, 30 s in all)", true},
		{"failed", failed, "h200: a: failed: exited with status 3", false},
	}
	for _, tt := range tests {
		got := describe(tt.rec)
		if !strings.HasPrefix(got, tt.want) || strings.Contains(got, mark) != tt.mark {
			t.Errorf("%s: describe = %q, want prefix %q and marked %v", tt.name, got, tt.want, tt.mark)
		}
	}
}

func TestRunJSONReportsPrecisionReached(t *testing.T) {
	bin := buildWorkload(t)
	out := filepath.Join(t.TempDir(), "out.json")
	// Step times jitter by ±50%, so a 0.01% half-width cannot be reached within 1 s.
	args := []string{"--cpu", "--name", "noisy", "--table", out, "--json", "--no-pairs", "--window", "100ms",
		"--max-window", "1s", "--max-warmup", "300ms", "--precision", "0.0001", "--startup-timeout", "3s",
		"--stall-timeout", "1s", "--kill-grace", "300ms", "--", bin, "-rate", "500", "-noise", "0.5"}
	stdout, stderr, err := runCLI(args...)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	var got struct {
		Measurements []struct {
			Status           string `json:"status"`
			PrecisionReached *bool  `json:"precision_reached"`
		} `json:"measurements"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if len(got.Measurements) != 1 || got.Measurements[0].Status != "ok" {
		t.Fatalf("measurements = %s", stdout)
	}
	if r := got.Measurements[0].PrecisionReached; r == nil || *r {
		t.Errorf("precision_reached = %v, want false:\n%s", r, stdout)
	}
	if !strings.Contains(stderr, "short of --precision") {
		t.Errorf("log does not say the precision was missed:\n%s", stderr)
	}
}

// TestRunPairSelectionFlagsGivenEmpty: a pair-selection flag given with an empty or zero value
// is not the same as no flag (which measures every reference pair).
func TestRunPairSelectionFlagsGivenEmpty(t *testing.T) {
	bin := buildWorkload(t)
	dir := t.TempDir()
	refs := filepath.Join(dir, "refs.json")
	os.WriteFile(refs, []byte(`{"references":[{"name":"ref","command":["`+bin+`","-rate","100"]}]}`), 0o644)
	base := func(out string, extra ...string) []string {
		args := append([]string{"--cpu", "--name", "model", "--references", refs, "--table", out, "--json"}, fastFlags()...)
		return append(append(args, extra...), "--", bin, "-rate", "200")
	}
	t.Run("fraction 0 measures no pair", func(t *testing.T) {
		stdout, stderr, err := runCLI(base(filepath.Join(dir, "f0.json"), "--fraction", "0")...)
		if err != nil {
			t.Fatalf("run: %v\n%s", err, stderr)
		}
		var got runJSON
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		for _, m := range got.Measurements {
			if m.Partner != nil {
				t.Errorf("--fraction 0 measured the pair %s + %s", m.Job, *m.Partner)
			}
		}
		if len(got.Measurements) != 1 {
			t.Errorf("%d measurements, want the model's isolated rate only", len(got.Measurements))
		}
	})
	for _, flag := range []string{"--pairs", "--pairs-from"} {
		t.Run(flag+" empty", func(t *testing.T) {
			out := filepath.Join(dir, "empty.json")
			_, _, err := runCLI(base(out, flag, "")...)
			if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), flag) {
				t.Fatalf("%s \"\": %v (exit %d), want a usage error naming the flag", flag, err, cli.ExitCode(err))
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("the table was written")
			}
		})
	}
}

// TestRunRejectsUnreadableName: a --name whose table key would not read back (a newline) is a
// usage error before anything runs; the table would otherwise become unreadable.
func TestRunRejectsUnreadableName(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	_, _, err := runCLI("--cpu", "--name", "two\nlines", "--table", out, "--", "true")
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--name") {
		t.Fatalf("err = %v (exit %d), want a usage error about --name", err, cli.ExitCode(err))
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the table was written")
	}
}

// TestRunRefreshIsolatedZero: --refresh-isolated 0s re-measures both isolated rates before the
// pair; it used to mean the 30-minute default, which re-measures nothing in a fresh run. The
// log counts them before the pair ("[before 3/3]"), not as the isolated rate again ("[2/3]").
func TestRunRefreshIsolatedZero(t *testing.T) {
	bin := buildWorkload(t)
	dir := t.TempDir()
	refs := filepath.Join(dir, "refs.json")
	os.WriteFile(refs, []byte(`{"references":[{"name":"ref","command":["`+bin+`","-rate","100"]}]}`), 0o644)
	for _, tc := range []struct {
		refresh  string
		refreshs int
	}{{"0s", 2}, {"30m", 0}} {
		t.Run(tc.refresh, func(t *testing.T) {
			out := filepath.Join(dir, tc.refresh+".json")
			args := append([]string{"--cpu", "--name", "model", "--references", refs, "--pairs", "ref", "--table", out,
				"--refresh-isolated", tc.refresh}, fastFlags()...)
			_, stderr, err := runCLI(append(args, "--", bin, "-rate", "200")...)
			if err != nil {
				t.Fatalf("run: %v\n%s", err, stderr)
			}
			// Re-measurements are logged as before the pair, the third of 3.
			if logged := strings.Count(stderr, "[before 3/3] cpu: "); logged != tc.refreshs {
				t.Errorf("%d re-measurements logged before 3/3, want %d:\n%s", logged, tc.refreshs, stderr)
			}
			side, err := profile.LoadSidecar(profile.SidecarPath(out))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, m := range side.Measurements {
				if m.Kind == profile.KindRefresh {
					n++
				}
			}
			if n != tc.refreshs {
				t.Errorf("%d refresh measurements, want %d", n, tc.refreshs)
			}
		})
	}
}

// TestRunReportWording: the messages say what happened: an interrupt before anything finished is
// not "nothing to measure", and a job that exited during its measurement did not stop at
// --max-window.
func TestRunReportWording(t *testing.T) {
	streams, out, _ := cli.TestIO()
	opts := runOptions{tablePath: "t.json"}
	if err := printRecords(streams, opts, &profile.Runner{}, nil, 0, true); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "Interrupted") || strings.Contains(s, "Nothing to measure") {
		t.Errorf("interrupted run with nothing recorded prints %q", s)
	}
	exited := profile.Record{WorkerType: "cpu", Job: "a", Status: profile.StatusOK, RawRate: 100, CIHalfWidth: 10,
		Reason: "a exited during the measurement; rates are from 6 batches"}
	if s := describe(exited); !strings.Contains(s, "exited during the measurement") || strings.Contains(s, "--max-window") {
		t.Errorf("describe(exited) = %q", s)
	}
	exited.Reason = ""
	if s := describe(exited); !strings.Contains(s, "--max-window") {
		t.Errorf("describe(stopped at max window) = %q", s)
	}
}

// TestRunBrokenSidecarIsBadInput: a sidecar that cannot be read is bad input (exit 2), named.
func TestRunBrokenSidecarIsBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.json")
	side := profile.SidecarPath(out)
	os.WriteFile(side, []byte(`{"version": 1, "measurements": [`), 0o644)
	_, _, err := runCLI(append([]string{"--cpu", "--name", "m", "--table", out}, append(fastFlags(), "--", "true")...)...)
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), side) {
		t.Fatalf("err = %v (exit %d), want exit 2 naming %s", err, cli.ExitCode(err), side)
	}
}

// TestRunScaleFactorNeedsDevices: a scale factor larger than the selected devices of a worker
// type is bad usage, found before anything runs, with a hint at how to get the devices.
func TestRunScaleFactorNeedsDevices(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	_, _, err := runCLI("--cpu", "--scale-factor", "2", "--name", "m", "--table", out, "--", "true")
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "--cpu-slots 2") || !strings.Contains(err.Error(), "1 selected") {
		t.Errorf("--cpu --scale-factor 2: %v (exit %d), want exit 2 suggesting --cpu-slots 2", err, cli.ExitCode(err))
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the table was written (%v); nothing should run", err)
	}
	// Enough slots but one selected: the hint is --gpu, not more slots.
	_, _, err = runCLI("--cpu", "--cpu-slots", "4", "--gpu", "0", "--scale-factor", "2", "--name", "m", "--table", out, "--", "true")
	if cli.ExitCode(err) != 2 || strings.Contains(err.Error(), "--cpu-slots") || !strings.Contains(err.Error(), "--gpu") {
		t.Errorf("--cpu-slots 4 --gpu 0 --scale-factor 2: %v (exit %d), want exit 2 pointing at --gpu", err, cli.ExitCode(err))
	}

	// GPU 3 has MIG enabled: runs skip it, so the hint must not offer it.
	gpus := append(twoH200(), profile.GPU{Index: 2, UUID: "GPU-0002", Name: "NVIDIA A100", WorkerType: "a100", MIG: "disabled"},
		profile.GPU{Index: 3, UUID: "GPU-0003", Name: "NVIDIA A100", WorkerType: "a100", MIG: "enabled"})
	ctx := t.Context()
	tests := []struct {
		gpu, want string
		ok        bool
	}{
		{"0", "needs 2 devices of worker type h200, 1 selected", false},
		{"0,2", "could use are h200: GPUs 0,1; a100: GPU 2:", false},
		{"2,3", "could use are h200: GPUs 0,1; a100: GPU 2:", false},
		{"0,1", "", true},
	}
	for _, tc := range tests {
		opts := runOptions{name: "m", scaleFactor: 2, gpu: tc.gpu, tablePath: out, sharing: "time-slicing", cpuSlots: 1, settings: profile.DefaultSettings(),
			command: []string{"true"}, open: func() (profile.Devices, error) { return fakeDevices(gpus), nil }}
		streams, _, _ := cli.TestIO()
		_, closeDevs, err := setupRun(ctx, opts, streams)
		closeDevs()
		if tc.ok {
			if err != nil {
				t.Errorf("--gpu %s: %v", tc.gpu, err)
			}
			continue
		}
		if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--gpu") {
			t.Errorf("--gpu %s --scale-factor 2: %v (exit %d), want exit 2 mentioning %q and --gpu", tc.gpu, err, cli.ExitCode(err), tc.want)
		}
	}
}

// TestRunRejectsNonPositiveFlags: zero is rejected like a negative value, with the flag, the
// value and the reason, instead of being replaced by the default.
func TestRunRejectsNonPositiveFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	tests := []struct{ flag, value, want string }{
		{"window", "0s", "want a positive duration"},
		{"window", "-1s", "want a positive duration"},
		{"max-window", "0s", "want a positive duration"},
		{"max-warmup", "0s", "want a positive duration"},
		{"startup-timeout", "0s", "want a positive duration"},
		{"startup-timeout", "-5s", "want a positive duration"},
		{"stall-timeout", "0s", "want a positive duration"},
		{"kill-grace", "0s", "want a positive duration"},
		{"precision", "0", "(0, 1)"},
		{"precision", "-1", "(0, 1)"},
		{"precision", "1", "(0, 1)"},
		{"precision", "1.5", "(0, 1)"},
		{"min-batches", "0", "2 or more"},
		{"min-batches", "1", "2 or more"},
		{"min-batches", "-3", "2 or more"},
		{"settle", "0", "positive"},
		{"cpu-slots", "0", "1 or more"},
		{"cpu-slots", "-2", "1 or more"},
	}
	for _, tc := range tests {
		_, _, err := runCLI("--cpu", "--name", "m", "--table", out, "--"+tc.flag, tc.value, "--", "true")
		name := "--" + tc.flag + " " + tc.value
		if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (exit %d), want exit 2 naming %q: %q", name, err, cli.ExitCode(err), name, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the table was written (%v); nothing should run", err)
	}
}

// TestRunMaxWindowFitsMinBatches: a --max-window too short for --min-batches batches of
// --window is bad usage found up front, not a failed measurement after the warm-up.
func TestRunMaxWindowFitsMinBatches(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	_, _, err := runCLI("--cpu", "--name", "m", "--table", out, "--window", "0.3s", "--max-window", "1s", "--", "true")
	want := "--max-window 1s must cover min-batches 5 windows of 300ms (1.5s or more)"
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v (exit %d), want exit 2 with %q", err, cli.ExitCode(err), want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the table was written (%v); nothing should run", err)
	}
}

// TestRunTableSeconds: the human table shows the measuring time under the name of --json's
// seconds, and the total (warm-up included) apart from it.
func TestRunTableSeconds(t *testing.T) {
	streams, out, _ := cli.TestIO()
	rec := profile.Record{WorkerType: "cpu", Job: "a", Kind: profile.KindIsolated, Status: profile.StatusOK, Rate: 100, RawRate: 100,
		CIHalfWidth: 1, Samples: 7, PrecisionReached: true, Seconds: 12.4, TotalSeconds: 47.3}
	if err := printRecords(streams, runOptions{tablePath: "t.json"}, &profile.Runner{}, []profile.Record{rec}, 0, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	var header, row []string
	for _, l := range lines {
		cells := strings.FieldsFunc(l, func(r rune) bool { return r == '│' || r == '|' })
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case slices.Contains(cells, "worker type"):
			header = cells
		case slices.Contains(cells, "cpu"):
			row = cells
		}
	}
	measured, total := slices.Index(header, "measured s"), slices.Index(header, "total s")
	if measured < 0 || total < 0 || len(row) != len(header) {
		t.Fatalf("header %q, row %q:\n%s", header, row, out.String())
	}
	if row[measured] != "12.4" || row[total] != "47.3" {
		t.Errorf("measured s = %q, total s = %q, want 12.4 and 47.3:\n%s", row[measured], row[total], out.String())
	}
	if s := describe(rec); !strings.Contains(s, "measured 12 s, 47 s in all") {
		t.Errorf("describe = %q", s)
	}
}

// A --table in a directory that does not exist is bad usage, said before anything is measured
// (it failed on the lock file's path).
func TestRunTableDirChecked(t *testing.T) {
	_, _, err := execCmd(newRunCmd, "--cpu", "--name", "X", "--table", "/nonexistent-dir/o.json", "--", "true")
	if want := "run: --table /nonexistent-dir/o.json: directory /nonexistent-dir does not exist"; cli.ExitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v (exit %d), want exit 2 with %q", err, cli.ExitCode(err), want)
	}
}

// TestRunPairsNamesWithSeparators: --pairs takes a reference whose name holds ',' or '+' as
// that reference, not as a list or a pair, and a plain "A,B" is still two partners.
func TestRunPairsNamesWithSeparators(t *testing.T) {
	bin := buildWorkload(t)
	dir := t.TempDir()
	refs := filepath.Join(dir, "refs.json")
	os.WriteFile(refs, []byte(`{"references":[{"name":"x, y","command":["`+bin+`","-rate","100"]},
		{"name":"p+q","command":["`+bin+`","-rate","100"]}, {"name":"r","command":["`+bin+`","-rate","100"]}]}`), 0o644)
	out := filepath.Join(dir, "out.json")
	args := append([]string{"--cpu", "--cpu-slots", "2", "--name", "m", "--references", refs, "--table", out, "--json",
		"--pairs", "x, y", "--pairs", "p+q,r"}, fastFlags()...)
	stdout, stderr, err := runCLI(append(args, "--", bin, "-rate", "200")...)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	var got runJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	var pairs []string
	for _, m := range got.Measurements {
		if m.Partner != nil {
			pairs = append(pairs, m.Job+" + "+*m.Partner)
		}
	}
	slices.Sort(pairs)
	if want := []string{"m + p+q", "m + r", "m + x, y"}; !slices.Equal(pairs, want) {
		t.Errorf("pairs measured %q, want %q", pairs, want)
	}
}

// TestRunWorkerTypeForMissingDevice: an override for a device index the node lacks is a usage
// error, not silently ignored.
func TestRunWorkerTypeForMissingDevice(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.json")
	_, _, err := runCLI("--cpu", "--cpu-slots", "2", "--worker-type", "2=fast", "--name", "m", "--no-pairs", "--table", out, "--", "true")
	if cli.ExitCode(err) != 2 || !strings.Contains(err.Error(), "2=fast") || !strings.Contains(err.Error(), "0,1") {
		t.Fatalf("err = %v (exit %d), want a usage error naming device 2 and devices 0,1", err, cli.ExitCode(err))
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the table was written")
	}
}

// TestRunPairsFromStdinInterrupted: `run --pairs-from -` waiting on a stdin nobody writes (a
// terminal, a pipe whose writer hangs) must stop on SIGINT/SIGTERM/SIGHUP like the rest of the
// run; the run catches those signals, so a blocked read ignored them and only SIGKILL ended it.
func TestRunPairsFromStdinInterrupted(t *testing.T) {
	dir := t.TempDir()
	refs := filepath.Join(dir, "refs.json")
	os.WriteFile(refs, []byte(`{"references":[{"name":"ref","command":["/bin/true"]}]}`), 0o644)
	pr, pw := io.Pipe()
	defer pw.Close()
	streams, _, _ := cli.TestIO()
	streams.In = pr
	cmd := newRunCmd(streams)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(append([]string{"--cpu", "--name", "model", "--references", refs, "--pairs-from", "-",
		"--table", filepath.Join(dir, "out.json")}, append(fastFlags(), "--", "/bin/true")...))
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- cmd.ExecuteContext(ctx) }()
	time.Sleep(200 * time.Millisecond)
	cancel() // as the signal handler does
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "interrupted") || cli.ExitCode(err) != 1 {
			t.Errorf("%v (exit %d), want exit 1 saying interrupted", err, cli.ExitCode(err))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run still reading stdin 5s after it was interrupted")
	}
}
