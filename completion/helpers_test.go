package completion

import "gonum.org/v1/gonum/mat"

func denseCol(x []float64) *mat.Dense { return mat.NewDense(len(x), 1, append([]float64(nil), x...)) }
