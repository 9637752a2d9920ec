package completion

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// ErrNoObservations is returned when a fit has nothing to learn from.
var ErrNoObservations = errors.New("no observed entries")

// ErrBadSettings is wrapped by the error of a fit given settings it cannot use.
var ErrBadSettings = errors.New("invalid settings")

// Settings configures [Fit]. The zero value of every field selects its default.
type Settings struct {
	Rank    int     // latent dimension; 0 means 3
	Lambda  float64 // L2 regularization on factors and biases; 0 means 0.1, negative means none
	NoBias  bool    // fit A ≈ U·Vᵀ only, without the mean and row/column biases (Gavel's pmf_solve)
	Seed    uint64  // seed for the random initial factors
	Tol     float64 // stop when the relative change of the objective is below Tol; 0 means 1e-6
	MaxIter int     // iteration cap; 0 means 200
	// ChangeTol, when positive, replaces Tol by Gavel's pmf_solve rule: stop when
	// ‖X − X_prev‖_F / (rows·cols) < ChangeTol, X being the reconstructed matrix.
	ChangeTol float64
	// InitScale is the standard deviation of the initial factors; 0 means 0.1.
	// Gavel's pmf_solve starts from standard normal factors (InitScale 1).
	InitScale float64
}

// validate rejects settings Fit cannot use: a negative rank (it sizes the factors: a panic), a
// negative iteration cap (no iteration would run, leaving an unfitted model returned as if
// fitted), and a NaN or infinite Lambda or InitScale (every ridge solve fails, or the factors
// start as NaN, again leaving no fit). A negative Tol is allowed: it is never met, so the fit
// runs to MaxIter, which tests use. The error names every bad field and wraps ErrBadSettings.
func (s Settings) validate() error {
	var bad []string
	if s.Rank < 0 {
		bad = append(bad, fmt.Sprintf("Rank %d is negative (0 selects 3)", s.Rank))
	}
	bad = checkMaxIter(bad, s.MaxIter, 200)
	bad = checkFinite(bad, "Lambda", s.Lambda)
	bad = checkFinite(bad, "InitScale", s.InitScale)
	return settingsError("", bad)
}

// checkMaxIter appends to bad a complaint about a negative iteration cap, whose default is def.
func checkMaxIter(bad []string, maxIter, def int) []string {
	if maxIter < 0 {
		bad = append(bad, fmt.Sprintf("MaxIter %d is negative (0 selects %d)", maxIter, def))
	}
	return bad
}

// finite reports whether v is neither NaN nor infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// checkFinite appends to bad a complaint about field when its value v is NaN or infinite.
func checkFinite(bad []string, field string, v float64) []string {
	if !finite(v) {
		bad = append(bad, fmt.Sprintf("%s %v is not finite", field, v))
	}
	return bad
}

// field is a settings field's name and value, for checkAllFinite.
type field struct {
	name string
	v    float64
}

// checkAllFinite appends to bad a complaint about each of fields that is NaN or infinite.
func checkAllFinite(bad []string, fields ...field) []string {
	for _, f := range fields {
		bad = checkFinite(bad, f.name, f.v)
	}
	return bad
}

// settingsError returns nil when bad is empty, and otherwise an error wrapping ErrBadSettings
// that lists every complaint, so that one call tells a caller all that is wrong; what names the
// fit ("pair fit: "), or is empty for Fit.
func settingsError(what string, bad []string) error {
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("completion: %s%w: %s", what, ErrBadSettings, strings.Join(bad, "; "))
}

// withDefaults replaces zero (and negative, where documented) fields by their values.
func (s Settings) withDefaults() Settings {
	if s.Rank == 0 {
		s.Rank = 3
	}
	if s.Lambda == 0 {
		s.Lambda = 0.1
	} else if s.Lambda < 0 {
		s.Lambda = 0
	}
	if s.Tol == 0 {
		s.Tol = 1e-6
	}
	if s.MaxIter == 0 {
		s.MaxIter = 200
	}
	if s.InitScale == 0 {
		s.InitScale = 0.1
	}
	return s
}

