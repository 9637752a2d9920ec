package table

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"unicode/utf8"

	"github.com/gavelkit/gavel/internal/jsonfile"
)

// isolatedKey is the partner key of an isolated rate: Gavel's profiler wrote
// a Python None dict key, which json.dump turns into "null".
const isolatedKey = "null"

// Read reads a table in Gavel's JSON format. It fails when the input holds
// any error (not counting warnings); the error is then a Problems listing
// every one found.
func Read(r io.Reader) (*Table, error) {
	t, ps := Check(r, "")
	if errs := ps.Errors(); len(errs) > 0 {
		return nil, errs
	}
	return t, nil
}

// Load reads the table in the named file, as Read does; problems name the file.
func Load(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	defer f.Close()
	t, ps := Check(f, path)
	if errs := ps.Errors(); len(errs) > 0 {
		return nil, errs
	}
	return t, nil
}

// Check reads a table and returns every problem it finds, warnings
// included, naming file in each. The returned table holds every entry that
// could be read (it is nil only when the JSON itself is malformed), so a
// caller may inspect or repair a partly bad file.
func Check(r io.Reader, file string) (*Table, Problems) {
	data, err := readAll(r)
	if err != nil {
		return nil, Problems{{File: file, Err: err}}
	}
	t, ps := read(data)
	return t, ps.withFile(file)
}

// readAll is io.ReadAll with the buffer sized from the reader when it knows its length:
// growing it by doubling held up to twice a large table in memory.
func readAll(r io.Reader) ([]byte, error) {
	b := make([]byte, 0, sizeHint(r))
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// sizeHint is the length of what r holds, plus one byte for the read that sees the end.
func sizeHint(r io.Reader) int {
	switch r := r.(type) {
	case interface{ Len() int }: // bytes.Reader, strings.Reader, bytes.Buffer
		return r.Len() + 1
	case *os.File:
		if fi, err := r.Stat(); err == nil && fi.Mode().IsRegular() {
			return int(fi.Size()) + 1
		}
	}
	return 512
}

// read builds the table in one walk over data. Syntax errors are then told by encoding/json,
// whose messages and offsets users have seen.
func read(data []byte) (*Table, Problems) {
	b := &builder{s: scanner{data: data}, t: New()}
	b.s.space()
	switch {
	case b.s.peek() == '{':
		if !b.workers() || !b.s.end() {
			return nil, Problems{syntaxError(data)}
		}
	default:
		v, ok := b.s.value()
		if !ok || !b.s.end() {
			return nil, Problems{syntaxError(data)}
		}
		return nil, Problems{{Line: 1, Column: 1, Err: fmt.Errorf("%w: found %s (want an object of worker types)", ErrSyntax, kindOf(v))}}
	}
	return b.t, b.finish()
}

// syntaxError is the problem encoding/json finds in data, which the scanner found malformed.
func syntaxError(data []byte) *Problem {
	data = maskNonFinite(data)
	var whole json.RawMessage
	err := json.Unmarshal(data, &whole)
	if err == nil { // the scanner and encoding/json disagree: a bug, said as such
		return &Problem{Err: fmt.Errorf("%w: the table reader rejects JSON that encoding/json accepts", ErrSyntax)}
	}
	return syntaxProblem(data, err)
}

func syntaxProblem(data []byte, err error) *Problem {
	var offset int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		offset = se.Offset
	case errors.As(err, &te):
		offset = te.Offset
	}
	p := &Problem{Err: fmt.Errorf("%w: %v", ErrSyntax, err)}
	if offset >= 0 {
		p.Line, p.Column = jsonfile.Position(data, offset-1) // Offset is one past the bad byte
	}
	return p
}

// Python's json module writes NaN, Infinity and -Infinity, which are not JSON.
// maskNonFinite turns them, outside strings, into strings of the same length,
// so they surface as ErrNotFinite on their entry and syntax-error offsets
// elsewhere stay exact.
var nonFinite = map[string]string{"NaN": `"N"`, "Infinity": `"Infini"`, "-Infinity": `"-Infini"`}

func maskNonFinite(data []byte) []byte {
	out := data
	copied := false
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		if c != 'N' && c != 'I' && c != '-' { // what a literal starts with; the map is slow per byte
			continue
		}
		for lit, repl := range nonFinite {
			if bytes.HasPrefix(data[i:], []byte(lit)) && (lit[0] != 'I' || i == 0 || data[i-1] != '-') {
				if !copied {
					out = slices.Clone(data)
					copied = true
				}
				copy(out[i:], repl)
				i += len(lit) - 1
				break
			}
		}
	}
	return out
}

