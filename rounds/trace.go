package rounds

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/gavelkit/gavel/policy"
	"github.com/gavelkit/gavel/table"
)

// TraceJob is one job of a trace.
type TraceJob struct {
	policy.Job
	// SLOFactor is Gavel's SLO multiplier (0 = none): the deadline is
	// arrival + SLOFactor × the job's duration alone on its fastest worker
	// type of the cluster, among those with at least its scale factor of
	// GPUs. Ignored when Job.SLO (seconds) is set.
	SLOFactor float64
	Line      int // line in the trace file, 0 for jobs files
}

// ErrTrace is wrapped by every trace syntax error.
var ErrTrace = errors.New("bad trace")

// ParseTrace reads Gavel's trace format (gavel-reference §1.4): one job per
// line, 10 tab-separated fields (job_type, command, working_directory,
// num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight,
// SLO, arrival_time). Jobs get ids "0", "1", … in line order, as Gavel
// numbers them on arrival; blank lines are skipped. name is used in errors.
func ParseTrace(r io.Reader, name string) ([]TraceJob, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	var jobs []TraceJob
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		j, err := parseTraceLine(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		j.ID = strconv.Itoa(len(jobs))
		j.Line = line
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: %w: no jobs", name, ErrTrace)
	}
	return jobs, nil
}

func parseTraceLine(text string) (TraceJob, error) {
	f := strings.Split(text, "\t")
	if len(f) != 10 {
		return TraceJob{}, fmt.Errorf("%w: %d tab-separated fields, want 10 (job_type, command, working_directory, num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time)", ErrTrace, len(f))
	}
	num := func(i int, field string) (float64, error) {
		v, err := strconv.ParseFloat(strings.TrimSpace(f[i]), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("%w: field %d (%s): %q is not a finite number", ErrTrace, i+1, field, f[i])
		}
		return v, nil
	}
	positive := func(i int, field string) (float64, error) {
		v, err := num(i, field)
		if err == nil && v <= 0 {
			err = fmt.Errorf("%w: field %d (%s): %v must be positive", ErrTrace, i+1, field, v)
		}
		return v, err
	}
	var j TraceJob
	j.Type.Model = strings.TrimSpace(f[0])
	if j.Type.Model == "" {
		return j, fmt.Errorf("%w: field 1 (job_type) is empty", ErrTrace)
	}
	if s := strings.TrimSpace(f[4]); s != "0" && s != "1" {
		return j, fmt.Errorf("%w: field 5 (needs_data_dir): %q is not 0 or 1", ErrTrace, f[4])
	}
	steps, err := positive(5, "total_steps")
	if err != nil {
		return j, err
	}
	sf, err := strconv.Atoi(strings.TrimSpace(f[6]))
	if err != nil || sf < 1 {
		return j, fmt.Errorf("%w: field 7 (scale_factor): %q is not a positive integer", ErrTrace, f[6])
	}
	weight, err := num(7, "priority_weight")
	if err != nil {
		return j, err
	}
	if err := policy.CheckWeight(weight); err != nil {
		return j, fmt.Errorf("%w: field 8 (priority_weight): %v", ErrTrace, err)
	}
	slo, err := num(8, "SLO")
	if err != nil {
		return j, err
	}
	if slo == 0 { // Gavel reads a multiplier, negative for none: 0 was taken for none here
		return j, fmt.Errorf("%w: field 9 (SLO): 0 would put the deadline at the arrival; -1 means no SLO", ErrTrace)
	}
	arrival, err := num(9, "arrival_time")
	if err != nil {
		return j, err
	}
	if arrival < 0 {
		return j, fmt.Errorf("%w: field 10 (arrival_time): %v is negative", ErrTrace, arrival)
	}
	j.Type.ScaleFactor = sf
	if steps != math.Trunc(steps) { // Gavel reads an int here; 100.9 was cut to 100 without a word
		return j, fmt.Errorf("%w: field 6 (total_steps): %v is not a whole number of steps", ErrTrace, steps)
	}
	j.TotalSteps = steps
	j.Weight = weight
	j.Arrival = arrival
	if slo > 0 {
		j.SLOFactor = slo
	}
	return j, nil
}

