package rounds

import "testing"

// BenchmarkPlan10kJobs8kGPUs is one round decision at the scale
// (target: ≤ 100 ms per op), after three rounds of history.
func BenchmarkPlan10kJobs8kGPUs(b *testing.B) {
	w, err := NewSteadyWorld(10000, 8000, 1)
	if err != nil {
		b.Fatal(err)
	}
	for r := 0; r < 3; r++ {
		w.Commit(w.Plan())
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if p := w.Plan(); len(p.Assignments) == 0 {
			b.Fatal("empty plan")
		}
	}
}
