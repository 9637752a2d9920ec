package table

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
)

// The reader as it was before it became a single pass (commit 6dcb673), kept as the oracle of
// the differential tests: it split each level of the file with encoding/json's decoder, so its
// member boundaries, key decoding and offsets are the decoder's own. It shares the value
// parsers (parseRate, parsePair) with the reader under test; addPairs and Validate are kept
// here as they were too.
//
// One change: the decoder reads numbers as json.Number. Reading them as float64 made a value
// such as 1e999, where an object belonged, fail with "json: cannot unmarshal number 1e999
// into Go value of type float64" instead of saying what was found; the single pass says
// "found a number 1e999" (TestReadWrongValueType).
//
// Another: a pair given on one side only whose partner has no entry of its own on the worker
// type is reported as an unknown partner (ErrUnknownPartner), as the reader now does; addPairs
// takes the job types that have entries of their own for that.
//
// And a self-pair with two different rates is a warning (ErrSelfPairUneven), as in Validate.

func oldCheck(r io.Reader, file string) (*Table, Problems) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, Problems{{File: file, Err: err}}
	}
	data = maskNonFinite(data)
	var whole json.RawMessage
	if err := json.Unmarshal(data, &whole); err != nil {
		return nil, Problems{syntaxProblem(data, err)}.withFile(file)
	}
	top, err := oldMembers(data, 0)
	if err != nil {
		return nil, Problems{{Line: 1, Column: 1, Err: fmt.Errorf("%w: %v (want an object of worker types)", ErrSyntax, err)}}.withFile(file)
	}
	t, ps := oldBuild(data, top)
	ps = append(ps, t.oldValidate()...)
	return t, ps.withFile(file)
}

type oldMember struct {
	key     string
	value   json.RawMessage
	at      int64
	valueAt int64
}

func oldMembers(data []byte, base int64) ([]oldMember, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("found %s", kindOf(data))
	}
	var out []oldMember
	for dec.More() {
		at := base + dec.InputOffset()
		for at < base+int64(len(data)) && bytes.IndexByte([]byte(" \t\r\n,"), data[at-base]) >= 0 {
			at++
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, oldMember{key: key, value: v, at: at, valueAt: base + dec.InputOffset() - int64(len(v))})
	}
	return out, nil
}

type oldBuilder struct {
	data  []byte
	t     *Table
	ps    Problems
	lines []int
	// repeats holds, per worker type, the pairs (job, partner) of job entries given again: a
	// partner's pair that only the repeat held is not reported as one-sided (the reader's rule).
	repeats map[string]map[[2]JobType]bool
}

func oldBuild(data []byte, top []oldMember) (*Table, Problems) {
	t := New()
	b := &oldBuilder{data: data, t: t, repeats: map[string]map[[2]JobType]bool{}}
	pairs := map[string]map[[2]JobType][2]float64{}
	own := map[string]map[JobType]bool{}
	seen := map[string]int64{}
	for _, wm := range top {
		w := wm.key
		if b.repeated(seen, wm, "worker type", func() *Problem { return &Problem{Worker: w} }) {
			continue
		}
		if w == "" {
			b.add(&Problem{Err: fmt.Errorf("%w: empty worker type name", ErrBadKey)})
			continue
		}
		jobs, err := oldMembers(wm.value, wm.valueAt)
		if err != nil {
			b.add(&Problem{Worker: w, Err: fmt.Errorf("%w: %v, want an object of job types", ErrBadValue, err)})
			continue
		}
		t.worker(w, true)
		pairs[w] = map[[2]JobType][2]float64{}
		own[w] = map[JobType]bool{}
		b.worker(w, jobs, pairs[w], own[w])
	}
	for _, w := range slices.Sorted(mapsKeys(pairs)) {
		b.ps = append(b.ps, oldAddPairs(t, w, pairs[w], own[w], b.repeats[w])...)
	}
	return t, b.ps
}

func (b *oldBuilder) position(offset int64) (line, col int) {
	if b.lines == nil {
		b.lines = make([]int, 0, bytes.Count(b.data, []byte("\n")))
		for x, c := range b.data {
			if c == '\n' {
				b.lines = append(b.lines, x)
			}
		}
	}
	offset = min(offset, int64(len(b.data)))
	n, _ := slices.BinarySearch(b.lines, int(offset))
	start := 0
	if n > 0 {
		start = b.lines[n-1] + 1
	}
	return n + 1, int(offset) - start + 1
}

func (b *oldBuilder) add(p *Problem) { b.ps = append(b.ps, p) }

func (b *oldBuilder) repeated(seen map[string]int64, m oldMember, what string, problem func() *Problem) bool {
	first, dup := seen[m.key]
	if !dup {
		seen[m.key] = m.at
		return false
	}
	firstLine, _ := b.position(first)
	loc := problem()
	loc.Line, loc.Column = b.position(m.at)
	loc.Err = fmt.Errorf("%w: %s %s appears again (first at line %d); a table holds one value per key", ErrDuplicateKey, what, quote(m.key), firstLine)
	b.add(loc)
	return true
}