func isMaskedNonFinite(s string) bool {
	for _, repl := range nonFinite {
		if `"`+s+`"` == repl {
			return true
		}
	}
	return false
}

// parseRate reads one JSON number, rejecting anything that is not a finite,
// non-negative rate.
func parseRate(raw json.RawMessage) (float64, error) {
	if v, ok := plainRate(raw); ok { // the common case, without the decoder
		return v, nil
	}
	if string(bytes.TrimSpace(raw)) == "null" { // json.Unmarshal leaves a string alone for null
		return 0, fmt.Errorf("%w: null, want a number", ErrBadValue)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if isMaskedNonFinite(s) {
			return 0, ErrNotFinite
		}
		return 0, fmt.Errorf("%w: %s is a string, want a number", ErrBadValue, raw)
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("%w: %s is not a number", ErrBadValue, raw)
	}
	v, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%w: %s", ErrBadValue, raw)
	}
	switch {
	case math.IsInf(v, 0) || math.IsNaN(v):
		return 0, ErrNotFinite
	case v < 0:
		return 0, fmt.Errorf("%w: %v", ErrNegativeRate, v)
	}
	return v, nil
}

func parsePair(raw json.RawMessage) ([2]float64, error) {
	if r, ok := plainPair(raw); ok {
		return r, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil || len(parts) != 2 {
		return [2]float64{}, fmt.Errorf("%w: %s: want a list [rate_self, rate_partner]", ErrBadValue, raw)
	}
	var out [2]float64
	for i, p := range parts {
		v, err := parseRate(p)
		if err != nil {
			return out, err
		}
		out[i] = v
	}
	return out, nil
}

// plainPair reads the common form of a pair, [x, y] with two JSON numbers that are finite
// rates, without the decoder (most of the time of reading a large table); anything else is left
// to parsePair's full path, which says what is wrong.
func plainPair(raw []byte) ([2]float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 5 || raw[0] != '[' || raw[len(raw)-1] != ']' {
		return [2]float64{}, false
	}
	a, b, ok := bytes.Cut(raw[1:len(raw)-1], []byte(","))
	if !ok {
		return [2]float64{}, false
	}
	var out [2]float64
	for i, f := range [][]byte{bytes.TrimSpace(a), bytes.TrimSpace(b)} {
		v, ok := plainRate(f)
		if !ok {
			return out, false
		}
		out[i] = v
	}
	return out, true
}

// plainRate reads a JSON number that is a finite rate, without the decoder; false for
// anything else (parseRate says what is wrong).
func plainRate(raw []byte) (float64, bool) {
	if !isJSONNumber(raw) {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	return v, err == nil && v >= 0 && !math.IsInf(v, 0)
}

// isJSONNumber reports whether b is a number as JSON writes it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(b []byte) bool {
	digits := func(i int) int { // index after the digits starting at i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(i + 1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if j := digits(i); j > i {
			i = j
		} else {
			return false
		}
	}
	return i == len(b)
}

// builder turns the members the scanner reads into a table, checking keys, values and the
// symmetry of pairs. Bad entries are reported and left out; of repeated keys, the first is
// kept and the repeats are reported.
type builder struct {
	s     scanner
	t     *Table
	ps    Problems
	lines []int // offsets of data's newlines, found on the first position asked for
	// lineOf gives the line and column of an entry of the input, 0 when it has none; nil for
	// JSON, whose entries are found again in data when a problem needs one (see locate).
	lineOf func(entryKey) (line, col int)
	types  map[string]parsedKey
	seen   map[string]int // the partners of the job being read, by offset
	row    []pairRates    // the pairs of the job being read
	// badPairs are the pairs whose value was reported bad, so that their other direction is
	// not reported again as present on one side only.
	badPairs map[pairKey]bool
	// own holds the job types that have an entry of their own on a worker type (a job key in
	// JSON, a row's job in CSV), even one left out as bad: a partner that has none is a job
	// type the worker type does not know, reported as such rather than as a one-sided pair.
	own map[workerJob]bool
	// repeats holds the pairs (job, partner) of a job type's entry given again on a worker type:
	// the repeat is left out, so a partner's pair with the job that only the repeat held is not
	// reported again as present on one side only.
	repeats map[pairKey]bool
}

