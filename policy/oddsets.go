package policy

import (
	"slices"
	"strconv"
	"strings"
)

// Odd-set rows. A round runs each job in at most one combination, so the
// pairs running at any moment form a matching of the jobs: among an odd set
// S of jobs at most (|S|-1)/2 pairs run at once, and the time fractions of
// the pairs inside S sum to at most (|S|-1)/2. The base constraints (each
// job's fractions sum to at most 1) allow more: three jobs may each spend
// half their time with each of the other two (1.5 in the triangle), which
// no sequence of rounds can realize, and a packed LP does choose such
// points when every job wants all of its time (Gavel's LP has the same
// hole). The matching polytope needs a row for every odd set (Edmonds), too
// many to add up front, so they are added lazily: solve, look for violated
// sets of 3 and 5 jobs among the pairs the solution uses, add their rows,
// solve again (builder.solve).

// oddSetTol is how far a set's pair time may exceed (|S|-1)/2 before its row
// is added: the solver's tolerance. An accepted solution then breaks any
// row found later by no more than the solver breaks any other row, which
// water filling's retry (wfRelax) absorbs when a later LP keeps earlier
// levels.
const oddSetTol = 1e-9

// oddSetLimit caps the connected 5-job sets examined per separation, so a
// solution whose pairs form a dense graph (many tiny fractions) cannot make
// the search explode; triangles are always examined in full.
const oddSetLimit = 200000

// oddSetRounds caps the solve-separate rounds of one LP (options can set
// another cap, for tests). An LP stopped by it, or by oddSetLimit, is
// counted in SolveStats.Unsettled and the allocation warns.
const oddSetRounds = 25

// pairGraph is the support of a solution's pairs: y[a][b] is the time
// fraction (over all worker types) of the pair of jobs a and b.
type pairGraph struct {
	y   []map[int]float64
	nbr [][]int // sorted neighbours
}

func (in *instance) pairGraph(x [][]float64) *pairGraph {
	g := &pairGraph{y: make([]map[int]float64, in.m()), nbr: make([][]int, in.m())}
	for c := in.m(); c < len(in.combos); c++ {
		s := 0.0
		for _, v := range x[c] {
			s += v
		}
		if s <= oddSetTol/10 {
			continue
		}
		a, b := in.combos[c].a, in.combos[c].b
		for _, e := range [2][2]int{{a, b}, {b, a}} {
			if g.y[e[0]] == nil {
				g.y[e[0]] = map[int]float64{}
			}
			g.y[e[0]][e[1]] += s
		}
	}
	for a, m := range g.y {
		for b := range m {
			g.nbr[a] = append(g.nbr[a], b)
		}
		slices.Sort(g.nbr[a])
	}
	return g
}

// inside is the pairs' time inside set s.
func (g *pairGraph) inside(s []int) float64 {
	t := 0.0
	for i, a := range s {
		for _, b := range s[i+1:] {
			t += g.y[a][b]
		}
	}
	return t
}

// violatedOddSets returns the sets of 3 and 5 jobs (sorted) whose pairs take
// more than (|S|-1)/2 of the time in x, in a deterministic order, and
// whether every set was examined (false when the 5-job search stopped at
// oddSetLimit).
func (in *instance) violatedOddSets(x [][]float64) (sets [][]int, complete bool) {
	g := in.pairGraph(x)
	var out [][]int
	for a := range g.nbr {
		for _, b := range g.nbr[a] {
			if b <= a {
				continue
			}
			for _, c := range g.nbr[b] {
				if c > b && g.y[a][c] > 0 && g.inside([]int{a, b, c}) > 1+oddSetTol {
					out = append(out, []int{a, b, c})
				}
			}
		}
	}
	seen := 0
	for v := range g.nbr {
		g.connectedSets(v, []int{v}, 5, &seen, func(s []int) {
			if g.inside(s) > 2+oddSetTol {
				out = append(out, slices.Sorted(slices.Values(s)))
			}
		})
	}
	return out, seen < oddSetLimit
}

