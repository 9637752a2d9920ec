package rounds

import "testing"

// PD²'s b-bits and group deadlines for a task of weight 8/11, worked out by
// hand from its windows [0,2) [1,3) [2,5) [4,6) [5,7) [6,9) [7,10) [9,11):
// a group ends where a window of length 3 starts to overlap (t+1 = its
// deadline) or at a window with b-bit 0.
func TestPD2EightElevenths(t *testing.T) {
	want := []struct{ bbit, group float64 }{{1, 4}, {1, 4}, {1, 8}, {1, 8}, {1, 8}, {1, 11}, {1, 11}, {0, 11}}
	for i, w := range want {
		b, g := pd2(float64(i), 0, 8.0/11)
		if b != w.bbit || g != w.group {
			t.Errorf("subtask %d: b-bit %v, group deadline %v; want %v, %v", i+1, b, g, w.bbit, w.group)
		}
		// Three rounds into its virtual time, the group deadline is 3
		// rounds closer.
		if _, g3 := pd2(float64(i), 3, 8.0/11); g3 != w.group-3 {
			t.Errorf("subtask %d at tau 3: group deadline %v, want %v", i+1, g3, w.group-3)
		}
	}
	if b, g := pd2(1, 0, 0.3); b != 1 || g != 0 { // subtask 2, window [3,7)
		t.Errorf("light task: b-bit %v, group %v; want 1, 0", b, g)
	}
	if b, _ := pd2(2, 0, 0.5); b != 0 {
		t.Errorf("weight 1/2, subtask 3 (window [4,6)): b-bit %v, want 0", b)
	}
}
