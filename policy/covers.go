package policy

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Cover rows. A worker type's capacity row, Σ_c sf_c·x_cw ≤ n_w, lets a
// gang share the type's GPUs by fractions that no round can give it: with
// 4 GPUs, a 4-GPU job at 0.12 and a 1-GPU job at 1 fit the row (4·0.12 + 1
// ≤ 4), but the gang needs every GPU at once while the other job holds one
// in every round, so the gang gets nothing (the README's tour allocated
// exactly this). In any one round the combinations running on w fit its
// GPUs, so of a cover C, combinations whose GPUs together exceed n_w, at
// most |C|-1 run at once, and their time fractions on w sum to at most
// |C|-1 (a knapsack cover inequality). They are added lazily like the
// odd-set rows (builder.solve) when a job needs more than one GPU; with
// single-GPU combinations only, a cover has more than n_w of them and its
// row follows from the capacity row.
//
// Covers, cliques (cliques.go) and odd sets are not all that makes an
// allocation realizable (other knapsack facets, a job's time over several
// types); rounds.Realizable says when an allocation is beyond rounds, and
// gavel-plan allocate and rounds warn. Exact knapsack rows (column
// generation, Farkas and ray cuts) were tried and dropped: hundreds of
// re-solves, still unsettled. The isolated and proportional baselines keep
// Gavel's definitions (equal shares), which with gangs can be beyond rounds
// too; finish-time fairness starts from the isolated allocation scaled into
// the cliques and covers (settleCovers).

// coverTol is how far a cover's time may exceed |C|-1 before its row is
// added: the solver's tolerance, as for odd sets.
const coverTol = 1e-9

// cover is a worker type and a set of combinations (sorted) whose GPUs
// together exceed the type's.
type cover struct {
	w      int
	combos []int
}

func (cv cover) key() string {
	parts := make([]string, len(cv.combos))
	for k, c := range cv.combos {
		parts[k] = strconv.Itoa(c)
	}
	return strconv.Itoa(cv.w) + ":" + strings.Join(parts, ",")
}

// hasGangs reports whether some combination needs more than one GPU.
func (in *instance) hasGangs() bool {
	return slices.ContainsFunc(in.combos, func(c combo) bool { return c.sf > 1 })
}

// violatedCovers returns, for each worker type and each gang (a combination
// of more than one GPU) on it, the most violated cover containing the gang,
// when its row is violated. A cover's violation is 1 - Σ_{c∈C} (1 - x_c),
// so the most violated one is a knapsack problem: the least Σ (1 - x_c)
// over combinations with more GPUs than the type has, solved exactly by
// dynamic programming over the GPUs (coverDP). A type whose problem would
// be too large (gangs × combinations × GPUs over coverWork) is searched
// once, without fixing a gang.
func (in *instance) violatedCovers(x [][]float64) []cover {
	var out []cover
	seen := map[string]bool{}
	for w := range in.workers {
		var items, gangs []int
		for c := range x {
			if x[c][w] > coverTol {
				items = append(items, c)
				if in.combos[c].sf > 1 {
					gangs = append(gangs, c)
				}
			}
		}
		if len(gangs) == 0 {
			continue
		}
		if len(items)*(int(in.cap[w])+2) > coverWork {
			continue // too large to search even once; left to rounds.Realizable
		}
		if len(gangs)*len(items)*(int(in.cap[w])+2) > coverWork {
			gangs = []int{-1}
		}
		byRatio := in.byCostPerGPU(x, w, items)
		for _, g := range gangs {
			if in.coverBound(x, w, g, byRatio) >= 1-coverTol+coverSafe {
				continue
			}
			cv, ok := in.coverDP(x, w, g, items)
			if ok && !seen[cv.key()] {
				seen[cv.key()] = true
				out = append(out, cv)
			}
		}
	}
	return out
}

// coverSafe keeps coverBound's pruning on the safe side of rounding: the
// bound sums in another order than coverDP.
const coverSafe = 1e-12

// byCostPerGPU returns items sorted by cost per GPU on w, (1 - x_cw)/sf_c,
// ties by index: the order of coverBound's fractional knapsack.
func (in *instance) byCostPerGPU(x [][]float64, w int, items []int) []int {
	out := slices.Clone(items)
	ratio := func(c int) float64 { return (1 - x[c][w]) / float64(in.combos[c].sf) }
	slices.SortFunc(out, func(a, b int) int {
		if r := cmp.Compare(ratio(a), ratio(b)); r != 0 {
			return r
		}
		return cmp.Compare(a, b)
	})
	return out
}