// Status tells how a fit ended.
type Status int

// How a fit ended.
const (
	Converged    Status = iota // the objective stopped changing (relative change below Tol)
	IterationCap               // MaxIter iterations ran first
)

// String returns "converged" or "iteration cap reached".
func (s Status) String() string {
	switch s {
	case Converged:
		return "converged"
	case IterationCap:
		return "iteration cap reached"
	}
	return fmt.Sprintf("Status(%d)", int(s))
}

// Model is a fitted biased low-rank model: At(i, j) = Mean + RowBias[i] + ColBias[j] + U[i]·V[j].
type Model struct {
	Mean             float64
	RowBias, ColBias []float64
	U, V             *mat.Dense // rows × rank, cols × rank
	Iterations       int
	Status           Status
	Objective        float64 // final regularized squared error
}

// At returns the model's value for entry (i, j).
func (m *Model) At(i, j int) float64 {
	v := m.Mean + m.RowBias[i] + m.ColBias[j]
	_, k := m.U.Dims()
	for d := 0; d < k; d++ {
		v += m.U.At(i, d) * m.V.At(j, d)
	}
	return v
}

// Dense returns the full reconstructed matrix.
func (m *Model) Dense() *mat.Dense {
	r, _ := m.U.Dims()
	c, _ := m.V.Dims()
	out := mat.NewDense(r, c, nil)
	out.Mul(m.U, m.V.T())
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out.Set(i, j, out.At(i, j)+m.Mean+m.RowBias[i]+m.ColBias[j])
		}
	}
	return out
}

// Fit fits a [Model] to the entries of a where mask is nonzero, by alternating least squares:
// with the column factors fixed every row's factor and bias is a small ridge regression, and
// vice versa. It checks ctx before every iteration and, once ctx is done, returns no model and
// an error wrapping ctx.Err(). Settings it cannot use are an error wrapping [ErrBadSettings].
// It panics if a and mask differ in shape.
func Fit(ctx context.Context, a, mask mat.Matrix, s Settings) (*Model, error) {
	r, c := a.Dims()
	if mr, mc := mask.Dims(); mr != r || mc != c {
		panic(fmt.Sprintf("completion: mask is %d×%d, matrix is %d×%d", mr, mc, r, c))
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	s = s.withDefaults()
	rows, cols, sum, n, err := observed(a, mask)
	if err != nil {
		return nil, err
	}
	m := &Model{RowBias: make([]float64, r), ColBias: make([]float64, c)}
	if !s.NoBias {
		m.Mean = sum / float64(n)
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x9e3779b97f4a7c15))
	m.U = randomDense(rng, r, s.Rank, s.InitScale)
	m.V = randomDense(rng, c, s.Rank, s.InitScale)

	prev := math.Inf(1)
	var prevX *mat.Dense
	if s.ChangeTol > 0 {
		prevX = m.Dense()
	}
	m.Status = IterationCap
	for it := 1; it <= s.MaxIter; it++ {
		if err := stopped(ctx, "fit", it); err != nil {
			return nil, err
		}
		m.Iterations = it
		// Rows: target a_ij − μ − c_j, features v_j (and 1 for the row bias).
		solveSide(a, false, rows, m.U, m.V, m.RowBias, m.ColBias, m.Mean, s)
		solveSide(a, true, cols, m.V, m.U, m.ColBias, m.RowBias, m.Mean, s)
		obj := objective(a, rows, m, s.Lambda)
		m.Objective = obj
		if s.ChangeTol > 0 {
			x := m.Dense()
			var diff mat.Dense
			diff.Sub(x, prevX)
			if mat.Norm(&diff, 2)/float64(r*c) < s.ChangeTol {
				m.Status = Converged
				break
			}
			prevX = x
			continue
		}
		if math.Abs(prev-obj) <= s.Tol*math.Max(obj, 1e-12) {
			m.Status = Converged
			break
		}
		prev = obj
	}
	return m, nil
}

