package table

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sameAsOld checks that Check reads in exactly as the reader before the single pass did
// (oldCheck): the same entries, bit for bit, and the same problems in the same order, with
// the same text, location and sentinel error, except that every problem about a job's entry
// now has a line, where the old reader gave only repeated keys one.
func sameAsOld(t *testing.T, in []byte) {
	t.Helper()
	got, gotPs := Check(bytes.NewReader(in), "f.json")
	want, wantPs := oldCheck(bytes.NewReader(in), "f.json")
	wantPs = withoutOneSidedOfBad(wantPs)
	if (got == nil) != (want == nil) || got != nil && !sameEntries(got, want) {
		t.Fatalf("input %q:\ntable %v\nwant %v", in, got, want)
	}
	if len(gotPs) != len(wantPs) {
		t.Fatalf("input %q:\nproblems\n%v\nwant\n%v", in, gotPs, wantPs)
	}
	for i, p := range gotPs {
		if p.Job != "" && p.Line == 0 {
			t.Fatalf("input %q: problem %d has no line: %v", in, i, p)
		}
		q := wantPs[i]
		if q.Line == 0 {
			unplaced := *p
			unplaced.Line, unplaced.Column = 0, 0
			p = &unplaced
		}
		if !sameProblem(p, q) {
			t.Fatalf("input %q: problem %d:\n%+v: %v\nwant\n%+v: %v", in, i, *p, p, *q, q)
		}
	}
}

// withoutOneSidedOfBad drops from the old reader's problems the reports that a pair is on one
// side only when its other side was there with a bad value, reported already: the reader
// reports such a pair once (TestBadPairValueReportedOnce), the old one twice.
func withoutOneSidedOfBad(ps Problems) Problems {
	type dir struct {
		w    string
		a, b JobType
	}
	parse := func(p *Problem) (dir, bool) {
		a, err1 := ParseJobType(p.Job)
		b, err2 := ParseJobType(p.Partner)
		return dir{p.Worker, a, b}, err1 == nil && err2 == nil
	}
	bad := map[dir]bool{}
	for _, p := range ps {
		if errors.Is(p, ErrBadValue) || errors.Is(p, ErrNegativeRate) || errors.Is(p, ErrNotFinite) {
			if d, ok := parse(p); ok {
				bad[d] = true
			}
		}
	}
	var out Problems
	for _, p := range ps {
		if d, ok := parse(p); ok && errors.Is(p, ErrOneSided) && bad[dir{d.w, d.b, d.a}] {
			continue
		}
		out = append(out, p)
	}
	return out
}

func sameProblem(p, q *Problem) bool {
	if p.Error() != q.Error() || p.File != q.File || p.Worker != q.Worker || p.Job != q.Job ||
		p.Partner != q.Partner || p.Line != q.Line || p.Column != q.Column || p.Warning != q.Warning {
		return false
	}
	for _, e := range []error{ErrSyntax, ErrBadKey, ErrDuplicateKey, ErrBadValue, ErrNegativeRate,
		ErrNotFinite, ErrOneSided, ErrUnknownPartner, ErrInconsistent, ErrScaleFactorMismatch, ErrAboveIsolated, ErrSelfPairUneven} {
		if errors.Is(p, e) != errors.Is(q, e) {
			return false
		}
	}
	return true
}

// sameEntries is Equal with rates compared bit for bit (Equal takes -0 for 0) and worker
// types without entries counted.
func sameEntries(a, b *Table) bool {
	if len(a.workers) != len(b.workers) {
		return false
	}
	same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
	for w, x := range a.workers {
		y := b.workers[w]
		if y == nil || len(x.isolated) != len(y.isolated) || len(x.pairs) != len(y.pairs) {
			return false
		}
		for j, r := range x.isolated {
			if s, ok := y.isolated[j]; !ok || !same(r, s) {
				return false
			}
		}
		for j, row := range x.pairs {
			if len(row) != len(y.pairs[j]) {
				return false
			}
			for k, r := range row {
				s, ok := y.pairs[j][k]
				if !ok || !same(r[0], s[0]) || !same(r[1], s[1]) {
					return false
				}
			}
		}
	}
	return true
}

