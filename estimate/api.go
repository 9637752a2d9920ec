package estimate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gavelkit/gavel/table"
)

// ErrNoReference is returned when a block has no fully measured reference job type.
var ErrNoReference = errors.New("no fully measured reference job type (a job measured with itself and every other reference on every worker type)")

// Options configures [Table] and [SuggestTable].
type Options struct {
	Workers []string // worker types to use; nil means every type with all job types of a block
	Seed    uint64   // seed of the estimator's random starts; the same seed gives the same result
	// Method nil means Pairwise{Seed: Seed}; SuggestTable then adds bootstrap fits and a
	// cross-validated sum error, as the active protocol does.
	Method Method
}

// Entry is one estimated entry of a table.
type Entry struct {
	WorkerType  string  `json:"worker_type"`
	Job         string  `json:"job"`
	Partner     string  `json:"partner"`
	ScaleFactor int     `json:"scale_factor"`
	Normalized  float64 `json:"normalized"`
	Rate        float64 `json:"rate"`
	Infeasible  bool    `json:"infeasible"`
}

// Report says what [Table] did.
type Report struct {
	Estimated           int      `json:"estimated"`
	InfeasiblePredicted int      `json:"infeasible_predicted"`
	Entries             []Entry  `json:"entries"`
	Notes               []string `json:"notes,omitempty"`
}

func (o Options) method() Method {
	if o.Method != nil {
		return o.Method
	}
	return Pairwise{Seed: o.Seed}
}

// Table returns a copy of t with every missing pair filled in by the estimator (our pairwise
// model unless o.Method says otherwise), and a report of the entries it estimated (ordered
// entries: (job, partner) and (partner, job) count separately). A table with nothing missing is
// returned unchanged, with a note.
func Table(ctx context.Context, t *table.Table, o Options) (*table.Table, *Report, error) {
	blocks, notes, err := Blocks(t, o.Workers, false)
	if err != nil {
		return nil, nil, err
	}
	out := t.Clone()
	rep := &Report{Notes: notes, Entries: []Entry{}}
	for _, d := range blocks {
		sf := d.Jobs[0].ScaleFactor
		if d.Missing() == 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("scale factor %d: no missing entries; unchanged", sf))
			continue
		}
		if len(d.References()) == 0 {
			return nil, nil, fmt.Errorf("scale factor %d: %w", sf, ErrNoReference)
		}
		r, err := o.method().Estimate(ctx, d)
		if err != nil {
			return nil, nil, fmt.Errorf("scale factor %d: %w", sf, err)
		}
		rep.fill(out, d, r)
	}
	if rep.Estimated == 0 && len(blocks) > 0 {
		rep.Notes = append(rep.Notes, "the table has no missing entries; returned unchanged")
	}
	return out, rep, nil
}

// fill writes r's estimate of every pair d is missing into out and records each estimated
// entry ((job, partner) and (partner, job) separately) in rep.
//
// A large table has millions of such entries (about 4 million for 1,000 job types on 4 worker
// types), so they are counted first and rep.Entries grown once: appending them one at a time
// copied the growing slice over and over and dominated the time of Table after the fit.
func (rep *Report) fill(out *table.Table, d *Data, r *Result) {
	sf := d.Jobs[0].ScaleFactor
	rep.Entries = slices.Grow(rep.Entries, d.Missing())
	for w, wt := range d.Workers {
		for i, a := range d.Jobs {
			for k := i; k < len(d.Jobs); k++ {
				if d.State[w][i][k] != table.Missing && d.State[w][k][i] != table.Missing {
					continue
				}
				b := d.Jobs[k]
				if r.Infeasible[w][i][k] || r.Infeasible[w][k][i] {
					out.SetInfeasible(wt, a, b)
					rep.add(Entry{WorkerType: wt, Job: a.Model, Partner: b.Model, ScaleFactor: sf, Infeasible: true})
					if i != k {
						rep.add(Entry{WorkerType: wt, Job: b.Model, Partner: a.Model, ScaleFactor: sf, Infeasible: true})
					}
					continue
				}
				na, nb := r.Norm[w][i][k], r.Norm[w][k][i]
				ra, rb := na*d.Iso[w][i], nb*d.Iso[w][k]
				out.SetPair(wt, a, b, ra, rb)
				rep.add(Entry{WorkerType: wt, Job: a.Model, Partner: b.Model, ScaleFactor: sf, Normalized: na, Rate: ra})
				if i != k {
					rep.add(Entry{WorkerType: wt, Job: b.Model, Partner: a.Model, ScaleFactor: sf, Normalized: nb, Rate: rb})
				}
			}
		}
	}
}