// skipRepeat reads past the repeated entry of job key jk on worker type w, recording the
// partners it names (see repeats); false on a syntax error in it.
func (b *builder) skipRepeat(w, jk string) bool {
	j, err := b.jobType(jk)
	if err != nil || b.s.peek() != '{' {
		return b.skip()
	}
	return b.s.object(func(pk string, _ int) bool {
		if k, err := b.jobType(pk); err == nil {
			if b.repeats == nil {
				b.repeats = map[pairKey]bool{}
			}
			b.repeats[pairKey{w, j, k}] = true
		}
		return b.skip()
	})
}

// workerJob names job type j on worker type w.
type workerJob struct {
	w string
	j JobType
}

// ownEntry records that job type j has an entry of its own on worker type w.
func (b *builder) ownEntry(w string, j JobType) {
	if b.own == nil {
		b.own = map[workerJob]bool{}
	}
	b.own[workerJob{w, j}] = true
}

// pairKey names one direction of a pair: job a with partner b on worker type w.
type pairKey struct {
	w    string
	a, b JobType
}

// badPair records that the pair of a with b on w had a bad value, already reported.
func (b *builder) badPair(w string, a, k JobType) {
	if b.badPairs == nil {
		b.badPairs = map[pairKey]bool{}
	}
	b.badPairs[pairKey{w, a, k}] = true
}

type pairRates struct {
	partner JobType
	rates   [2]float64
}

type parsedKey struct {
	j   JobType
	err error
}

// jobType is ParseJobType, remembered: a table of n job types repeats each key n times.
func (b *builder) jobType(key string) (JobType, error) {
	if p, ok := b.types[key]; ok {
		return p.j, p.err
	}
	if b.types == nil {
		b.types = map[string]parsedKey{}
	}
	j, err := ParseJobType(key)
	b.types[key] = parsedKey{j, err}
	return j, err
}

// position is jsonfile.Position(b.s.data, offset) by binary search over an index of the lines:
// counting from the start for every key made reading a table quadratic (137 s for 32 MB).
func (b *builder) position(offset int) (line, col int) {
	data := b.s.data
	if b.lines == nil {
		b.lines = make([]int, 0, bytes.Count(data, []byte("\n")))
		for x, c := range data {
			if c == '\n' {
				b.lines = append(b.lines, x)
			}
		}
	}
	offset = min(offset, len(data))
	n, _ := slices.BinarySearch(b.lines, offset) // newlines before offset
	start := 0
	if n > 0 {
		start = b.lines[n-1] + 1
	}
	return n + 1, offset - start + 1 // offset is the key's own first byte
}

// at sets p's line and column to those of offset, the first byte of the key p is about.
func (b *builder) at(p *Problem, offset int) *Problem {
	p.Line, p.Column = b.position(offset)
	return p
}

func (b *builder) add(p *Problem) { b.ps = append(b.ps, p) }

// problem adds a problem at loc, whose Err is err.
func (b *builder) problem(loc *Problem, err error) {
	loc.Err = err
	b.add(loc)
}

// repeated reports key (at offset at) when it was seen before at this level (seen maps keys
// to their first offset), as a problem at loc, and otherwise records it. Lines are looked up
// only for a repeat: this runs for every key of the file.
func (b *builder) repeated(seen map[string]int, key string, at int, what string, loc func() *Problem) bool {
	first, dup := seen[key]
	if !dup {
		seen[key] = at
		return false
	}
	firstLine, _ := b.position(first)
	p := loc()
	p.Line, p.Column = b.position(at)
	b.problem(p, fmt.Errorf("%w: %s %s appears again (first at line %d); a table holds one value per key", ErrDuplicateKey, what, quote(key), firstLine))
	return true
}

// skip reads past a value that is left out, reporting false on a syntax error in it.
func (b *builder) skip() bool {
	_, ok := b.s.value()
	return ok
}

// notObject reports the value at the scanner, which should have been an object of what.
func (b *builder) notObject(loc *Problem, what string) bool {
	v, ok := b.s.value()
	b.problem(loc, fmt.Errorf("%w: found %s, want an object of %s", ErrBadValue, kindOf(v), what))
	return ok
}

