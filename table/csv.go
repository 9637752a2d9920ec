package table

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
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
// rates are empty where they are not defined.
func (t *Table) WriteCSV(w io.Writer) error {
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

// ReadCSV reads a table written by WriteCSV. Only the identifying columns,
// rate and partner_rate are used; the derived columns are ignored. Errors
// name the line.
func ReadCSV(r io.Reader) (*Table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(csvHeader)
	if _, err := cr.Read(); err != nil {
		return nil, fmt.Errorf("table csv: header: %w", err)
	}
	t := New()
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("table csv: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if err := t.addCSVRow(rec); err != nil {
			return nil, fmt.Errorf("table csv: line %d: %w", line, err)
		}
	}
	if errs := t.Validate().Errors(); len(errs) > 0 {
		return nil, errs
	}
	return t, nil
}

func (t *Table) addCSVRow(rec []string) error {
	sf, err := strconv.Atoi(rec[2])
	if err != nil || sf < 1 || rec[1] == "" || rec[0] == "" {
		return fmt.Errorf("%w: worker %q model %q scale factor %q", ErrBadKey, rec[0], rec[1], rec[2])
	}
	j := JobType{rec[1], sf}
	rate, err := parseRate([]byte(rec[6]))
	if err != nil {
		return fmt.Errorf("job %s: rate: %w", j.Key(), err)
	}
	if rec[3] == "" {
		t.SetIsolated(rec[0], j, rate)
		return nil
	}
	psf, err := strconv.Atoi(rec[4])
	if err != nil || psf < 1 {
		return fmt.Errorf("job %s: %w: partner scale factor %q", j.Key(), ErrBadKey, rec[4])
	}
	prate, err := parseRate([]byte(rec[7]))
	if err != nil {
		return fmt.Errorf("job %s: partner rate: %w", j.Key(), err)
	}
	t.SetPair(rec[0], j, JobType{rec[3], psf}, rate, prate)
	return nil
}
