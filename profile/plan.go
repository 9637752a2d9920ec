package profile

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/gavelkit/gavel/table"
)

// Task is one measurement: Job alone on a worker type, or Job and Partner sharing a device.
type Task struct {
	WorkerType string
	Job        table.JobType
	Partner    table.JobType // zero when isolated
}

// IsPair reports whether the task co-locates two jobs.
func (t Task) IsPair() bool { return t.Partner.Model != "" }

func (t Task) String() string {
	if t.IsPair() {
		return fmt.Sprintf("%s: %s + %s", t.WorkerType, t.Job, t.Partner)
	}
	return fmt.Sprintf("%s: %s", t.WorkerType, t.Job)
}

// PlanSpec says what to measure for one new job.
type PlanSpec struct {
	Model       table.JobType
	References  []table.JobType // reference jobs, each with a command
	WorkerTypes []string
	// Pair selection; at most one of Fraction, Partners and Suggestions is set. With none, every
	// reference (and the model itself) is paired with the model on every worker type.
	Fraction float64 // measure each (worker type, partner) pair with this probability
	// UseFraction makes Fraction apply even at 0 (no pairs); a positive Fraction applies anyway.
	UseFraction bool
	Seed        uint64
	// Partners names partners of the model, or "A+B" for any pair of known jobs; a value that
	// is not one of these is read as a comma-separated list of them.
	Partners []string
	// Suggestions come from `gavel-profile suggest --json`.
	Suggestions []Suggestion
	// NoPairs measures isolated rates only.
	NoPairs bool
	// ReferenceBlock measures the references alone and every pair of them, each reference with
	// a copy of itself too, on every worker type: the block the estimator builds on. Model is
	// then left zero, and no other pair selection is set.
	ReferenceBlock bool
}