// TestReadSameAsOld compares the reader with the old one on the files of the repository,
// on generated tables and on generated tables with random edits (most of them no longer
// JSON, or JSON of the wrong shape).
func TestReadSameAsOld(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	more, _ := filepath.Glob(filepath.Join("..", "examples", "*.json"))
	for _, f := range append(append(files, more...), filepath.Join("data", "simulation_throughputs.json")) {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sameAsOld(t, in)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		for _, in := range [][]byte{genTableJSON(r), genCleanJSON(r)} {
			sameAsOld(t, in)
			for range 3 {
				sameAsOld(t, mutate(r, in))
			}
		}
	}
}

// TestReadSameAsOldEdges: nesting at and past encoding/json's limit, non-finite literals
// where a string is allowed and where it is not, and empty or blank input.
func TestReadSameAsOldEdges(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []string{
		"", " ", "\n", "{}", "[]", "null", "NaN", "-Infinity", " Infinity ", "1", `"x"`, "{} {}", "{}x",
		deep(10000), deep(10001),
		`{"w": {"('A', 1)": {"null": 1, "x": ` + deep(9997) + `}}}`,
		`{"w": {"('A', 1)": {"null": 1, "x": ` + deep(9998) + `}}}`,
		`{NaN: {}}`, `{"w": {Infinity: 1}}`, `{"w": {"('A', 1)": {-Infinity: 1}}}`,
		`{"w": {"('A', 1)": {"null": -NaN}}}`, `{"w": {"('A', 1)": {"null": NaNa}}}`,
		`{"w": {"('A', 1)": {"null": -Infinit}}}`, `{"w": {"('A', 1)": {"null": 1e-Infinity}}}`,
		`{"w": {"('A', 1)": {"null": "NaN"}}}`, `{"w": {"('A', 1)": {"null": "N"}}}`,
		`{"w": {"('A', 1)": {"null": {"a": [NaN, Infinity, "\"NaN"]}}}}`,
		`{"w": NaN}`, `{"w": {"('A', 1)": Infinity}}`, `{"w": [NaN, "` + strings.Repeat("é", 30) + `"]}`,
		"{\"w\": {\"('A', 1)\": {\"null\": 1, \"null\": 2, \"n\\u0075ll\": 3}}}",
		"{\"\\u0077\": {}, \"w\": {}}", "{\"\xff\": {}, \"\xfe\": {}}", "{\"\": {}, \"\": 1}",
		"{\"w\": {\"('\xe9', 1)\": {\"null\": 1}}}", "{\"w\": {\"('A', 1)\": {\"null\": 1}}}\ufeff",
		"\ufeff{}", "{\"w\":{\"('A', 1)\":{\"null\":1,\"('A', 1)\":[1,1]}}}", "{\"a\":1,}", "{\"a\" 1}",
		"{\"a\":\"\\x\"}", "{\"a\":\"\\u12g4\"}", "{\"a\":\"\t\"}", "{\"a\":01}", "{\"a\":1.}", "{\"a\":.5}",
		"1e999", "{\"a\":-}", "{\"a\":1e}", "{\"a\":tru}", "{\"a\":nul}", "{\"a\":[1,]}", "{\"a\":[,1]}", "[1 2]",
	}
	for _, c := range cases {
		sameAsOld(t, []byte(c))
	}
}

