package table

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors wrapped by every Problem, for errors.Is.
var (
	ErrSyntax              = errors.New("malformed JSON")
	ErrBadCSV              = errors.New("malformed CSV")
	ErrBadKey              = errors.New("bad job type key")
	ErrDuplicateKey        = errors.New("repeated key")
	ErrBadValue            = errors.New("bad value")
	ErrNegativeRate        = errors.New("negative rate")
	ErrNotFinite           = errors.New("rate is NaN or infinite")
	ErrOneSided            = errors.New("pair present on one side only")
	ErrUnknownPartner      = errors.New("unknown partner")
	ErrInconsistent        = errors.New("pair rates disagree between the two sides")
	ErrScaleFactorMismatch = errors.New("partner has a different scale factor")
	ErrAboveIsolated       = errors.New("pair rate above isolated rate")
	ErrSelfPairUneven      = errors.New("self-pair holds two different rates")
)

// A Problem is one thing wrong with a table, located as precisely as the
// problem allows. Warnings (Warning true) describe data that is usable but
// suspicious, such as a pair rate above the isolated rate, which is usually
// measurement noise.
type Problem struct {
	File    string // "" when reading from a stream without a name
	Worker  string // worker type, "" when the problem is not inside one
	Job     string // job type key as written in the file
	Partner string // partner key ("null" for the isolated rate)
	Line    int    // 1-based; 0 when unknown
	Column  int    // 1-based; 0 when unknown
	Warning bool
	Err     error
}

func (p *Problem) Error() string {
	var b strings.Builder
	b.WriteString("table")
	if p.File != "" {
		b.WriteString(" " + p.File)
	}
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
		if p.Column > 0 {
			fmt.Fprintf(&b, ":%d", p.Column)
		}
	}
	if p.Worker != "" {
		fmt.Fprintf(&b, ": worker type %q", p.Worker)
	}
	if p.Job != "" {
		fmt.Fprintf(&b, ": job %s", p.Job)
	}
	switch p.Partner {
	case "":
	case isolatedKey: // Gavel's key of the isolated rate: "partner null" would puzzle
		b.WriteString(": isolated rate")
	default:
		fmt.Fprintf(&b, ": partner %s", p.Partner)
	}
	if p.Warning {
		b.WriteString(": warning")
	}
	b.WriteString(": ")
	b.WriteString(p.Err.Error())
	return b.String()
}

func (p *Problem) Unwrap() error { return p.Err }

// Problems is a list of problems; as an error it reports all of them.
type Problems []*Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is and errors.As look at every problem.
func (ps Problems) Unwrap() []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}

// Errors returns the problems that are not warnings.
func (ps Problems) Errors() Problems { return ps.filter(false) }

// Warnings returns the problems that are warnings.
func (ps Problems) Warnings() Problems { return ps.filter(true) }

func (ps Problems) filter(warning bool) Problems {
	var out Problems
	for _, p := range ps {
		if p.Warning == warning {
			out = append(out, p)
		}
	}
	return out
}

func (ps Problems) withFile(file string) Problems {
	for _, p := range ps {
		p.File = file
	}
	return ps
}
