package table_test

import (
	"fmt"

	"github.com/gavelkit/gavel/table"
)

func Example() {
	t := table.Default()
	a := table.JobType{Model: "ResNet-50 (batch size 32)", ScaleFactor: 1}
	b := table.JobType{Model: "A3C", ScaleFactor: 1}
	iso, _ := t.Isolated("v100", a)
	na, nb, state := t.Normalized("v100", a, b)
	fmt.Printf("isolated %.3f steps/s; together %s: %.2f + %.2f of solo speed\n", iso, state, na, nb)
	// Output: isolated 7.787 steps/s; together measured: 0.48 + 0.20 of solo speed
}
