package table

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// csvHeader is the column layout of WriteCSV and ReadCSV. An isolated row
// has empty partner columns.
var csvHeader = []string{
	"worker_type", "model", "scale_factor", "partner_model", "partner_scale_factor",
	"state", "rate", "partner_rate", "isolated_rate", "partner_isolated_rate",
	"normalized", "partner_normalized",
}

// WriteCSV writes one row per worker type, job type and partner (isolated
// rates as rows without a partner), in the same order as Write. Normalized
// rates are empty where they are not defined. As Write, it writes nothing
// for a table ReadCSV would refuse.
func (t *Table) WriteCSV(w io.Writer) error {
	if err := t.CheckKeys(); err != nil {
		return err
	}
	if err := t.CheckValues(); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	for _, wk := range t.WorkerTypes() {
		for _, j := range t.JobTypes() {
			iso, hasIso := t.Isolated(wk, j)
			if hasIso {
				cw.Write([]string{wk, j.Model, itoa(j.ScaleFactor), "", "", Measured.String(),
					formatRate(iso), "", formatRate(iso), "", "", ""})
			}
			for _, k := range t.Partners(wk, j) {
				cw.Write(t.csvPairRow(wk, j, k))
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func (t *Table) csvPairRow(w string, j, k JobType) []string {
	r := t.workers[w].pairs[j][k]
	_, _, s := t.Pair(w, j, k)
	opt := func(v float64, ok bool) string {
		if !ok {
			return ""
		}
		return formatRate(v)
	}
	ij, okJ := t.Isolated(w, j)
	ik, okK := t.Isolated(w, k)
	nj, nk, ns := t.Normalized(w, j, k)
	return []string{w, j.Model, itoa(j.ScaleFactor), k.Model, itoa(k.ScaleFactor), s.String(),
		formatRate(r[0]), formatRate(r[1]), opt(ij, okJ), opt(ik, okK),
		opt(nj, ns == Measured), opt(nk, ns == Measured)}
}

func itoa(i int) string { return strconv.Itoa(i) }

// ReadCSV reads a table written by WriteCSV, as ReadCSVFile does without a file name. Its
// error is not a Problems (errors.Is still finds the sentinels and each *Problem), so that a
// caller that knows the file adds its name; ReadCSVFile names the file itself.
func ReadCSV(r io.Reader) (*Table, error) {
	t, err := ReadCSVFile(r, "")
	if ps, ok := err.(Problems); ok {
		return nil, unnamedProblems{ps}
	}
	return t, err
}

type unnamedProblems struct{ ps Problems }

func (u unnamedProblems) Error() string   { return u.ps.Error() }
func (u unnamedProblems) Unwrap() []error { return u.ps.Unwrap() }

// ReadCSVFile reads a table written by WriteCSV. The identifying columns, rate and
// partner_rate make the table; state is checked against the rates, and the other derived
// columns (isolated and normalized rates) are ignored. The rates decide the state, as in the
// JSON format: a pair row is infeasible when rate and partner_rate are both 0 and measured
// otherwise, and an isolated row is measured. A state that says otherwise is an error, not an
// override: WriteCSV never writes one, each pair has two rows, and rates in a row marked
// infeasible may be what the user meant. To mark a pair infeasible, set both rates to 0 in
// both of its rows. An empty state claims nothing and is left to the rates; any value other
// than measured or infeasible is an error. The rows get the checks of the JSON reader: a row
// repeated (the same worker type, job and partner twice), pairs whose two directions are
// missing or disagree, bad keys and rates. The error is then a Problems naming file, line,
// worker type and job.
func ReadCSVFile(r io.Reader, file string) (*Table, error) {
	t, ps := CheckCSV(r, file)
	if errs := ps.Errors(); len(errs) > 0 {
		return nil, errs
	}
	return t, nil
}

// CheckCSV reads a table written by WriteCSV, as ReadCSVFile does, and returns every problem
// it finds, warnings included, naming file in each. The table is nil when the CSV itself
// cannot be read (a bad header or record); otherwise it holds every row that could be read.
func CheckCSV(r io.Reader, file string) (*Table, Problems) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // a header of another width gets the message below, not csv's
	bad := func(p *Problem) Problems { return Problems{p}.withFile(file) }
	header, err := cr.Read()
	if err != nil {
		return nil, bad(&Problem{Line: 1, Err: fmt.Errorf("%w: header: %v", ErrBadCSV, err)})
	}
	if !slices.Equal(header, csvHeader) {
		return nil, bad(&Problem{Line: 1, Err: fmt.Errorf("%w: header %q, want %q", ErrBadCSV, strings.Join(header, ","), strings.Join(csvHeader, ","))})
	}
	cr.FieldsPerRecord = len(csvHeader)
	seen := map[entryKey]int{}
	b := &builder{t: New(), lineOf: func(e entryKey) (int, int) { return seen[e], 0 }}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, bad(&Problem{Err: fmt.Errorf("%w: %v", ErrBadCSV, err)})
		}
		line, _ := cr.FieldPos(0)
		b.csvRow(rec, line, seen)
	}
	return b.t, b.finish().withFile(file)
}

// looksLikeCSV reports whether data is a CSV table rather than JSON: its first line starts
// with the header's first field, or opens no JSON object or array and holds a comma but no
// colon (JSON that lost its opening brace has one: `"k80": {...`). A table that is neither is
// left to the JSON reader, whose messages say where it goes wrong.
func looksLikeCSV(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	for _, h := range []string{csvHeader[0] + ",", `"` + csvHeader[0] + `",`} {
		if bytes.HasPrefix(data, []byte(h)) {
			return true
		}
	}
	if len(data) == 0 || data[0] == '{' || data[0] == '[' {
		return false
	}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	return bytes.IndexByte(first, ',') >= 0 && bytes.IndexByte(first, ':') < 0
}

// CheckAny reads a table in Gavel's JSON format or in WriteCSV's CSV, picking the format from
// the content (CSV when the first line holds a comma and opens no JSON object or array), and
// returns every problem found, as Check and CheckCSV do.
func CheckAny(r io.Reader, file string) (*Table, Problems) {
	data, err := readAll(r)
	if err != nil {
		return nil, Problems{{File: file, Err: err}}
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // the byte-order mark spreadsheets write
	if looksLikeCSV(data) {
		return CheckCSV(bytes.NewReader(data), file)
	}
	t, ps := read(data)
	return t, ps.withFile(file)
}

// LoadAny reads the table in the named file, JSON or CSV as CheckAny tells them apart; it
// fails when the file holds any error (not counting warnings), as Load does.
func LoadAny(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("table: %w", err)
	}
	defer f.Close()
	t, ps := CheckAny(f, path)
	if errs := ps.Errors(); len(errs) > 0 {
		return nil, errs
	}
	return t, nil
}

// csvRow adds one row, or reports why it cannot be.
func (b *builder) csvRow(rec []string, line int, seen map[entryKey]int) {
	w := rec[0]
	loc := func(job, partner string, err error) {
		b.add(&Problem{Line: line, Worker: w, Job: job, Partner: partner, Err: err})
	}
	j, err := b.csvJobType(rec[1], rec[2])
	if err != nil || w == "" || !utf8.ValidString(w) {
		switch {
		case w == "":
			err = fmt.Errorf("%w: empty worker type name", ErrBadKey)
		case !utf8.ValidString(w):
			err = fmt.Errorf("%w: worker type name %q is not valid UTF-8 (save the file as UTF-8)", ErrBadKey, w)
		}
		loc("", "", err)
		return
	}
	b.ownEntry(w, j)
	k := JobType{} // none for an isolated row
	if rec[3] != "" || rec[4] != "" {
		if k, err = b.csvJobType(rec[3], rec[4]); err != nil {
			loc(j.Key(), "", fmt.Errorf("partner: %w", err))
			return
		}
	}
	isolated := k == (JobType{})
	// Keys are formatted for problems only: this runs for every row.
	at := func(err error) {
		partner := isolatedKey
		if !isolated {
			partner = k.Key()
		}
		loc(j.Key(), partner, err)
	}
	row := entryKey{w, j, k}
	if first, dup := seen[row]; dup {
		at(fmt.Errorf("%w: the row of this worker type, job and partner appears again (first at line %d); a table holds one value per key",
			ErrDuplicateKey, first))
		return
	}
	seen[row] = line
	rate, err := parseCSVRate(rec[6])
	if err != nil {
		if !isolated {
			b.badPair(w, j, k)
		}
		at(fmt.Errorf("rate: %w", err))
		return
	}
	if isolated {
		if err := checkCSVState(rec, true, false); err != nil {
			at(err)
			return
		}
		b.t.SetIsolated(w, j, rate)
		return
	}
	prate, err := parseCSVRate(rec[7])
	if err != nil {
		b.badPair(w, j, k)
		at(fmt.Errorf("partner rate: %w", err))
		return
	}
	if err := checkCSVState(rec, isolated, rate == 0 && prate == 0); err != nil {
		b.badPair(w, j, k)
		at(err)
		return
	}
	b.t.worker(w, true).setOneWay(j, k, [2]float64{rate, prate}) // settled by finish
}

// parseCSVRate is parseRate on a CSV cell, where NaN and Inf (as spreadsheets and Go write
// them, in any case) are what they say, not words: ErrNotFinite, as in JSON, not ErrBadValue.
func parseCSVRate(cell string) (float64, error) {
	v, err := parseRate([]byte(cell))
	if errors.Is(err, ErrBadValue) {
		if f, perr := strconv.ParseFloat(cell, 64); perr == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return 0, ErrNotFinite
		}
	}
	return v, err
}