// workers reads the top-level object, of worker types.
func (b *builder) workers() bool {
	seen := map[string]int{}
	return b.s.object(func(w string, at int) bool {
		switch {
		case b.repeated(seen, w, at, "worker type", func() *Problem { return &Problem{Worker: w} }):
			return b.skip()
		case w == "":
			b.problem(b.at(&Problem{}, at), fmt.Errorf("%w: empty worker type name", ErrBadKey))
			return b.skip()
		case b.s.peek() != '{':
			return b.notObject(b.at(&Problem{Worker: w}, at), "job types")
		}
		return b.jobs(w, b.t.worker(w, true))
	})
}

// jobs reads the object of job types of worker type w, whose entries go to wt.
func (b *builder) jobs(w string, wt *workerTable) bool {
	seen := map[string]int{}
	return b.s.object(func(jk string, at int) bool {
		loc := func() *Problem { return b.at(&Problem{Worker: w, Job: jk}, at) }
		if b.repeated(seen, jk, at, "job", loc) {
			return b.skipRepeat(w, jk)
		}
		j, err := b.jobType(jk)
		switch {
		case err != nil:
			b.problem(loc(), err)
			return b.skip()
		}
		b.ownEntry(w, j)
		if b.s.peek() != '{' {
			return b.notObject(loc(), "partners")
		}
		return b.partners(w, wt, j, jk)
	})
}

// partners reads the object of partners of job type j (keyed jk) on worker type w.
func (b *builder) partners(w string, wt *workerTable, j JobType, jk string) bool {
	if b.seen == nil {
		b.seen = map[string]int{}
	}
	clear(b.seen) // one map for every job: a table of n job types has n partners per job
	b.row = b.row[:0]
	ok := b.s.object(func(pk string, at int) bool {
		v, ok := b.s.value()
		if !ok {
			return false
		}
		loc := func() *Problem { return b.at(&Problem{Worker: w, Job: jk, Partner: pk}, at) }
		if !b.repeated(b.seen, pk, at, "partner", loc) {
			b.entry(wt, j, pk, v, loc)
		}
		return true
	})
	b.storeRow(wt, j)
	return ok
}

// storeRow stores the pairs read for job type j in one map made for their number: growing it
// entry by entry was a sixth of reading a dense table. A row is stored in the direction the
// file gives it; finish makes the table symmetric.
func (b *builder) storeRow(wt *workerTable, j JobType) {
	if len(b.row) == 0 {
		return
	}
	row := make(map[JobType][2]float64, len(b.row))
	for _, p := range b.row {
		row[p.partner] = p.rates
	}
	wt.pairs[j] = row // job types are not repeated within a worker type: a new row
}

// entry stores the rate v of job type j with partner key pk: an isolated rate in wt, a pair
// in b.row.
func (b *builder) entry(wt *workerTable, j JobType, pk string, v []byte, loc func() *Problem) {
	if pk == isolatedKey {
		r, err := parseRate(v)
		if err != nil {
			b.problem(loc(), err)
			return
		}
		wt.isolated[j] = r
		return
	}
	k, err := b.jobType(pk)
	if err == nil {
		var r [2]float64
		if r, err = parsePair(v); err == nil {
			b.row = append(b.row, pairRates{k, r})
			return
		}
		p := loc()
		b.badPair(p.Worker, j, k)
		b.problem(p, err)
		return
	}
	b.problem(loc(), err)
}

// finish checks the pairs of every worker type for symmetry, then the whole table, and
// returns every problem found.
// A pair given on one side only is not reported when its other side was there with a bad
// value: that problem was reported already, and one mistake counts once.
func (b *builder) finish() Problems {
	var found Problems
	for _, w := range b.t.WorkerTypes() {
		hasEntry := func(j JobType) bool { return b.own[workerJob{w, j}] }
		for _, p := range settlePairs(w, b.t.workers[w], hasEntry) {
			if !b.reportedBad(w, p) {
				found = append(found, p)
			}
		}
	}
	found = append(found, b.t.Validate()...)
	return append(b.ps, b.locate(found)...)
}

// reportedBad reports whether p says a pair of worker type w is given on one side only when its
// other side had a bad value, or was in a repeated entry of the partner, reported already.
func (b *builder) reportedBad(w string, p *Problem) bool {
	if len(b.badPairs) == 0 && len(b.repeats) == 0 || !errors.Is(p.Err, ErrOneSided) {
		return false
	}
	job, err1 := ParseJobType(p.Job)
	partner, err2 := ParseJobType(p.Partner)
	return err1 == nil && err2 == nil && (b.badPairs[pairKey{w, partner, job}] || b.repeats[pairKey{w, partner, job}])
}