// connectedSets calls f once for every connected set of size jobs whose
// smallest member is s[0] and that extends s, growing it by neighbours
// larger than s[0] (each set is reached once: a vertex joins only as a
// neighbour of the newest member or later, as in ESU enumeration, via the
// extension list). It stops after oddSetLimit sets in all (*seen).
func (g *pairGraph) connectedSets(v int, s []int, size int, seen *int, f func([]int)) {
	var ext []int
	for _, u := range g.nbr[v] {
		if u > v {
			ext = append(ext, u)
		}
	}
	g.extend(s, ext, v, size, seen, f)
}

// extend is one step of ESU (Wernicke 2006): take each extension vertex in
// turn, add to the remaining extension its neighbours that are larger than
// the root and not adjacent to the set so far.
func (g *pairGraph) extend(s, ext []int, root, size int, seen *int, f func([]int)) {
	if len(s) == size {
		*seen++
		f(s)
		return
	}
	for len(ext) > 0 && *seen < oddSetLimit {
		w := ext[len(ext)-1]
		ext = ext[:len(ext)-1]
		next := slices.Clone(ext)
		for _, u := range g.nbr[w] {
			if u > root && !slices.Contains(next, u) && !g.adjacentToSet(u, s) {
				next = append(next, u)
			}
		}
		g.extend(append(slices.Clone(s), w), next, root, size, seen, f)
	}
}

// adjacentToSet reports whether u is in s or a neighbour of one of its jobs.
func (g *pairGraph) adjacentToSet(u int, s []int) bool {
	for _, a := range s {
		if _, ok := g.y[u][a]; ok || u == a {
			return true
		}
	}
	return false
}

// withinOddSets scales down the pairs inside every known odd set whose time
// exceeds (|S|-1)/2 (by the solver's tolerance), so that levels taken from x
// are reachable exactly under those rows too (see withinCapacity).
func (in *instance) withinOddSets(x [][]float64) {
	for _, s := range in.oddSets {
		var inside []int
		t := 0.0
		for c := in.m(); c < len(in.combos); c++ {
			if cb := &in.combos[c]; slices.Contains(s, cb.a) && slices.Contains(s, cb.b) {
				inside = append(inside, c)
				for _, v := range x[c] {
					t += v
				}
			}
		}
		if limit := float64(len(s)-1) / 2; t > limit {
			for _, c := range inside {
				for w := range x[c] {
					x[c][w] *= limit / t
				}
			}
		}
	}
}

// hasOddSet reports whether the instance has the row of job set s.
func (in *instance) hasOddSet(s []int) bool { return in.oddKeys[oddSetKey(s)] }

// addOddSet adds the row of job set s: the pairs inside s, on every worker
// type, take at most (|s|-1)/2 of the time. It reports false when the
// instance already has it.
func (in *instance) addOddSet(s []int) bool {
	k := oddSetKey(s)
	if in.oddKeys[k] {
		return false
	}
	if in.oddKeys == nil {
		in.oddKeys = map[string]bool{}
	}
	in.oddKeys[k] = true
	in.oddSets = append(in.oddSets, s)
	return true
}

func oddSetKey(s []int) string {
	var b strings.Builder
	for _, v := range s {
		b.WriteString(strconv.Itoa(v))
		b.WriteByte(',')
	}
	return b.String()
}

// oddSetRow returns odd set s's row: Σ idx·val ≤ ub (no entries when s has
// no pair columns).
func (b *builder) oddSetRow(s []int) (idx []int, val []float64, ub float64) {
	for _, a := range s {
		for _, c := range b.in.byJob[a] {
			cb := &b.in.combos[c]
			if !cb.pair() || cb.a != a || !slices.Contains(s, cb.b) {
				continue
			}
			for _, j := range b.col[c] {
				if j >= 0 {
					idx = append(idx, j)
					val = append(val, 1)
				}
			}
		}
	}
	return idx, val, float64(len(s)-1) / 2
}
