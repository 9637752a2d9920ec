package profile

import (
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
	Seed     uint64
	// Partners names partners of the model, or "A+B" for any pair of known jobs.
	Partners []string
	// Suggestions come from `gavel-profile suggest --json`.
	Suggestions []Suggestion
	// NoPairs measures isolated rates only.
	NoPairs bool
}

// Plan lists the tasks for spec: isolated rates of the model and of every partner used, on
// every worker type, then the pairs. Skipped suggestions are explained in notes.
func Plan(spec PlanSpec) (tasks []Task, notes []string, err error) {
	known := map[string]table.JobType{spec.Model.Model: spec.Model}
	for _, r := range spec.References {
		if r.Model == spec.Model.Model {
			return nil, nil, fmt.Errorf("reference %q has the same name as the job being profiled", r.Model)
		}
		known[r.Model] = r
	}
	workers := append([]string{}, spec.WorkerTypes...)
	sort.Strings(workers)
	isWorker := map[string]bool{}
	for _, w := range workers {
		isWorker[w] = true
	}
	candidates := append([]table.JobType{spec.Model}, spec.References...)
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].Less(candidates[j]) })

	type pairKey struct {
		w    string
		a, b table.JobType
	}
	var pairs []Task
	seen := map[pairKey]bool{}
	addPair := func(w string, a, b table.JobType) {
		if b.Less(a) {
			a, b = b, a
		}
		if a.ScaleFactor != b.ScaleFactor {
			notes = append(notes, fmt.Sprintf("skipping %s + %s on %s: scale factors differ", a, b, w))
			return
		}
		if k := (pairKey{w, a, b}); !seen[k] {
			seen[k] = true
			pairs = append(pairs, Task{WorkerType: w, Job: a, Partner: b})
		}
	}
	resolve := func(name string) (table.JobType, error) {
		j, ok := known[strings.TrimSpace(name)]
		if !ok {
			return j, fmt.Errorf("pair partner %q: not the profiled job and not in the references", name)
		}
		return j, nil
	}
	switch {
	case spec.NoPairs:
	case len(spec.Partners) > 0:
		for _, p := range spec.Partners {
			a, b := spec.Model, table.JobType{}
			if x, y, ok := strings.Cut(p, "+"); ok {
				if a, err = resolve(x); err != nil {
					return nil, nil, err
				}
				p = y
			}
			if b, err = resolve(p); err != nil {
				return nil, nil, err
			}
			for _, w := range workers {
				addPair(w, a, b)
			}
		}
	case len(spec.Suggestions) > 0:
		for _, s := range spec.Suggestions {
			a, okA := known[s.Job]
			b, okB := known[s.Partner]
			switch {
			case !isWorker[s.WorkerType]:
				notes = append(notes, fmt.Sprintf("skipping suggestion %s + %s on %s: no selected GPU of that type", s.Job, s.Partner, s.WorkerType))
			case !okA || !okB:
				notes = append(notes, fmt.Sprintf("skipping suggestion %s + %s on %s: no command for %q", s.Job, s.Partner, s.WorkerType, map[bool]string{true: s.Partner, false: s.Job}[okA]))
			case a.ScaleFactor != s.ScaleFactor || b.ScaleFactor != s.ScaleFactor:
				notes = append(notes, fmt.Sprintf("skipping suggestion %s + %s on %s: scale factor %d does not match the commands'", s.Job, s.Partner, s.WorkerType, s.ScaleFactor))
			default:
				addPair(s.WorkerType, a, b)
			}
		}
	case spec.Fraction > 0:
		if spec.Fraction > 1 {
			return nil, nil, fmt.Errorf("fraction %g: want a probability in (0, 1]", spec.Fraction)
		}
		rng := rand.New(rand.NewPCG(spec.Seed, 0x6761_76656c))
		for _, w := range workers {
			for _, c := range candidates {
				if rng.Float64() < spec.Fraction {
					addPair(w, spec.Model, c)
				}
			}
		}
	default:
		if len(spec.References) > 0 {
			for _, w := range workers {
				for _, c := range candidates {
					addPair(w, spec.Model, c)
				}
			}
		}
	}
	// Isolated rates: the model everywhere, and every job that takes part in a pair on that
	// worker type (pairs are stored normalized by them).
	need := map[string]map[table.JobType]bool{}
	for _, w := range workers {
		need[w] = map[table.JobType]bool{spec.Model: true}
	}
	for _, p := range pairs {
		if need[p.WorkerType] == nil {
			need[p.WorkerType] = map[table.JobType]bool{}
		}
		need[p.WorkerType][p.Job] = true
		need[p.WorkerType][p.Partner] = true
	}
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
	return append(tasks, pairs...), notes, nil
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