// checkCSVState checks a row's state column against the state its rates give (infeasible
// only for a pair whose two rates are 0), the one WriteCSV writes. Before it was checked, a
// row edited to say infeasible, or a typo, was read as measured without a word.
func checkCSVState(rec []string, isolated, zeroRates bool) error {
	state := rec[5]
	switch state {
	case "": // a hand-written table may leave the derived columns empty
		return nil
	case Measured.String(), Infeasible.String():
	case Missing.String():
		return fmt.Errorf("%w: state %q: a table has no row for an entry that was not measured; delete the row", ErrBadValue, state)
	default:
		return fmt.Errorf("%w: state %q is not %s or %s", ErrBadValue, state, Measured, Infeasible)
	}
	switch {
	case isolated && state != Measured.String():
		return fmt.Errorf("%w: state %q for an isolated rate, which is always %s", ErrBadValue, state, Measured)
	case isolated:
		return nil
	case state == Infeasible.String() && !zeroRates:
		return fmt.Errorf("%w: state %q but rate %s and partner_rate %s are not both 0, as an infeasible pair is written: "+
			"set both to 0 in both of the pair's rows to mark it infeasible, or write state %s",
			ErrBadValue, state, rec[6], rec[7], Measured)
	case state == Measured.String() && zeroRates:
		return fmt.Errorf("%w: state %q but rate and partner_rate are both 0, which marks the pair %s: "+
			"write state %s, or the measured rates", ErrBadValue, state, Infeasible, Infeasible)
	}
	return nil
}

// entryKey names an entry of a table (a CSV row): worker type, job and partner (zero for an
// isolated rate).
type entryKey struct {
	w    string
	j, k JobType
}

// csvJobType is csvJobType, remembered: a table of n job types names each one about 2n times.
func (b *builder) csvJobType(model, sf string) (JobType, error) {
	key := model + "\x00" + sf
	if p, ok := b.types[key]; ok {
		return p.j, p.err
	}
	if b.types == nil {
		b.types = map[string]parsedKey{}
	}
	j, err := csvJobType(model, sf)
	b.types[key] = parsedKey{j, err}
	return j, err
}

// csvJobType reads a model and scale factor column; the job type must be one a table file can
// hold.
func csvJobType(model, sf string) (JobType, error) {
	n, err := strconv.Atoi(sf)
	if err != nil || (len(sf) > 1 && sf[0] == '0') {
		return JobType{}, fmt.Errorf("%w: model %q: scale factor %q is not a positive integer", ErrBadKey, model, sf)
	}
	j := JobType{Model: model, ScaleFactor: n}
	return j, j.Check()
}
