package table

// locate gives each problem of ps that is about one entry (a job's isolated rate or a pair) the
// line of that entry in the input, or, when the input gave the pair only under the partner, the
// line of the partner's entry for the job. These problems are found once the table is built,
// after the walk over the input, so the input is walked again for their entries; a table
// without such problems costs nothing more.
func (b *builder) locate(ps Problems) Problems {
	want := map[entryKey]bool{}
	keys := make([]entryKey, len(ps))
	for i, p := range ps {
		if e, ok := b.entryOf(p); ok {
			keys[i] = e
			want[e], want[e.reverse()] = true, true
		}
	}
	if len(want) == 0 {
		return ps
	}
	lineOf := b.lineOf
	if lineOf == nil {
		offsets := b.entryOffsets(want)
		lineOf = func(e entryKey) (int, int) {
			if at, ok := offsets[e]; ok {
				return b.position(at)
			}
			return 0, 0
		}
	}
	for i, p := range ps {
		if !want[keys[i]] {
			continue
		}
		p.Line, p.Column = lineOf(keys[i])
		if p.Line == 0 && keys[i].k != (JobType{}) {
			p.Line, p.Column = lineOf(keys[i].reverse())
		}
	}
	return ps
}

// entryOf names the entry p is about, if it is about one and has no line yet.
func (b *builder) entryOf(p *Problem) (entryKey, bool) {
	if p.Line != 0 || p.Worker == "" || p.Job == "" || p.Partner == "" {
		return entryKey{}, false
	}
	j, err := b.jobType(p.Job)
	if err != nil {
		return entryKey{}, false
	}
	e := entryKey{w: p.Worker, j: j}
	if p.Partner != isolatedKey {
		if e.k, err = b.jobType(p.Partner); err != nil {
			return entryKey{}, false
		}
	}
	return e, true
}

// reverse is the pair's other direction: the partner's entry for the job. An isolated rate is
// its own reverse.
func (e entryKey) reverse() entryKey {
	if e.k == (JobType{}) {
		return e
	}
	return entryKey{e.w, e.k, e.j}
}

// entryOffsets walks the JSON input again and returns the offset of the key of each wanted
// entry, the first where a key is repeated (the one the table kept). The input was read
// without a syntax error, so the walk cannot fail.
func (b *builder) entryOffsets(want map[entryKey]bool) map[entryKey]int {
	jobs := map[workerJob]bool{}
	for e := range want {
		jobs[workerJob{e.w, e.j}] = true
	}
	found := make(map[entryKey]int, len(want))
	s := &scanner{data: b.s.data, copied: b.s.copied}
	s.space()
	s.object(func(w string, _ int) bool {
		if s.peek() != '{' {
			return s.skip()
		}
		return s.object(func(jk string, _ int) bool {
			j, err := b.jobType(jk)
			if err != nil || !jobs[workerJob{w, j}] || s.peek() != '{' {
				return s.skip()
			}
			return s.object(func(pk string, at int) bool {
				e := entryKey{w: w, j: j}
				if pk != isolatedKey {
					e.k, err = b.jobType(pk)
				}
				if _, seen := found[e]; err == nil && want[e] && !seen {
					found[e] = at
				}
				return s.skip()
			})
		})
	})
	return found
}