// TestReadSameAsOldGrammar feeds short random strings over JSON's alphabet (and bytes it
// forbids) to both readers, alone and as a rate, to try the scanner's grammar case by case.
func TestReadSameAsOldGrammar(t *testing.T) {
	alphabet := []string{"{", "}", "[", "]", ",", ":", `"`, `\`, "/", "u", "0", "1", "9", "a", "F", "-", "+", ".",
		"e", "E", " ", "\t", "\n", "\r", "\f", "\v", "\x00", "\x1f", "\x7f", "\xc3", "\xa9", "\xff", "b", "n", "t", "r", "l", "s",
		"f", "N", "I", "NaN", "Infinity", "true", "null", "false", `"a"`, `\u00e9`, `\ud800`}
	r := rand.New(rand.NewPCG(3, 4))
	for range 50000 {
		var b strings.Builder
		for range 1 + r.IntN(8) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		v := b.String()
		sameAsOld(t, []byte(v))
		sameAsOld(t, []byte(`{"w": {"('A', 1)": {"null": `+v+`}}}`))
		sameAsOld(t, []byte(`{"w": {"('A', 1)": {"null": 1, "('A', 1)": [1, 1], "`+v+`": 2}}}`))
	}
}

// genTableJSON writes a table in Gavel's layout with random keys, values, spacing, repeats and
// value types, from a small pool so that keys repeat and pairs meet their reverse.
func genTableJSON(r *rand.Rand) []byte {
	var b bytes.Buffer
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	spaces := []string{"", " ", "\n", "\t", "\r\n", "\n    "}
	ws := func() string { return pick(spaces) }
	workers := []string{`"v100"`, `"k80"`, `"\u006b80"`, `""`, `"é"`, "\"\xff\"", `"gpu\n"`, `NaN`}
	jobs := []string{`"('A', 1)"`, `"('B', 1)"`, `"('A', 2)"`, `"('B', 2)"`, `"('A', 01)"`, `"('\u0041', 1)"`,
		`"bad"`, `"('C (batch size 16)', 1)"`, `"null"`, `Infinity`, "\"('\xe9', 1)\""}
	rates := []string{"1", "0.5", "2", "1e-3", "2E+2", "0", "-0", "-1", "1e999", "NaN", "Infinity", "-Infinity",
		`"1"`, `"NaN"`, "[1,2]", "{}", "null", "true", "1.0000000000000002", "12345678901234567890"}
	pairs := []string{"[1, 2]", "[2, 1]", "[0.5,0.5]", " [ 1 ,2 ] ", "[0, 0]", "[NaN, 1]", "[1, Infinity]", "[1]",
		"[1,2,3]", `["a", 1]`, "[-1, 2]", "[1e400, 1]", "1", "{}", `{"x": NaN}`, "[1, 2.0]", "[3, 3]", "[1e-5, 7]", "null"}
	member := func(key, val string) string { return ws() + key + ws() + ":" + ws() + val }
	object := func(n int, each func() string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = each()
		}
		return "{" + strings.Join(parts, ","+ws()) + ws() + "}"
	}
	top := object(r.IntN(4), func() string {
		if r.IntN(12) == 0 {
			return member(pick(workers), pick(pairs))
		}
		return member(pick(workers), object(r.IntN(5), func() string {
			if r.IntN(12) == 0 {
				return member(pick(jobs), pick(rates))
			}
			return member(pick(jobs), object(r.IntN(6), func() string {
				if r.IntN(3) == 0 {
					return member(`"null"`, pick(rates))
				}
				return member(pick(jobs), pick(pairs))
			}))
		}))
	})
	b.WriteString(ws() + top + ws())
	return b.Bytes()
}

// genCleanJSON writes a random table with Write, which every reader reads without errors,
// sometimes compacted, sometimes with one digit of a rate changed (which can make the two
// directions of a pair disagree or a pair rate exceed the isolated one).
func genCleanJSON(r *rand.Rand) []byte {
	tb := New()
	var jobs []JobType
	for _, m := range []string{"A", "B (batch size 16)", "C", "d\\e"} {
		for sf := 1; sf <= 2; sf++ {
			if r.IntN(2) == 0 {
				jobs = append(jobs, JobType{m, sf})
			}
		}
	}
	for _, w := range []string{"v100", "k80", "p100"}[:1+r.IntN(3)] {
		for i, a := range jobs {
			if r.IntN(4) > 0 {
				tb.SetIsolated(w, a, float64(r.IntN(1000))/float64(1+r.IntN(30)))
			}
			for _, b := range jobs[i:] {
				if a.ScaleFactor != b.ScaleFactor {
					continue // Write refuses such a pair, as Read does
				}
				switch r.IntN(4) {
				case 0:
				case 1:
					tb.SetInfeasible(w, a, b)
				default:
					tb.SetPair(w, a, b, r.Float64()*10, r.ExpFloat64())
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := tb.Write(&buf); err != nil {
		panic(err)
	}
	out := buf.Bytes()
	if r.IntN(3) == 0 {
		var c bytes.Buffer
		json.Compact(&c, out)
		out = c.Bytes()
	}
	if r.IntN(3) == 0 { // the first digit of a pair's rates
		from := r.IntN(len(out))
		if i := bytes.IndexByte(out[from:], '['); i >= 0 {
			out[from+i+1] = byte('1' + r.IntN(9))
		}
	}
	return out
}

// mutate applies one to three random edits to in: deleting, inserting or replacing bytes
// with JSON punctuation and literal pieces, or cutting the end off.
func mutate(r *rand.Rand, in []byte) []byte {
	out := bytes.Clone(in)
	pieces := []string{"{", "}", "[", "]", ",", ":", `"`, `\`, " ", "\n", "-", "0", "1", "e", ".", "N", "NaN",
		"Infinity", "-Infinity", "null", "t", "\x00", "\xff", `\u00`, `"null"`, `"('A', 1)"`}
	for range 1 + r.IntN(3) {
		if len(out) == 0 {
			return []byte(pieces[r.IntN(len(pieces))])
		}
		i := r.IntN(len(out))
		switch r.IntN(4) {
		case 0:
			out = append(out[:i:i], out[i+1:]...)
		case 1:
			out = append(out[:i:i], append([]byte(pieces[r.IntN(len(pieces))]), out[i:]...)...)
		case 2:
			p := pieces[r.IntN(len(pieces))]
			out = append(out[:i:i], append([]byte(p), out[min(i+len(p), len(out)):]...)...)
		default:
			out = out[:i]
		}
	}
	return out
}