// symmetryTolerance bounds the relative difference between T[w][a][b] and
// reverse(T[w][b][a]); the published tables agree exactly.
const symmetryTolerance = 1e-6

// settlePairs makes the pairs of worker type w, stored in the directions the file gave them,
// symmetric: a pair given in both directions keeps the values under the job type that comes
// first (by Less), and a pair given in one direction gets the other. It reports pairs given in
// one direction only and pairs whose two directions disagree, ordered by job type and partner.
// A self-pair (a, a) is two instances of one type and has no second direction to compare with.
// When hasEntry is not nil, a pair given in one direction only whose partner has no entry of
// its own on w (hasEntry false) is reported as naming a job type w does not have
// (ErrUnknownPartner), the likely mistake, instead of as one-sided.
func settlePairs(w string, wt *workerTable, hasEntry func(JobType) bool) Problems {
	var found []keyedProblem
	var oneSided [][2]JobType
	for a, row := range wt.pairs {
		for b, r := range row {
			if a == b {
				continue
			}
			rev, ok := wt.pairs[b][a]
			switch {
			case !ok:
				oneSided = append(oneSided, [2]JobType{a, b})
				found = append(found, keyedProblem{job: a, partner: b, err: oneSidedError(w, a, b, hasEntry)})
				continue
			case b.Less(a):
				continue // settled when the other direction is visited
			case !near(r[0], rev[1]) || !near(r[1], rev[0]):
				found = append(found, keyedProblem{job: a, partner: b, err: fmt.Errorf("%w: [%v, %v] here, [%v, %v] under %s", ErrInconsistent, r[0], r[1], rev[0], rev[1], b.Key())})
			}
			wt.pairs[b][a] = [2]float64{r[1], r[0]} // an existing key: safe while ranging
		}
	}
	for _, ab := range oneSided {
		r := wt.pairs[ab[0]][ab[1]]
		wt.setOneWay(ab[1], ab[0], [2]float64{r[1], r[0]})
	}
	return sortedProblems(w, found)
}

// oneSidedError says why the pair of a with partner b on worker type w has no other direction:
// b has no entry of its own on w (hasEntry, when not nil, says), or it has one without a.
func oneSidedError(w string, a, b JobType, hasEntry func(JobType) bool) error {
	if hasEntry != nil && !hasEntry(b) {
		return fmt.Errorf("%w: %s is not a job type of worker type %q (it has no entry of its own)", ErrUnknownPartner, b.Key(), w)
	}
	return fmt.Errorf("%w: %s has no entry for %s", ErrOneSided, b.Key(), a.Key())
}

func near(x, y float64) bool {
	return math.Abs(x-y) <= symmetryTolerance*math.Max(math.Abs(x), math.Abs(y))
}