// Plan lists the tasks for spec: isolated rates of the model and of every partner used, on
// every worker type, then the pairs. Skipped suggestions are explained in notes.
func Plan(spec PlanSpec) (tasks []Task, notes []string, err error) {
	if err := spec.check(); err != nil {
		return nil, nil, err
	}
	if spec.ReferenceBlock {
		return planBlock(spec)
	}
	known := map[string]table.JobType{spec.Model.Model: spec.Model}
	for _, r := range spec.References {
		if r.Model == spec.Model.Model {
			return nil, nil, fmt.Errorf("reference %q has the same name as the job being profiled", r.Model)
		}
		known[r.Model] = r
	}
	workers := append([]string{}, spec.WorkerTypes...)
	sort.Strings(workers)
	ps := &pairSet{seen: map[pairKey]bool{}}
	switch {
	case spec.NoPairs:
	case len(spec.Partners) > 0:
		err = ps.addPartners(spec.Model, spec.Partners, known, workers)
	case len(spec.Suggestions) > 0:
		ps.addSuggestions(spec.Suggestions, known, workers)
	case spec.UseFraction || spec.Fraction > 0:
		err = ps.addFraction(spec, workers)
	case len(spec.References) > 0:
		for _, w := range workers {
			for _, c := range candidates(spec) {
				ps.add(w, spec.Model, c)
			}
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return append(isolatedTasks([]table.JobType{spec.Model}, workers, ps.pairs), ps.pairs...), ps.notes, nil
}

// check refuses a spec that would plan nonsense: a job type or reference no table can hold,
// no worker type or an empty one, a fraction that is no probability, or two pair selections at once
// (one silently won).
func (spec PlanSpec) check() error {
	if !spec.ReferenceBlock {
		if err := spec.Model.Check(); err != nil {
			return fmt.Errorf("job: %w", err)
		}
	}
	for _, r := range spec.References {
		if err := r.Check(); err != nil {
			return fmt.Errorf("reference: %w", err)
		}
	}
	if len(spec.WorkerTypes) == 0 {
		return errors.New("no worker types: name at least one to measure on")
	}
	for _, w := range spec.WorkerTypes {
		if strings.TrimSpace(w) == "" {
			return errors.New("an empty worker type name")
		}
	}
	if !(spec.Fraction >= 0 && spec.Fraction <= 1) {
		return fmt.Errorf("fraction %v: want a probability in [0, 1]", spec.Fraction)
	}
	chosen := 0
	for _, set := range []bool{spec.NoPairs, len(spec.Partners) > 0, len(spec.Suggestions) > 0, spec.UseFraction || spec.Fraction > 0} {
		if set {
			chosen++
		}
	}
	if chosen > 1 {
		return errors.New("more than one pair selection (NoPairs, Partners, Suggestions, Fraction): give at most one")
	}
	return nil
}

// planBlock lists the tasks of spec.ReferenceBlock: every reference alone and every pair of
// references, a reference with itself included, on every worker type.
func planBlock(spec PlanSpec) ([]Task, []string, error) {
	switch {
	case len(spec.References) == 0:
		return nil, nil, errors.New("reference block: no reference jobs")
	case spec.Model != (table.JobType{}):
		return nil, nil, fmt.Errorf("reference block: measures the references only, not %s", spec.Model)
	case spec.NoPairs || len(spec.Partners) > 0 || len(spec.Suggestions) > 0 || spec.UseFraction || spec.Fraction > 0:
		return nil, nil, errors.New("reference block: measures every pair of references; no other pair selection applies")
	}
	refs := slices.Clone(spec.References)
	sort.Slice(refs, func(i, j int) bool { return refs[i].Less(refs[j]) })
	workers := slices.Sorted(slices.Values(spec.WorkerTypes))
	ps := &pairSet{seen: map[pairKey]bool{}}
	for _, w := range workers {
		for i, a := range refs {
			for _, b := range refs[i:] {
				if a.ScaleFactor == b.ScaleFactor { // Gavel pairs only equal-sized jobs
					ps.add(w, a, b)
				}
			}
		}
	}
	return append(isolatedTasks(refs, workers, ps.pairs), ps.pairs...), ps.notes, nil
}

// candidates are the partners of the model by default: the model itself and every reference,
// in table order.
func candidates(spec PlanSpec) []table.JobType {
	c := append([]table.JobType{spec.Model}, spec.References...)
	sort.Slice(c, func(i, j int) bool { return c[i].Less(c[j]) })
	return c
}

type pairKey struct {
	w    string
	a, b table.JobType
}

// pairSet collects pairs once each, in a canonical order of their two jobs.
type pairSet struct {
	pairs []Task
	seen  map[pairKey]bool
	notes []string
}

func (ps *pairSet) add(w string, a, b table.JobType) {
	if b.Less(a) {
		a, b = b, a
	}
	if a.ScaleFactor != b.ScaleFactor {
		ps.notes = append(ps.notes, fmt.Sprintf("skipping %s + %s on %s: scale factors differ", a, b, w))
		return
	}
	if k := (pairKey{w, a, b}); !ps.seen[k] {
		ps.seen[k] = true
		ps.pairs = append(ps.pairs, Task{WorkerType: w, Job: a, Partner: b})
	}
}

// addPartners pairs the model with each partner named on every worker type (see
// resolveValue).
func (ps *pairSet) addPartners(model table.JobType, values []string, known map[string]table.JobType, workers []string) error {
	for _, v := range values {
		pairs, err := resolveValue(model, v, known)
		if err != nil {
			return err
		}
		for _, pair := range pairs {
			for _, w := range workers {
				ps.add(w, pair[0], pair[1])
			}
		}
	}
	return nil
}

// resolveValue reads one --pairs value: a partner (see resolvePartner) or, failing that, a
// comma-separated list of partners. Names may hold ',' and '+', so a value is first read whole.
func resolveValue(model table.JobType, v string, known map[string]table.JobType) ([][2]table.JobType, error) {
	a, b, err := resolvePartner(model, v, known)
	if err == nil || !strings.Contains(v, ",") {
		return [][2]table.JobType{{a, b}}, err
	}
	pairs, err := resolvePartners(model, strings.Split(v, ","), known)
	if err != nil {
		// "a,y,z" with a reference "y,z" fails on "y", which alone does not say why.
		return nil, fmt.Errorf("%w (in %q, read as a comma-separated list: a name containing ',' must be given as its own --pairs value)", err, v)
	}
	return pairs, nil
}

// resolvePartners reads each of specs as one partner (see resolvePartner).
func resolvePartners(model table.JobType, specs []string, known map[string]table.JobType) ([][2]table.JobType, error) {
	pairs := make([][2]table.JobType, 0, len(specs))
	for _, spec := range specs {
		a, b, err := resolvePartner(model, spec, known)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, [2]table.JobType{a, b})
	}
	return pairs, nil
}

// resolvePartner reads one partner: a known name, paired with the model, or "A+B", a pair of
// known jobs, cut at the one '+' that leaves a known name on either side.
func resolvePartner(model table.JobType, spec string, known map[string]table.JobType) (a, b table.JobType, err error) {
	if j, ok := known[strings.TrimSpace(spec)]; ok {
		return model, j, nil
	}
	var cuts [][2]table.JobType
	for i, r := range spec {
		if r != '+' {
			continue
		}
		x, okX := known[strings.TrimSpace(spec[:i])]
		y, okY := known[strings.TrimSpace(spec[i+1:])]
		if okX && okY {
			cuts = append(cuts, [2]table.JobType{x, y})
		}
	}
	switch len(cuts) {
	case 1:
		return cuts[0][0], cuts[0][1], nil
	case 0:
		return a, b, fmt.Errorf("pair partner %q: not the profiled job, not in the references, nor A+B of two of them", spec)
	}
	return a, b, fmt.Errorf("pair partner %q: ambiguous, %d ways to read it as A+B of known jobs", spec, len(cuts))
}

// addSuggestions takes the pairs of `gavel-profile suggest --json` that can run here.
func (ps *pairSet) addSuggestions(suggestions []Suggestion, known map[string]table.JobType, workers []string) {
	for _, s := range suggestions {
		a, okA := known[s.Job]
		b, okB := known[s.Partner]
		skip := func(why string) {
			ps.notes = append(ps.notes, fmt.Sprintf("skipping suggestion %s + %s on %s: %s", s.Job, s.Partner, s.WorkerType, why))
		}
		switch {
		case !slices.Contains(workers, s.WorkerType):
			skip("no selected GPU of that type")
		case !okA:
			skip(fmt.Sprintf("no command for %q", s.Job))
		case !okB:
			skip(fmt.Sprintf("no command for %q", s.Partner))
		case a.ScaleFactor != s.ScaleFactor || b.ScaleFactor != s.ScaleFactor:
			skip(fmt.Sprintf("scale factor %d does not match the commands'", s.ScaleFactor))
		default:
			ps.add(s.WorkerType, a, b)
		}
	}
}

// addFraction keeps each default pair with probability spec.Fraction, reproducibly for a seed.
func (ps *pairSet) addFraction(spec PlanSpec, workers []string) error {
	if spec.Fraction < 0 || spec.Fraction > 1 {
		return fmt.Errorf("fraction %g: want a probability in [0, 1]", spec.Fraction)
	}
	rng := rand.New(rand.NewPCG(spec.Seed, 0x6761_76656c))
	for _, w := range workers {
		for _, c := range candidates(spec) {
			if rng.Float64() < spec.Fraction {
				ps.add(w, spec.Model, c)
			}
		}
	}
	return nil
}

// isolatedTasks lists the isolated rates to measure: the jobs always measured (the model) on
// every worker type, and every job that takes part in a pair on that worker type (pairs are
// stored normalized by them), sorted by worker type and job.
func isolatedTasks(always []table.JobType, workers []string, pairs []Task) []Task {
	need := map[string]map[table.JobType]bool{}
	for _, w := range workers {
		need[w] = map[table.JobType]bool{}
		for _, j := range always {
			need[w][j] = true
		}
	}
	for _, p := range pairs {
		if need[p.WorkerType] == nil {
			need[p.WorkerType] = map[table.JobType]bool{}
		}
		need[p.WorkerType][p.Job] = true
		need[p.WorkerType][p.Partner] = true
	}
	var tasks []Task
	for _, w := range sortedKeys(need) {
		js := make([]table.JobType, 0, len(need[w]))
		for j := range need[w] {
			js = append(js, j)
		}
		sort.Slice(js, func(i, k int) bool { return js[i].Less(js[k]) })
		for _, j := range js {
			tasks = append(tasks, Task{WorkerType: w, Job: j})
		}
	}
	return tasks
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