// add records one estimated entry.
func (rep *Report) add(e Entry) {
	rep.Entries = append(rep.Entries, e)
	rep.Estimated++
	if e.Infeasible {
		rep.InfeasiblePredicted++
	}
}

// Suggestion is one measurement worth making, in table terms (model names as in the table).
type Suggestion struct {
	WorkerType  string `json:"worker_type"`
	Job         string `json:"job"`
	Partner     string `json:"partner"`
	ScaleFactor int    `json:"scale_factor"`
	Reason      string `json:"reason"`
	// Score ranks suggestions, higher first. With the default (calibrated) estimate, cold starts
	// score 200 and up, consistency checks 100 and up, the rest their calibrated value (see
	// [Suggest]).
	Score float64 `json:"score"`
}

// SuggestTable names the budget co-location measurements most worth making next across all
// blocks of t (see [Suggest]); blocks without missing pairs or references contribute nothing.
func SuggestTable(ctx context.Context, t *table.Table, budget int, o Options) ([]Suggestion, []string, error) {
	if budget < 0 {
		return nil, nil, fmt.Errorf("budget %d: must be 0 or more", budget)
	}
	blocks, notes, err := Blocks(t, o.Workers, false)
	if err != nil {
		return nil, nil, err
	}
	var all []Suggestion
	anyRef, anyMissing := false, false
	blocksPicked, calibrated := 0, true
	for _, d := range blocks {
		if d.Missing() == 0 {
			continue
		}
		anyMissing = true
		if len(d.References()) == 0 {
			notes = append(notes, fmt.Sprintf("scale factor %d: %v; skipped", d.Jobs[0].ScaleFactor, ErrNoReference))
			continue
		}
		anyRef = true
		method := o.Method
		if method == nil {
			method = Pairwise{Seed: o.Seed, Bootstrap: activeBootstrap, Calibrate: activeFolds}
		}
		r, err := method.Estimate(ctx, d)
		if err != nil {
			return nil, nil, fmt.Errorf("scale factor %d: %w", d.Jobs[0].ScaleFactor, err)
		}
		ms, err := Suggest(d, r, budget)
		if err != nil {
			return nil, nil, err
		}
		if len(ms) > 0 {
			blocksPicked++
		}
		calibrated = calibrated && r.SumError != nil
		for _, m := range ms {
			all = append(all, Suggestion{WorkerType: d.Workers[m.W], Job: d.Jobs[m.I].Model, Partner: d.Jobs[m.K].Model,
				ScaleFactor: d.Jobs[m.I].ScaleFactor, Reason: m.Reason, Score: m.Score})
		}
	}
	if !anyRef && budget > 0 {
		for _, d := range blocks {
			if d.Missing() > 0 {
				return nil, nil, fmt.Errorf("scale factor %d: %w", d.Jobs[0].ScaleFactor, ErrNoReference)
			}
		}
	}
	if !anyMissing {
		notes = append(notes, "the table has no missing pairs; nothing to suggest")
	}
	// Best first across blocks; stable, so each block's order is kept on ties.
	slices.SortStableFunc(all, func(a, b Suggestion) int { return cmp.Compare(b.Score, a.Score) })
	if blocksPicked > 1 && calibrated { // one block's picks already keep the shares
		return withinShares(all, budget), notes, nil
	}
	if len(all) > budget {
		all = all[:budget]
	}
	return all, notes, nil
}

// withinShares returns the first budget of the ranked suggestions of several blocks (from
// calibrated estimates), skipping those that would take a capped kind of pick (feasibility
// doubt, reliance, consistency check) past its share of budget. Each block's Suggest keeps the
// shares of its own picks, but every block gets the whole budget, so without this a table of
// several scale factors would fill the budget with those kinds, whose scores rank high. A kept
// pick may have been chosen by its block after a skipped one; the block's counts assumed that
// one measured, a small approximation.
func withinShares(ranked []Suggestion, budget int) []Suggestion {
	left := map[string]int{
		ReasonFeasibility: max(1, int(feasShare*float64(budget))),
		ReasonRely:        int(relyShare * float64(budget)),
		ReasonCheck:       max(1, int(checkShare*float64(budget))),
	}
	var out []Suggestion
	for _, s := range ranked {
		if len(out) == budget {
			break
		}
		if n, capped := left[s.Reason]; capped {
			if n == 0 {
				continue
			}
			left[s.Reason] = n - 1
		}
		out = append(out, s)
	}
	return out
}