// TestGeneratedTablesVary guards the generator: a differential test on inputs that all fail
// the same way would prove little.
func TestGeneratedTablesVary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	for range 2000 {
		for _, in := range [][]byte{genTableJSON(r), mutate(r, genTableJSON(r)), genCleanJSON(r)} {
			tb, ps := Check(bytes.NewReader(in), "")
			switch {
			case tb == nil:
				counts["unread"]++
			case len(ps.Errors()) == 0 && len(tb.JobTypes()) > 0:
				counts["clean"]++
			}
			for _, e := range []error{ErrSyntax, ErrBadKey, ErrDuplicateKey, ErrBadValue, ErrNegativeRate,
				ErrNotFinite, ErrOneSided, ErrUnknownPartner, ErrInconsistent, ErrScaleFactorMismatch, ErrAboveIsolated, ErrSelfPairUneven} {
				if errors.Is(ps, e) {
					counts[e.Error()]++
				}
			}
		}
	}
	for _, k := range []string{"unread", "clean", ErrSyntax.Error(), ErrBadKey.Error(), ErrDuplicateKey.Error(),
		ErrBadValue.Error(), ErrNegativeRate.Error(), ErrNotFinite.Error(), ErrOneSided.Error(), ErrUnknownPartner.Error(),
		ErrInconsistent.Error(), ErrScaleFactorMismatch.Error(), ErrAboveIsolated.Error(), ErrSelfPairUneven.Error()} {
		if counts[k] < 20 {
			t.Errorf("%s: %d of 6000 generated inputs, want at least 20 (%v)", k, counts[k], fmt.Sprint(counts))
		}
	}
}

// TestValidateAndSettleSameAsOld compares Validate and settlePairs (which the CSV reader uses
// too) with the old Validate and addPairs on random tables built through the API, with the
// odd job types and rates no file reader would let in.
func TestValidateAndSettleSameAsOld(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	jobs := []JobType{{"A", 1}, {"B", 1}, {"A", 2}, {"C", 2}, {"", 0}, {"Z", -1}, {"b", 1}}
	rates := []float64{0, 1, 2, 0.5, 3, -1, math.NaN(), math.Inf(1), 1 + 1e-7, 2 + 1e-9}
	rate := func() float64 { return rates[r.IntN(len(rates))] }
	for range 3000 {
		oneWay := map[string]map[[2]JobType][2]float64{}
		tb, old := New(), New()
		for _, w := range []string{"v100", "k80", ""}[:1+r.IntN(3)] {
			oneWay[w] = map[[2]JobType][2]float64{}
			for range r.IntN(12) {
				a, b := jobs[r.IntN(len(jobs))], jobs[r.IntN(len(jobs))]
				if r.IntN(3) == 0 {
					tb.SetIsolated(w, a, rate())
					old.SetIsolated(w, a, tb.workers[w].isolated[a])
					continue
				}
				v := [2]float64{rate(), rate()}
				oneWay[w][[2]JobType{a, b}] = v
				tb.worker(w, true).setOneWay(a, b, v)
				old.worker(w, true)
			}
		}
		var got, want Problems
		for _, w := range tb.WorkerTypes() {
			got = append(got, settlePairs(w, tb.workers[w], nil)...)
			want = append(want, oldAddPairs(old, w, oneWay[w], nil, nil)...)
		}
		got, want = append(got, tb.Validate()...), append(want, old.oldValidate()...)
		if !sameEntries(tb, old) || len(got) != len(want) {
			t.Fatalf("tables differ (%v) or problems\n%v\nwant\n%v", !sameEntries(tb, old), got, want)
		}
		for i := range got {
			if !sameProblem(got[i], want[i]) {
				t.Fatalf("problem %d: %v, want %v", i, got[i], want[i])
			}
		}
	}
}
