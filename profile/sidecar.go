package profile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gavelkit/gavel/table"
)

// Sharing says how co-located jobs share a GPU.
type Sharing string

const (
	TimeSlicing Sharing = "time-slicing" // plain CUDA time-slicing, the driver's default
	MPS         Sharing = "mps"          // NVIDIA Multi-Process Service
	// Mixed is a sidecar's mode once it holds pairs of both modes (only with ForceSharing).
	Mixed Sharing = "mixed"
)

// ParseSharing reads "time-slicing" (also "timeslicing", "default", "") or "mps".
func ParseSharing(s string) (Sharing, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "time-slicing", "timeslicing", "default":
		return TimeSlicing, nil
	case "mps":
		return MPS, nil
	}
	return "", fmt.Errorf("sharing mode %q: want time-slicing or mps", s)
}

// Kind says what a record measured.
type Kind string

const (
	KindIsolated Kind = "isolated" // a job alone: the table's isolated rate
	KindPair     Kind = "pair"     // two jobs sharing a device
	// KindRefresh is an isolated re-measurement taken next to pairs to normalize them without
	// drift; it does not replace the table's isolated rate.
	KindRefresh Kind = "refresh"
)

// Record is one measurement as kept in the sidecar: everything the Gavel table cannot hold.
type Record struct {
	WorkerType         string `json:"worker_type"`
	Job                string `json:"job"`
	ScaleFactor        int    `json:"scale_factor"`
	Partner            string `json:"partner,omitempty"`
	PartnerScaleFactor int    `json:"partner_scale_factor,omitempty"`
	Kind               Kind   `json:"kind"`
	Status             Status `json:"status"`
	Reason             string `json:"reason,omitempty"`
	// Rate and PartnerRate are the values written to the table. For pairs they are the measured
	// rates scaled by table isolated rate / isolated rate measured close in time; a self-pair's
	// table entry holds their mean in both slots.
	Rate        float64 `json:"rate"`
	PartnerRate float64 `json:"partner_rate,omitempty"`
	// Raw rates as measured, and the recent isolated rates used to normalize a pair.
	RawRate             float64 `json:"raw_rate"`
	RawPartnerRate      float64 `json:"raw_partner_rate,omitempty"`
	IsolatedRate        float64 `json:"isolated_rate,omitempty"`
	PartnerIsolatedRate float64 `json:"partner_isolated_rate,omitempty"`
	// CI half-widths (95%, steps/s) of the raw rates.
	CIHalfWidth        float64 `json:"ci_half_width"`
	PartnerCIHalfWidth float64 `json:"partner_ci_half_width,omitempty"`
	Samples            int     `json:"samples"` // batches of the batch-means estimator
	PartnerSamples     int     `json:"partner_samples,omitempty"`
	Seconds            float64 `json:"seconds"` // measurement window
	WarmupSeconds      float64 `json:"warmup_seconds"`
	TotalSeconds       float64 `json:"total_seconds"`
	PeakMemoryBytes    uint64  `json:"peak_memory_bytes,omitempty"`
	PartnerPeakMemory  uint64  `json:"partner_peak_memory_bytes,omitempty"`
	PrecisionReached   bool    `json:"precision_reached"`
	Sharing            Sharing `json:"sharing"`
	GPUs               []int   `json:"gpus"`
	Finished           string  `json:"finished"` // RFC 3339
	// interrupted marks a measurement cut short by cancellation: it is never written.
	interrupted bool
}

// JobType returns the record's job as a table job type.
func (r *Record) JobType() table.JobType {
	return table.JobType{Model: r.Job, ScaleFactor: r.ScaleFactor}
}

// PartnerType returns the partner as a table job type (zero when isolated).
func (r *Record) PartnerType() table.JobType {
	return table.JobType{Model: r.Partner, ScaleFactor: r.PartnerScaleFactor}
}

// Sidecar holds the measurement records of one table, in the order they were made.
type Sidecar struct {
	Version int `json:"version"`
	// Sharing is the mode of the table's pairs: Mixed when forced runs measured both.
	Sharing      Sharing  `json:"sharing"`
	Measurements []Record `json:"measurements"`
}

// SidecarPath returns the sidecar file of a table: out.json → out.measurements.json, beside
// the file tablePath names through any symlinks, so that a run through a link finds the
// measurements of a run through the file.
func SidecarPath(tablePath string) string {
	return strings.TrimSuffix(tableFile(tablePath), ".json") + ".measurements.json"
}