// FormatTrace writes jobs in Gavel's trace format (commands left empty). The format has no
// ids (ParseTrace numbers the jobs in line order), entities or time run; a job it cannot hold
// otherwise is an error naming the job, and nothing is written: an SLO in seconds (Job.SLO,
// as Generator draws them; the format holds SLOFactor), total steps that are not a whole
// positive number, steps done, a model name with a tab, a line break or surrounding
// spaces, or anything else ParseTrace would refuse (a scale factor below 1, a weight out of
// range, a negative arrival).
func FormatTrace(w io.Writer, jobs []TraceJob) error {
	for _, j := range jobs {
		var why string
		switch m := j.Type.Model; {
		case j.SLO != 0:
			why = fmt.Sprintf("SLO of %v s: the trace format holds a multiplier of the job's duration (SLOFactor), not seconds", j.SLO)
		case !(j.TotalSteps > 0) || j.TotalSteps != math.Trunc(j.TotalSteps) || math.IsInf(j.TotalSteps, 0):
			why = fmt.Sprintf("total steps %v: the trace format holds a whole positive number", j.TotalSteps)
		case math.IsNaN(j.SLOFactor) || math.IsInf(j.SLOFactor, 0):
			why = fmt.Sprintf("SLO factor %v: want a number (0 or less for none)", j.SLOFactor)
		case j.StepsDone != 0:
			why = fmt.Sprintf("%v steps done: the trace format has no such field (the job would start again)", j.StepsDone)
		case m == "" || m != strings.TrimSpace(m) || strings.ContainsAny(m, "\t\r\n"):
			why = fmt.Sprintf("model %q: the trace format cannot hold an empty name, a tab, a line break or surrounding spaces", m)
		}
		if why != "" {
			return fmt.Errorf("%w: job %q: %s", ErrTrace, j.ID, why)
		}
	}
	var out strings.Builder
	for _, j := range jobs {
		slo := -1.0
		if j.SLOFactor > 0 {
			slo = j.SLOFactor
		}
		// Weights, arrival times and steps as written in full: ParseTrace reads
		// them back exactly (a weight of 0.5 truncated to 0 was refused, and
		// steps beyond int64 were written as -9223372036854775808).
		line := fmt.Sprintf("%s\t\t\t\t0\t%s\t%d\t%s\t%g\t%s", j.Type.Model,
			strconv.FormatFloat(j.TotalSteps, 'f', -1, 64), j.Type.ScaleFactor,
			strconv.FormatFloat(j.EffectiveWeight(), 'f', -1, 64), slo, strconv.FormatFloat(j.Arrival, 'f', -1, 64))
		// The rest ParseTrace refuses (a scale factor below 1, a weight out of range, a negative
		// arrival, an infinite SLO factor) is refused here too.
		if _, err := parseTraceLine(line); err != nil {
			return fmt.Errorf("job %q: %w", j.ID, err)
		}
		out.WriteString(line + "\n")
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// LoadTrace reads path as a jobs file (JSON, cli-contract.md) when it starts
// with '{', else as a Gavel trace. It also returns the jobs file's entities.
func LoadTrace(path string) ([]TraceJob, map[string]policy.Entity, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return ReadTrace(f, path)
}

// ReadTrace is LoadTrace reading from r, a file called name in errors (such
// as "stdin"; positions read name:line:column).
func ReadTrace(r io.Reader, name string) ([]TraceJob, map[string]policy.Entity, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	// JSON (a top-level list too, so that its error says what a jobs file must be rather than
	// what a tab-separated line lacks).
	if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		jf, err := policy.ReadJobsNamed(bytes.NewReader(data), name) // errors read name:line:column
		if err != nil {
			return nil, nil, err
		}
		jobs := make([]TraceJob, len(jf.Jobs))
		for i, j := range jf.Jobs {
			jobs[i] = TraceJob{Job: j}
		}
		return jobs, jf.Entities, nil
	}
	jobs, err := ParseTrace(bytes.NewReader(data), name)
	return jobs, nil, err
}

// UnrunnableError says a job can never run on the cluster.
type UnrunnableError struct {
	Job    string
	Type   table.JobType
	Reason string
}

// Error names the job, its type and why it cannot run.
func (e *UnrunnableError) Error() string {
	return fmt.Sprintf("job %q (%s): %s", e.Job, e.Type, e.Reason)
}

// Prepare checks jobs against the table and cluster and returns the mechanism's
// view of them in arrival order (ties by id, policy.CompareIDs, as the round
// mechanism and FIFO break them). A job type missing from
// the table, or a job that can never run (its scale factor exceeds every
// worker type it has a positive rate on), is an error naming the job. SLO
// factors become deadlines in seconds.
func Prepare(t *table.Table, c policy.Cluster, in []TraceJob) ([]policy.Job, error) {
	idx := make([]int, len(in))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := in[idx[a]], in[idx[b]]
		if x.Arrival != y.Arrival {
			return x.Arrival < y.Arrival
		}
		return policy.CompareIDs(x.ID, y.ID) < 0
	})
	out := make([]policy.Job, 0, len(in))
	seen := map[string]bool{}
	for _, i := range idx {
		tj := in[i]
		j := tj.Job
		where := func() string {
			if tj.Line > 0 {
				return fmt.Sprintf("line %d: ", tj.Line)
			}
			return fmt.Sprintf("jobs[%d]: ", i) // the entry of a jobs file, or of in
		}
		switch {
		case j.ID == "":
			return nil, fmt.Errorf("%sjob of type %s: empty id", where(), j.Type)
		case seen[j.ID]:
			return nil, fmt.Errorf("%sjob %q: duplicate id", where(), j.ID)
		}
		seen[j.ID] = true
		if !t.HasJobType(j.Type) {
			return nil, fmt.Errorf("%sjob %q: job type %s is not in the throughput table", where(), j.ID, j.Type)
		}
		best, err := bestRate(t, c, j)
		if err != nil {
			return nil, fmt.Errorf("%s%w", where(), err)
		}
		if j.SLO == 0 && tj.SLOFactor > 0 {
			j.SLO = tj.SLOFactor * j.TotalSteps / best
		}
		if j.StepsRemaining() <= 0 {
			return nil, fmt.Errorf("%sjob %q: no steps left to run", where(), j.ID)
		}
		out = append(out, j)
	}
	return out, nil
}

// bestRate returns j's best isolated rate on the worker types of c it can
// run on (those with at least its scale factor of GPUs, so not types listed
// with 0), or an UnrunnableError when there is none: the SLO factor's
// duration is the job's time alone there.
func bestRate(t *table.Table, c policy.Cluster, j policy.Job) (float64, error) {
	best, rated := 0.0, false
	for _, w := range c.WorkerTypes() {
		r, _ := t.Isolated(w, j.Type)
		rated = rated || r > 0
		if c[w] >= j.Type.ScaleFactor {
			best = math.Max(best, r)
		}
	}
	switch {
	case !rated:
		return 0, &UnrunnableError{j.ID, j.Type, "rate is zero or missing on every worker type of the cluster"}
	case best == 0:
		return 0, &UnrunnableError{j.ID, j.Type, fmt.Sprintf("scale factor %d exceeds the GPU count of every worker type it can run on", j.Type.ScaleFactor)}
	}
	return best, nil
}