// Write writes t in Gavel's JSON format: worker types and job types sorted,
// the isolated rate first in each job's object, four-space indentation.
// Reading the output gives a table Equal to t: a table holding a key that could not be read
// back (see JobType.Check), or a value Read refuses (a rate that is negative, NaN or
// infinite, a pair of job types with different scale factors), is not written at all.
func (t *Table) Write(w io.Writer) error {
	if err := t.CheckKeys(); err != nil {
		return err
	}
	if err := t.CheckValues(); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("{")
	for i, wk := range t.WorkerTypes() {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n    %s: {", quote(wk))
		t.writeWorker(bw, t.workers[wk])
		bw.WriteString("\n    }")
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// CheckKeys reports the first worker type or job type of t that a table file cannot hold.
func (t *Table) CheckKeys() error {
	for _, w := range t.WorkerTypes() {
		switch {
		case w == "":
			return fmt.Errorf("table: %w: empty worker type name", ErrBadKey)
		case !utf8.ValidString(w):
			return fmt.Errorf("table: %w: worker type name %q is not valid UTF-8", ErrBadKey, w)
		}
	}
	for _, j := range t.JobTypes() {
		if err := j.Check(); err != nil {
			return fmt.Errorf("table: %w", err)
		}
	}
	return nil
}

// CheckValues reports, as a *Problem, the first value of t (by worker type, in map order
// within one) that Read would refuse: a rate that is negative, NaN or infinite, or a pair of
// job types with different scale factors. It is what Validate reports as errors, without the
// warnings, which would cost a map lookup per pair on a table of a million pairs per worker
// type; a table built in code has had no such check.
func (t *Table) CheckValues() error {
	for _, w := range t.WorkerTypes() {
		wt := t.workers[w]
		for j, r := range wt.isolated {
			if err := checkRate(r); err != nil {
				return &Problem{Worker: w, Job: j.Key(), Partner: isolatedKey, Err: err}
			}
		}
		for j, row := range wt.pairs {
			for k, r := range row {
				err := checkRate(r[0])
				if err == nil {
					err = checkRate(r[1])
				}
				if err == nil && j.ScaleFactor != k.ScaleFactor {
					err = fmt.Errorf("%w: %d vs %d", ErrScaleFactorMismatch, j.ScaleFactor, k.ScaleFactor)
				}
				if err != nil {
					return &Problem{Worker: w, Job: j.Key(), Partner: k.Key(), Err: err}
				}
			}
		}
	}
	return nil
}

func (t *Table) writeWorker(bw *bufio.Writer, wt *workerTable) {
	jobs := map[JobType]bool{}
	for j := range wt.isolated {
		jobs[j] = true
	}
	for j := range wt.pairs {
		jobs[j] = true
	}
	// Each key is formatted once and rows are ordered by rank, not by comparing names: a
	// table of 1,000 job types has a million pair entries per worker type.
	f := &rowFormatter{wt: wt, order: slices.SortedFunc(mapsKeys(jobs), compareJobTypes)}
	f.rank = make(map[JobType]int, len(f.order))
	f.keys = make([][]byte, len(f.order))
	for x, j := range f.order {
		f.rank[j], f.keys[x] = x, []byte(quote(j.Key()))
	}
	// Formatting the numbers is most of the time of writing a large table; parts of the rows
	// are formatted concurrently and written in order.
	parts := (len(f.order) + rowsPerPart - 1) / rowsPerPart
	writeOrdered(bw, parts, runtime.GOMAXPROCS(0), func(buf []byte, p int, s *rowScratch) []byte {
		for x := p * rowsPerPart; x < min((p+1)*rowsPerPart, len(f.order)); x++ {
			buf = f.appendRow(buf, x, s)
		}
		return buf
	})
}

// rowsPerPart is how many job rows writeWorker formats as one part: enough that a part is
// worth a goroutine (a dense row of 1,000 job types is 70 kB), few enough that parts are spread
// over the cores.
const rowsPerPart = 16

// rowFormatter formats the job rows of one worker type, in the order of order; it is only read
// while formatting, so parts of the rows may be formatted concurrently.
type rowFormatter struct {
	wt    *workerTable
	order []JobType       // the worker type's job types, sorted
	rank  map[JobType]int // index in order
	keys  [][]byte        // each job type's quoted key, by rank
}

// rowScratch is what formatting a row needs besides the output, kept from row to row.
type rowScratch struct {
	ranks []int        // the ranks of the row's partners
	rates [][2]float64 // rates[rank]: the row's pair with that partner (only its partners' ranks are set)
}

// appendRow appends row x (the job type of rank x and its object, the isolated rate first) to
// buf, preceded by a comma unless it is the first.
func (f *rowFormatter) appendRow(buf []byte, x int, s *rowScratch) []byte {
	if x > 0 {
		buf = append(buf, ',')
	}
	j := f.order[x]
	buf = append(append(append(buf, "\n        "...), f.keys[x]...), ": {"...)
	sep := ""
	if r, ok := f.wt.isolated[j]; ok {
		buf = appendRate(append(buf, "\n            \""+isolatedKey+"\": "...), r)
		sep = ","
	}
	if s.rates == nil {
		s.rates = make([][2]float64, len(f.order))
	}
	s.ranks = s.ranks[:0]
	for k, r := range f.wt.pairs[j] {
		y := f.rank[k]
		s.ranks = append(s.ranks, y)
		s.rates[y] = r
	}
	slices.Sort(s.ranks)
	for _, y := range s.ranks {
		r := s.rates[y]
		buf = append(append(append(buf, sep...), "\n            "...), f.keys[y]...)
		buf = appendRate(append(appendRate(append(buf, ": ["...), r[0]), ", "...), r[1])
		buf = append(buf, ']')
		sep = ","
	}
	return append(buf, "\n        }"...)
}

// writeOrdered writes parts 0 to n-1 to w, in order, each formatted by format(buf, part,
// scratch) appending to buf (empty, with the capacity of an earlier part's buffer); up to
// workers parts are formatted at once, each goroutine with its own scratch. After a write
// fails, the remaining parts are formatted but not written, and that first error is returned.
func writeOrdered[S any](w io.Writer, n, workers int, format func(buf []byte, part int, scratch *S) []byte) error {
	workers = max(workers, 1)
	ready := make([]chan []byte, n)
	for p := range ready {
		ready[p] = make(chan []byte, 1)
	}
	// free holds a buffer for each part that may be formatted ahead of the one being written:
	// it bounds the memory held, and the buffers are reused from part to part.
	free := make(chan []byte, 2*workers)
	for range cap(free) {
		free <- nil
	}
	next := make(chan int)
	go func() {
		for p := range n {
			next <- p
		}
		close(next)
	}()
	for range min(workers, n) {
		go func() {
			var scratch S
			for {
				buf := <-free // before the part, so that every part taken has a buffer
				p, ok := <-next
				if !ok {
					return
				}
				ready[p] <- format(buf[:0], p, &scratch)
			}
		}()
	}
	var err error
	for p := range n {
		buf := <-ready[p]
		if err == nil {
			_, err = w.Write(buf)
		}
		free <- buf
	}
	return err
}

// quote writes s as a JSON string, leaving <, > and & as they are (json.Marshal would write
// "A (10 -\u003e 75 GiB)", which reads back the same but not by eye, and Gavel's Python does not).
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// formatRate writes the shortest decimal that reads back as the same float64.
func formatRate(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// appendRate appends formatRate(v) to buf.
func appendRate(buf []byte, v float64) []byte { return strconv.AppendFloat(buf, v, 'g', -1, 64) }

// Save writes t to path atomically: readers see the old file or the new
// one, never a partial write, and a failure leaves the old file intact.
func (t *Table) Save(path string) error {
	return WriteFileAtomic(path, t.Write)
}

// WriteFileAtomic writes a file through a temporary file in the same directory, synced and
// renamed over path, then syncs the directory so the rename survives a crash. An existing
// file keeps its permissions (a new one gets 0644), and a symlink is written through: its
// target is replaced and the link stays.
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	target, mode, err := writeTarget(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	dir := filepath.Dir(target)
	f, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = write(f); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = os.Rename(f.Name(), target); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeTarget resolves the file that writing path replaces (through any symlinks) and the
// permissions it should get.
func writeTarget(path string) (string, os.FileMode, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return path, 0o644, nil
	case err != nil:
		return "", 0, err
	case fi.Mode()&os.ModeSymlink != 0:
		target, err := filepath.EvalSymlinks(path)
		if errors.Is(err, os.ErrNotExist) {
			// A dangling link: create its target, as a shell's > would.
			return danglingTarget(path)
		}
		if err != nil {
			return "", 0, fmt.Errorf("symlink: %w", err)
		}
		fi, err = os.Stat(target)
		if err != nil {
			return "", 0, err
		}
		path = target
	}
	if !fi.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file", path)
	}
	return path, fi.Mode().Perm(), nil
}

// CheckWritable reports, without writing, whether WriteFileAtomic could write path: the file it
// would write (through symlinks, as WriteFileAtomic does) is absent or a regular file, and its
// directory exists and takes new files. Commands call it before long work whose result goes to
// path, so that a typo costs nothing.
func CheckWritable(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("is a directory; give a file name")
	}
	target, _, err := writeTarget(path)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		target = path // a parent is a file: said below
	case err != nil:
		return err
	}
	dir := filepath.Dir(target)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("directory %s does not exist", dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	// Creating a file is the only sure test (permission bits miss ACLs and read-only mounts).
	f, err := os.CreateTemp(dir, ".gavel-write-check-*")
	if err != nil {
		return fmt.Errorf("cannot create files in %s (%v)", dir, errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// danglingTarget follows the links from path to the first name that does not exist, the file
// a write through path creates.
func danglingTarget(path string) (string, os.FileMode, error) {
	for range 40 { // as many links as Linux follows
		fi, err := os.Lstat(path)
		if errors.Is(err, os.ErrNotExist) {
			return path, 0o644, nil
		}
		if err != nil {
			return "", 0, err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return "", 0, fmt.Errorf("symlink: %s exists but %s did not resolve", path, path)
		}
		to, err := os.Readlink(path)
		if err != nil {
			return "", 0, fmt.Errorf("symlink: %w", err)
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return "", 0, fmt.Errorf("symlink: too many links at %s", path)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