// stopped returns nil while ctx is live, and once it is done an error wrapping ctx.Err() that
// says which fit stopped before which iteration. Fits call it once per outer iteration: often
// enough to stop promptly, rarely enough to cost nothing next to the iteration.
func stopped(ctx context.Context, what string, it int) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("completion: %s stopped before iteration %d: %w", what, it, err)
	}
	return nil
}

// observed lists the observed columns of each row and rows of each column of a (mask nonzero),
// and their sum and count; an observed NaN or infinity is an error, nothing observed
// ErrNoObservations.
func observed(a, mask mat.Matrix) (rows, cols [][]int, sum float64, n int, err error) {
	r, c := a.Dims()
	rows = make([][]int, r)
	cols = make([][]int, c)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if mask.At(i, j) != 0 {
				v := a.At(i, j)
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, nil, 0, 0, fmt.Errorf("completion: entry (%d, %d) is %v", i, j, v)
				}
				rows[i] = append(rows[i], j)
				cols[j] = append(cols[j], i)
				sum += v
				n++
			}
		}
	}
	if n == 0 {
		return nil, nil, 0, 0, ErrNoObservations
	}
	return rows, cols, sum, n, nil
}

// randomDense returns an r×c matrix of normal entries with standard deviation scale.
func randomDense(rng *rand.Rand, r, c int, scale float64) *mat.Dense {
	d := make([]float64, r*c)
	for i := range d {
		d[i] = rng.NormFloat64() * scale
	}
	return mat.NewDense(r, c, d)
}

// solveSide updates the factors (and biases) of one side. obs[i] lists the observed indices on
// the other side for entry i of this side; transposed says whether this side is the columns.
func solveSide(a mat.Matrix, transposed bool, obs [][]int, self, other *mat.Dense,
	selfBias, otherBias []float64, mean float64, s Settings) {
	k := s.Rank
	p := k
	if !s.NoBias {
		p = k + 1
	}
	ata := mat.NewSymDense(p, nil)
	atb := mat.NewVecDense(p, nil)
	x := mat.NewVecDense(p, nil)
	f := make([]float64, p)
	for i, js := range obs {
		if len(js) == 0 {
			// Nothing observed: fall back to the prior (zero factors and bias).
			for d := 0; d < k; d++ {
				self.Set(i, d, 0)
			}
			selfBias[i] = 0
			continue
		}
		ata.Zero()
		atb.Zero()
		for _, j := range js {
			var v float64
			if transposed {
				v = a.At(j, i)
			} else {
				v = a.At(i, j)
			}
			t := v - mean - otherBias[j]
			for d := 0; d < k; d++ {
				f[d] = other.At(j, d)
			}
			if p > k {
				f[k] = 1
			}
			for u := 0; u < p; u++ {
				atb.SetVec(u, atb.AtVec(u)+f[u]*t)
				for w := u; w < p; w++ {
					ata.SetSym(u, w, ata.At(u, w)+f[u]*f[w])
				}
			}
		}
		for u := 0; u < p; u++ {
			ata.SetSym(u, u, ata.At(u, u)+s.Lambda+1e-12)
		}
		var ch mat.Cholesky
		if ok := ch.Factorize(ata); !ok {
			continue // keep the previous values; cannot happen with Lambda > 0
		}
		if err := ch.SolveVecTo(x, atb); err != nil {
			continue
		}
		for d := 0; d < k; d++ {
			self.Set(i, d, x.AtVec(d))
		}
		if p > k {
			selfBias[i] = x.AtVec(k)
		}
	}
}

// objective is the regularized squared error that Fit's iterations decrease.
func objective(a mat.Matrix, rows [][]int, m *Model, lambda float64) float64 {
	obj := 0.0
	for i, js := range rows {
		for _, j := range js {
			e := a.At(i, j) - m.At(i, j)
			obj += e * e
		}
	}
	ss := 0.0
	for _, d := range [...]*mat.Dense{m.U, m.V} {
		r, c := d.Dims()
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				ss += d.At(i, j) * d.At(i, j)
			}
		}
	}
	for _, b := range m.RowBias {
		ss += b * b
	}
	for _, b := range m.ColBias {
		ss += b * b
	}
	return obj + lambda*ss
}