// coverBound returns a lower bound on the cost coverDP would find for
// gang g (or any cover, g = -1) on w: the fractional knapsack, which takes
// the cheapest GPUs first and may take part of an item. Every cover is a
// solution of it, so when the bound is not below 1 no cover's row is
// violated and the dynamic program, the costly part of a separation (most
// separations find nothing), need not run. +Inf when the items cannot
// exceed the type's GPUs.
func (in *instance) coverBound(x [][]float64, w, g int, byRatio []int) float64 {
	rem := float64(int(in.cap[w]) + 1)
	total := 0.0
	if g >= 0 {
		total = 1 - x[g][w]
		rem -= float64(in.combos[g].sf)
	}
	for _, c := range byRatio {
		if rem <= 0 {
			break
		}
		if c == g {
			continue
		}
		sf, cost := float64(in.combos[c].sf), 1-x[c][w]
		if sf >= rem {
			return total + cost*rem/sf
		}
		total += cost
		rem -= sf
	}
	if rem > 0 {
		return math.Inf(1)
	}
	return total
}

// coverWork bounds the dynamic programs of one separation on one type
// (and so their memory, 4 bytes a step).
const coverWork = 5_000_000

// coverDP finds the cover of type w among items (containing combination g,
// unless g is -1) of least Σ (1 - x_c), and reports whether its row is
// violated. 0/1 knapsack over GPU levels, capped at need = n_w + 1; from
// records, for each item and level it improved, the level it came from.
func (in *instance) coverDP(x [][]float64, w, g int, items []int) (cover, bool) {
	need := int(in.cap[w]) + 1
	best := make([]float64, need+1) // least cost reaching min(GPUs, need)
	for k := range best {
		best[k] = math.Inf(1)
	}
	start := 0
	if g >= 0 {
		start = min(in.combos[g].sf, need)
	}
	best[start] = 0
	var rest []int
	for _, c := range items {
		if c != g {
			rest = append(rest, c)
		}
	}
	from := make([]int32, len(rest)*(need+1))
	for k := range from {
		from[k] = -1
	}
	for k, c := range rest {
		sf, cost := in.combos[c].sf, 1-x[c][w]
		for lv := need; lv >= 0; lv-- {
			if to := min(lv+sf, need); to != lv && best[lv]+cost < best[to] {
				best[to] = best[lv] + cost
				from[k*(need+1)+to] = int32(lv)
			}
		}
	}
	total := best[need]
	if g >= 0 {
		total += 1 - x[g][w]
	}
	if total >= 1-coverTol {
		return cover{}, false
	}
	var set []int
	if g >= 0 {
		set = append(set, g)
	}
	// The last item to improve a level set its final cost; before it, the
	// level it came from was set by an earlier item.
	for k, lv := len(rest)-1, need; k >= 0 && lv != start; k-- {
		if f := from[k*(need+1)+lv]; f >= 0 {
			set = append(set, rest[k])
			lv = int(f)
		}
	}
	slices.Sort(set)
	return cover{w: w, combos: set}, true
}

// hasCover reports whether the instance has the row of cover cv.
func (in *instance) hasCover(cv cover) bool { return in.coverKeys[cv.key()] }

// addCover adds the row of cover cv: its combinations take at most |C|-1 of
// the time on its worker type.
func (in *instance) addCover(cv cover) {
	if in.coverKeys == nil {
		in.coverKeys = map[string]bool{}
	}
	in.coverKeys[cv.key()] = true
	in.covers = append(in.covers, cv)
}

// coverRow returns cover cv's row.
func (b *builder) coverRow(cv cover) (idx []int, val []float64, ub float64) {
	for _, c := range cv.combos {
		if j := b.col[c][cv.w]; j >= 0 {
			idx = append(idx, j)
			val = append(val, 1)
		}
	}
	return idx, val, float64(len(cv.combos) - 1)
}

// settleCovers adds the covers x violates to the instance and scales x
// down into them, until it violates none (at most oddSetRounds passes;
// settled says whether it got there): for a starting point that is not an
// LP's solution, such as the isolated allocation finish-time fairness
// starts from.
func (in *instance) settleCovers(x [][]float64) (settled bool) {
	if !in.hasGangs() {
		return true
	}
	in.withinCliques(x)
	for k := 0; k < oddSetRounds; k++ {
		cs := slices.DeleteFunc(in.violatedCovers(x), in.hasCover)
		if len(cs) == 0 {
			return true
		}
		for _, cv := range cs {
			in.addCover(cv)
		}
		in.withinCovers(x)
	}
	return false
}

// withinCovers scales down the combinations of every known cover whose
// time exceeds |C|-1 (by the solver's tolerance), as withinOddSets does.
func (in *instance) withinCovers(x [][]float64) {
	for _, cv := range in.covers {
		t := 0.0
		for _, c := range cv.combos {
			t += x[c][cv.w]
		}
		if limit := float64(len(cv.combos) - 1); t > limit {
			for _, c := range cv.combos {
				x[c][cv.w] *= limit / t
			}
		}
	}
}
