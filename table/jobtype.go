package table

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JobType names a kind of job: a model (with its batch size, as Gavel names
// them) and the number of GPUs it uses at once.
type JobType struct {
	Model       string
	ScaleFactor int
}

// keyPattern is Gavel's own parser (utils.read_all_throughputs_json_v2),
// anchored so trailing garbage is an error rather than ignored.
var keyPattern = regexp.MustCompile(`^\('(.*)', (\d+)\)$`)

// ParseJobType parses Gavel's key form, the string of a Python tuple such as
// "('ResNet-18 (batch size 16)', 1)".
func ParseJobType(key string) (JobType, error) {
	m := keyPattern.FindStringSubmatch(key)
	if m == nil {
		return JobType{}, fmt.Errorf("%w: %q is not of the form ('model', scale_factor)", ErrBadKey, key)
	}
	if len(m[2]) > 1 && m[2][0] == '0' && strings.TrimLeft(m[2], "0") != "" {
		return JobType{}, fmt.Errorf("%w: %q: scale factor %s has a leading zero (Gavel writes %q)", ErrBadKey, key, m[2], strings.TrimLeft(m[2], "0"))
	}
	sf, err := strconv.Atoi(m[2])
	if err != nil || sf < 1 {
		return JobType{}, fmt.Errorf("%w: %q: scale factor must be a positive integer", ErrBadKey, key)
	}
	if m[1] == "" {
		return JobType{}, fmt.Errorf("%w: %q: empty model name", ErrBadKey, key)
	}
	return JobType{Model: m[1], ScaleFactor: sf}, nil
}

// Check reports a job type that a table cannot hold: an empty model, a scale factor below 1,
// a model name that is not UTF-8 (JSON would turn its bytes into U+FFFD: another name, and two
// such names one), or a model name (such as one with a newline) whose key ParseJobType would
// not read back as j.
func (j JobType) Check() error {
	switch {
	case j.Model == "":
		return fmt.Errorf("%w: empty model name", ErrBadKey)
	case !utf8.ValidString(j.Model):
		return fmt.Errorf("%w: model name %q is not valid UTF-8 (save the file as UTF-8)", ErrBadKey, j.Model)
	case j.ScaleFactor < 1:
		return fmt.Errorf("%w: %q: scale factor %d, want >= 1", ErrBadKey, j.Model, j.ScaleFactor)
	}
	if back, err := ParseJobType(j.Key()); err != nil || back != j {
		return fmt.Errorf("%w: model name %q: its key %q does not read back as the same job type", ErrBadKey, j.Model, j.Key())
	}
	return nil
}

// Key returns Gavel's key form of j, the inverse of ParseJobType.
func (j JobType) Key() string { return fmt.Sprintf("('%s', %d)", j.Model, j.ScaleFactor) }

// String returns j.Key().
func (j JobType) String() string { return j.Key() }

// Less orders job types by scale factor, then model name.
func (j JobType) Less(k JobType) bool {
	if j.ScaleFactor != k.ScaleFactor {
		return j.ScaleFactor < k.ScaleFactor
	}
	return j.Model < k.Model
}

// compare is Less as a three-way comparison, for slices.SortFunc.
func compareJobTypes(a, b JobType) int {
	switch {
	case a.Less(b):
		return -1
	case b.Less(a):
		return 1
	}
	return 0
}