// tableFile returns the file path names, through symlinks in it and in its directories; for
// a file yet to be made (a dangling link's too: writing through it creates its target), the
// file it will be.
func tableFile(path string) string {
	for range 40 { // as many links as Linux follows
		if p, err := filepath.EvalSymlinks(path); err == nil {
			return p
		}
		to, err := os.Readlink(path)
		if err != nil {
			break // not a link
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
		return filepath.Join(dir, filepath.Base(path))
	}
	return path
}

// LoadSidecar reads a sidecar file; a missing file gives an empty sidecar.
func LoadSidecar(path string) (*Sidecar, error) {
	s, err := loadFile(path, "sidecar", readSidecar)
	if errors.Is(err, os.ErrNotExist) {
		return &Sidecar{Version: 1}, nil
	}
	return s, err
}

// ErrBadSidecar marks a sidecar file whose content cannot be read: bad input, not a failure
// while measuring.
var ErrBadSidecar = errors.New("bad sidecar file")

type badSidecar struct{ error }

func (e badSidecar) Unwrap() error        { return e.error }
func (e badSidecar) Is(target error) bool { return target == ErrBadSidecar }

func readSidecar(r io.Reader, path string) (*Sidecar, error) {
	s, err := decodeSidecar(r, path)
	if err != nil {
		return nil, badSidecar{err}
	}
	return s, nil
}

func decodeSidecar(r io.Reader, path string) (*Sidecar, error) {
	var s Sidecar
	if err := decodeStrict(r, path, &s); err != nil {
		return nil, fmt.Errorf("sidecar %w", err)
	}
	if s.Version != 1 {
		return nil, fmt.Errorf("sidecar %s: version %d, want 1", path, s.Version)
	}
	for i, m := range s.Measurements {
		if m.WorkerType == "" || m.Job == "" || m.ScaleFactor < 1 {
			return nil, fmt.Errorf("sidecar %s: measurement %d: worker_type, job and scale_factor >= 1 are required", path, i)
		}
		switch m.Status {
		case StatusOK, StatusInfeasible, StatusFailed:
		default:
			return nil, fmt.Errorf("sidecar %s: measurement %d: status %q, want ok, infeasible or failed", path, i, m.Status)
		}
		switch m.Kind {
		case KindIsolated, KindRefresh:
		case KindPair:
			if m.Partner == "" || m.PartnerScaleFactor < 1 {
				return nil, fmt.Errorf("sidecar %s: measurement %d: a pair needs partner and partner_scale_factor >= 1", path, i)
			}
		default:
			return nil, fmt.Errorf("sidecar %s: measurement %d: kind %q, want isolated, pair or refresh", path, i, m.Kind)
		}
	}
	return &s, nil
}

// Save writes the sidecar atomically.
func (s *Sidecar) Save(path string) error {
	return table.WriteFileAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(s)
	})
}

// modes returns the sharing modes of the sidecar's pair measurements (isolated runs do not
// share, whatever the mode).
func (s *Sidecar) modes() map[Sharing]int {
	m := map[Sharing]int{}
	for _, r := range s.Measurements {
		if r.Partner != "" && r.Status != StatusFailed {
			m[r.Sharing]++
		}
	}
	return m
}

// add appends rec and keeps Sharing the mode of the pairs held.
func (s *Sidecar) add(rec Record) {
	s.Measurements = append(s.Measurements, rec)
	if modes := s.modes(); len(modes) > 1 {
		s.Sharing = Mixed
	} else if len(modes) == 1 {
		s.Sharing = sortedKeys(modes)[0]
	}
}

// recorded reports whether s holds a finished (ok or infeasible) measurement of task t.
func (s *Sidecar) recorded(t Task) bool {
	for _, r := range s.Measurements {
		if r.Status == StatusFailed || r.WorkerType != t.WorkerType {
			continue
		}
		a, b := r.JobType(), r.PartnerType()
		if a == t.Job && b == t.Partner || t.IsPair() && a == t.Partner && b == t.Job {
			return true
		}
	}
	return false
}

// peakMemory returns the largest peak memory recorded for j running alone on w (0 if none).
func (s *Sidecar) peakMemory(w string, j table.JobType) uint64 {
	var peak uint64
	for _, r := range s.Measurements {
		if r.WorkerType == w && r.Partner == "" && r.Status == StatusOK && r.JobType() == j {
			peak = max(peak, r.PeakMemoryBytes)
		}
	}
	return peak
}

func now() string { return time.Now().UTC().Format(time.RFC3339) }