func (b *oldBuilder) worker(w string, jobs []oldMember, pairs map[[2]JobType][2]float64, own map[JobType]bool) {
	seen := map[string]int64{}
	for _, jm := range jobs {
		jk := jm.key
		if b.repeated(seen, jm, "job", func() *Problem { return &Problem{Worker: w, Job: jk} }) {
			b.recordRepeat(w, jk, jm)
			continue
		}
		j, err := ParseJobType(jk)
		if err != nil {
			b.add(&Problem{Worker: w, Job: jk, Err: err})
			continue
		}
		own[j] = true
		entries, err := oldMembers(jm.value, jm.valueAt)
		if err != nil {
			b.add(&Problem{Worker: w, Job: jk, Err: fmt.Errorf("%w: %v, want an object of partners", ErrBadValue, err)})
			continue
		}
		b.job(w, j, jk, entries, pairs)
	}
}

// recordRepeat records the partners of the repeated entry jm of job key jk on w.
func (b *oldBuilder) recordRepeat(w, jk string, jm oldMember) {
	j, err := ParseJobType(jk)
	if err != nil {
		return
	}
	entries, err := oldMembers(jm.value, jm.valueAt)
	if err != nil {
		return
	}
	for _, em := range entries {
		if k, err := ParseJobType(em.key); err == nil {
			if b.repeats[w] == nil {
				b.repeats[w] = map[[2]JobType]bool{}
			}
			b.repeats[w][[2]JobType{j, k}] = true
		}
	}
}

func (b *oldBuilder) job(w string, j JobType, jk string, entries []oldMember, pairs map[[2]JobType][2]float64) {
	seen := map[string]int64{}
	for _, em := range entries {
		pk, v := em.key, em.value
		at := func() *Problem { return &Problem{Worker: w, Job: jk, Partner: pk} }
		bad := func(err error) {
			loc := at()
			loc.Err = err
			b.add(loc)
		}
		if b.repeated(seen, em, "partner", at) {
			continue
		}
		if pk == isolatedKey {
			r, err := parseRate(v)
			if err != nil {
				bad(err)
				continue
			}
			b.t.SetIsolated(w, j, r)
			continue
		}
		k, err := ParseJobType(pk)
		if err != nil {
			bad(err)
			continue
		}
		r, err := parsePair(v)
		if err != nil {
			bad(err)
			continue
		}
		pairs[[2]JobType{j, k}] = r
	}
}

// oldAddPairs adds the pairs read for worker type w; own, when not nil, holds the job types
// that have an entry of their own there.
func oldAddPairs(t *Table, w string, pairs map[[2]JobType][2]float64, own map[JobType]bool, repeats map[[2]JobType]bool) Problems {
	var ps Problems
	keys := slices.SortedFunc(mapsKeys(pairs), func(x, y [2]JobType) int {
		if c := compareJobTypes(x[0], y[0]); c != 0 {
			return c
		}
		return compareJobTypes(x[1], y[1])
	})
	for _, key := range keys {
		a, b := key[0], key[1]
		r := pairs[key]
		if a == b {
			t.SetPair(w, a, a, r[0], r[1])
			continue
		}
		rev, ok := pairs[[2]JobType{b, a}]
		loc := &Problem{Worker: w, Job: a.Key(), Partner: b.Key()}
		switch {
		case !ok && own != nil && !own[b]:
			loc.Err = fmt.Errorf("%w: %s is not a job type of worker type %q (it has no entry of its own)", ErrUnknownPartner, b.Key(), w)
			ps = append(ps, loc)
		case !ok && repeats[[2]JobType{b, a}]:
		case !ok:
			loc.Err = fmt.Errorf("%w: %s has no entry for %s", ErrOneSided, b.Key(), a.Key())
			ps = append(ps, loc)
		case b.Less(a):
			continue
		case !near(r[0], rev[1]) || !near(r[1], rev[0]):
			loc.Err = fmt.Errorf("%w: [%v, %v] here, [%v, %v] under %s", ErrInconsistent, r[0], r[1], rev[0], rev[1], b.Key())
			ps = append(ps, loc)
		}
		t.SetPair(w, a, b, r[0], r[1])
	}
	return ps
}

func (t *Table) oldValidate() Problems {
	var ps Problems
	for _, w := range t.WorkerTypes() {
		wt := t.workers[w]
		for _, j := range t.JobTypes() {
			if r, ok := wt.isolated[j]; ok {
				if err := checkRate(r); err != nil {
					ps = append(ps, &Problem{Worker: w, Job: j.Key(), Partner: isolatedKey, Err: err})
				}
			}
			for _, k := range t.Partners(w, j) {
				if p := t.oldCheckPair(w, j, k); p != nil {
					ps = append(ps, p)
				}
			}
		}
	}
	return ps
}

func (t *Table) oldCheckPair(w string, j, k JobType) *Problem {
	r := t.workers[w].pairs[j][k]
	p := &Problem{Worker: w, Job: j.Key(), Partner: k.Key()}
	for _, v := range r {
		if err := checkRate(v); err != nil {
			p.Err = err
			return p
		}
	}
	if j.ScaleFactor != k.ScaleFactor {
		p.Err = fmt.Errorf("%w: %d vs %d", ErrScaleFactorMismatch, j.ScaleFactor, k.ScaleFactor)
		return p
	}
	if iso, ok := t.Isolated(w, j); ok && r[0] > iso*(1+symmetryTolerance) {
		p.Warning = true
		p.Err = fmt.Errorf("%w: %v > %v", ErrAboveIsolated, r[0], iso)
		return p
	}
	if j == k && !near(r[0], r[1]) {
		p.Warning = true
		p.Err = fmt.Errorf("%w: [%v, %v]; two copies of one job type have no order, so one rate is expected (Gavel's profiler stores their mean in both slots)", ErrSelfPairUneven, r[0], r[1])
		return p
	}
	return nil
}
